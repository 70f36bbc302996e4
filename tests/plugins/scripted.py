"""A provider that plays a script, for tests: `.agents/script.json` in the workspace.

The script is a list of fetches; each fetch is a list of events emitted in order.
An event {"type": "sleep", "seconds": S} waits (cancellably) before the next one;
{"type": "say_tool_result"} says the content of the last message (the tool result it was handed);
{"type": "record"} appends the messages and tools it was handed, as one JSON line, to `.agents/fetches.jsonl`.
{"type": "wait_for", "file": F, "seconds": S} waits until `.agents/F` exists (at most S seconds; on a worker
thread, a plain fetch cannot be cancelled while it waits), and the fetch's end is then noted in `.agents/F.ended`:
`returned`, or the name of what it raised (so a test can see a fetch left running after its turn end).
When the script runs out, the provider says "done."; a changed script starts again. SCRIPTED_MODE=thread makes
fetch a plain function (run on a worker thread by the agent). "scripted-images" is the same provider declaring
that it takes images (and so is "scripted" with SCRIPTED_IMAGES=1).
"""

import asyncio
import json
import os
import time

import elelem_lsp
from elelem_lsp.agent.workspace import current_workspace


class ScriptedProvider:
    images = False  # whether it takes images; SCRIPTED_IMAGES=1 makes it say so

    def __init__(self, model=None):
        self.model = model
        self.images = type(self).images or os.environ.get("SCRIPTED_IMAGES") == "1"
        self.fetches = 0
        self.script = None

    def next_fetch(self):
        path = current_workspace.get().root / ".agents" / "script.json"
        script = json.loads(path.read_text()) if path.exists() else []
        if script != self.script:
            self.script, self.fetches = script, 0
        step = script[self.fetches] if self.fetches < len(script) else [{"type": "saying", "text": "done."}]
        self.fetches += 1
        return step

    async def fetch(self, messages, tools, emit):
        with EndNote() as note:
            for event in self.next_fetch():
                if event["type"] == "sleep":
                    await asyncio.sleep(event["seconds"])
                elif event["type"] == "wait_for":
                    note.file, deadline = event["file"], time.monotonic() + event["seconds"]
                    while not arrived(event) and time.monotonic() < deadline:
                        await asyncio.sleep(0.02)
                elif event["type"] == "say_tool_result":
                    emit({"type": "saying", "text": messages[-1]["content"]})
                elif event["type"] == "record":
                    record(messages, tools)
                elif event["type"] == "raise":
                    raise RuntimeError(event["message"])
                else:
                    emit(dict(event))


def arrived(event):
    return (current_workspace.get().root / ".agents" / event["file"]).exists()


class EndNote:
    """Notes how a fetch ended in `.agents/<file>.ended`, once a ``wait_for`` event named the file."""

    def __init__(self):
        self.file = None
        self.folder = current_workspace.get().root / ".agents"

    def __enter__(self):
        return self

    def __exit__(self, kind, error, traceback):
        if self.file is not None:
            (self.folder / f"{self.file}.ended").write_text("returned" if kind is None else kind.__name__)


def record(messages, tools):
    path = current_workspace.get().root / ".agents" / "fetches.jsonl"
    with path.open("a", encoding="utf-8") as file:
        file.write(json.dumps({"messages": messages, "tools": tools}) + "\n")


class SeeingScriptedProvider(ScriptedProvider):
    images = True


class ThreadedScriptedProvider(ScriptedProvider):
    def fetch(self, messages, tools, emit):
        with EndNote() as note:
            for event in self.next_fetch():
                if event["type"] == "sleep":
                    time.sleep(event["seconds"])
                elif event["type"] == "wait_for":
                    note.file, deadline = event["file"], time.monotonic() + event["seconds"]
                    while not arrived(event) and time.monotonic() < deadline:
                        time.sleep(0.02)
                elif event["type"] == "raise":
                    raise RuntimeError(event["message"])
                else:
                    emit(dict(event))


@elelem_lsp.configure
def setup(config):
    kind = ThreadedScriptedProvider if os.environ.get("SCRIPTED_MODE") == "thread" else ScriptedProvider
    config.provider("scripted", lambda model=None, **_: kind(model))
    config.provider("scripted-images", lambda model=None, **_: SeeingScriptedProvider(model))
