"""scripted: a deterministic provider for the VS Code end-to-end test.

It streams like a model (thinking, then text in small pieces, then a tool call) so the test can
watch the transcript fill in, and it changes files only through the edit tool, so every change
reaches VS Code as a workspace/applyEdit:
- a "Fix the problem..." prompt (the server's elelem.fix) adds the missing comma to config.json;
- "Tell me slowly..." keeps talking for a minute, for the cancel test;
- "Run ..." asks to execute `echo elelem-ran`, for the permission prompt;
- "Show code..." answers with a Python code block, for Copy / Insert at Cursor;
- "Create notes..." writes a new file, notes.txt, for undoing a turn that created a file;
- "Break the types..." writes a type error into app.ts, then asks for the definition of `add`
  there, and says what the check after the edit and the definition gave it;
- "Plan the notes..." sets out a plan, writes plan.txt, ticks the plan off and says so, counting
  300 tokens in and 20 out on each of its four fetches, for the plan, usage and rewind rows;
- any other prompt changes the greeting in hello.txt.
"""

import asyncio
import json

import elelem_lsp

PAUSE = 0.15


async def stream(emit, kind, text, pieces=4):
    size = max(1, len(text) // pieces)
    for start in range(0, len(text), size):
        emit({"type": kind, "text": text[start : start + size]})
        await asyncio.sleep(PAUSE)


PLAN = ["Write plan.txt", "Say it is written"]


def plan(*statuses):
    return {"type": "doing", "id": f"plan-{len(statuses)}-{statuses[-1]}", "name": "plan",
            "arguments": {"entries": [{"content": step, "status": status} for step, status in zip(PLAN, statuses)]}}


async def planned_turn(messages, emit):
    """The "Plan the notes..." turn, one step per fetch."""
    emit({"type": "usage", "inputTokens": 300, "outputTokens": 20})
    last = messages[-1]
    outcome = json.loads(last["content"]) if last["role"] == "tool" else {}
    if last["role"] == "user":
        emit(plan("in_progress", "pending"))
    elif outcome.get("path") == "plan.txt":
        emit(plan("completed", "completed"))
    elif all(entry["status"] == "completed" for entry in outcome["plan"]):
        await stream(emit, "saying", "plan.txt is written, and the plan is done.")
    else:
        emit({"type": "doing", "id": "plan-write", "name": "write", "arguments": {"path": "plan.txt", "content": "The plan\n"}})


class ScriptedProvider:
    async def fetch(self, messages, tools, emit):
        last = messages[-1]
        asked = next(message["content"] for message in reversed(messages) if message["role"] == "user")
        if isinstance(asked, str) and asked.startswith("Plan the notes"):
            await planned_turn(messages, emit)
            return
        if last["role"] == "tool":
            outcome = json.loads(last["content"])
            if "checked" in outcome and outcome.get("path") == "app.ts":
                # after the check TypeScript has loaded the project: its definitions are whole
                emit({"type": "doing", "id": "break-2", "name": "definition", "arguments": {"path": "app.ts", "symbol": "add"}})
                return
            if "definitions" in outcome:
                checked = json.loads(messages[-3]["content"])["checked"]
                await stream(emit, "saying", f"Definition: {outcome['definitions'][0]}. Check: {checked}")
                return
            if not outcome.get("ok"):
                await stream(emit, "saying", f"That failed: {outcome.get('error')}")
            elif "output" in outcome:
                await stream(emit, "saying", f"The command printed `{outcome['output'].strip()}`.")
            else:
                await stream(emit, "saying", f"Done: `{outcome.get('path')}` is updated.")
            return
        prompt = last["content"]
        if prompt.startswith("Fix the problem"):
            await stream(emit, "thinking", "The JSON object is missing a comma after its first member.")
            await stream(emit, "saying", "Adding the **missing comma** in `config.json`.")
            emit({"type": "doing", "id": "fix-1", "name": "edit",
                  "arguments": {"path": "config.json", "old": '"name": "demo"', "new": '"name": "demo",'}})
        elif prompt.startswith("Run "):
            await stream(emit, "saying", "Running the greeting script.")
            emit({"type": "doing", "id": "run-1", "name": "execute", "arguments": {"command": "echo elelem-ran"}})
        elif prompt.startswith("Show code"):
            await stream(emit, "saying", "Here is a greeting:\n\n```python\ndef greet(name):\n    return f\"Hello, {name}!\"\n```\n")
        elif prompt.startswith("Create notes"):
            await stream(emit, "saying", "Writing the notes.")
            emit({"type": "doing", "id": "notes-1", "name": "write",
                  "arguments": {"path": "notes.txt", "content": "Notes from elelem\nSecond line\n"}})
        elif prompt.startswith("Break the types"):
            emit({"type": "doing", "id": "break-1", "name": "edit",
                  "arguments": {"path": "app.ts", "old": "total = add(1, 2)", "new": "total: number = 'three'"}})
        elif prompt.startswith("Tell me slowly"):
            for count in range(300):
                emit({"type": "saying", "text": f"word{count} "})
                await asyncio.sleep(0.2)
        else:
            await stream(emit, "thinking", "hello.txt greets the world; the request wants it to greet elelem.")
            await stream(emit, "saying", "I'll change the greeting in **hello.txt**.")
            emit({"type": "doing", "id": "greet-1", "name": "edit",
                  "arguments": {"path": "hello.txt", "old": "Hello, world", "new": "Hello, elelem"}})


@elelem_lsp.configure
def setup(config):
    config.provider("scripted", lambda model=None, **_: ScriptedProvider())
