"""A workspace plugin for the editor tests: providers that act on what the conversation says.

`scripted` answers from the last message, so any sequence of turns works:
- after a tool result it says "edited." (or what failed);
- a prompt containing "echo" is said back whole (what the server made of the prompt);
- a prompt starting "note" says its first line back (not the file context the server adds);
- "recall" says the first lines of the earlier prompts it was sent ("earlier: note one | note two");
- "ask me" asks the person (the editor's `elelem/input`) and greets the answer;
- "wait" sleeps (cancellably) for a minute;
- "create" writes a new file `b.txt`;
- "after w" edits the two lines "w" and "x" of `a.txt`, adding "x2" after them;
- anything else: thinks "planning", says "I will edit." and edits `a.txt` from x to y.
`second` only says "second here." (for switching providers).
"""

import asyncio
import json

import elelem_lsp
from elelem_lsp.agent.workspace import current_workspace


class Scripted:
    async def fetch(self, messages, tools, emit):
        last = messages[-1]
        if last["role"] == "tool":
            result = json.loads(last["content"])
            emit({"type": "saying", "text": "edited." if result.get("ok") else f"failed: {result.get('error')}"})
            return
        prompt = last["content"]
        if "echo" in prompt:
            emit({"type": "saying", "text": prompt})
        elif prompt.startswith("note"):
            emit({"type": "saying", "text": prompt.splitlines()[0]})
        elif "recall" in prompt:
            earlier = [m["content"].splitlines()[0] for m in messages[:-1] if m["role"] == "user"]
            emit({"type": "saying", "text": "earlier: " + " | ".join(earlier)})
        elif "ask me" in prompt:
            answer = await current_workspace.get().ask_user("Your name?")
            emit({"type": "saying", "text": f"hello {answer}"})
        elif "create" in prompt:
            emit({"type": "doing", "id": "w1", "name": "write", "arguments": {"path": "b.txt", "content": "new\n"}})
        elif "after w" in prompt:
            emit({"type": "doing", "id": "e2", "name": "edit",
                  "arguments": {"path": "a.txt", "old": "w\nx", "new": "w\nx\nx2"}})
        elif "wait" in prompt:
            emit({"type": "saying", "text": "waiting"})
            await asyncio.sleep(60)
        else:
            emit({"type": "thinking", "text": "planning"})
            emit({"type": "saying", "text": "I will edit."})
            emit({"type": "doing", "id": "c1", "name": "edit", "arguments": {"path": "a.txt", "old": "x", "new": "y"}})


class Second:
    def fetch(self, messages, tools, emit):
        emit({"type": "saying", "text": "second here."})


@elelem_lsp.configure
def setup(config):
    config.provider("scripted", lambda **_: Scripted())
    config.provider("second", lambda **_: Second())
