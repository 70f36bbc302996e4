"""The turn loop: sync and async providers, failures, history, the step limit, cancellation."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest

from elelem_lsp.agent.session import Session
from elelem_lsp.agent.workspace import Workspace


class Script:
    """Plays fetches in order and records the messages each fetch saw."""

    def __init__(self, *fetches):
        self.fetches = list(fetches)
        self.seen = []

    def fetch(self, messages, tools, emit):
        self.seen.append([dict(m) for m in messages])
        for event in self.fetches.pop(0) if self.fetches else [{"type": "saying", "text": "end"}]:
            emit(event)


class AsyncScript(Script):
    async def fetch(self, messages, tools, emit):
        await asyncio.sleep(0)
        Script.fetch(self, messages, tools, emit)


@pytest.fixture
def ws(tmp_path):
    (tmp_path / "README.md").write_text("# readme\n")
    return Workspace(tmp_path)


@pytest.mark.parametrize("kind", [Script, AsyncScript])
async def test_tool_calls_run_in_order_and_history_keeps_prompt_and_reply(ws, kind):
    provider = kind(
        [{"type": "saying", "text": "looking"},
         {"type": "doing", "id": "1", "name": "read", "arguments": {"path": "README.md"}},
         {"type": "doing", "id": "2", "name": "read", "arguments": {"path": "missing"}}],
        [{"type": "saying", "text": "it says "}, {"type": "saying", "text": "readme"}],
    )
    session = Session(provider, ws)
    seen = []
    result = await session.turn("what?", seen.append)

    assert (result.reply, result.steps, result.error) == ("it says readme", 2, None)
    second = provider.seen[1]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "tool", "tool"]
    assert second[2]["tool_calls"] == [
        {"id": "1", "name": "read", "arguments": {"path": "README.md"}},
        {"id": "2", "name": "read", "arguments": {"path": "missing"}},
    ]
    assert json.loads(second[3]["content"]) == {
        "path": "README.md",
        "total_lines": 1,
        "lines": [1, 1],
        "content": "1\t# readme",
        "ok": True,
    }
    assert second[4]["tool_call_id"] == "2" and json.loads(second[4]["content"])["ok"] is False
    assert session.history == [{"role": "user", "content": "what?"}, {"role": "assistant", "content": "it says readme"}]
    assert [e["type"] for e in seen] == ["saying", "doing", "doing", "result", "result", "saying", "saying"]


async def test_system_prompt_names_workspace_client_and_agents_md(ws):
    (ws.root / "AGENTS.md").write_text("Always answer in haiku.")
    provider = Script([{"type": "saying", "text": "ok"}])
    await Session(provider, ws).turn("hi")
    system = provider.seen[0][0]
    assert system["role"] == "system"
    assert str(ws.root) in system["content"] and "terminal" in system["content"]
    assert "Always answer in haiku." in system["content"]


async def test_raising_provider_ends_the_turn_and_the_next_turn_works(ws):
    class Flaky:
        calls = 0

        def fetch(self, messages, tools, emit):
            self.calls += 1
            if self.calls == 1:
                raise ConnectionError("connection refused")
            emit({"type": "saying", "text": "fine"})

    session = Session(Flaky(), ws)
    failed = await session.turn("one")
    assert failed.reply == "Error: connection refused" and failed.error == "connection refused"
    ok = await session.turn("two")
    assert ok.reply == "fine"
    assert [m["content"] for m in session.history] == ["one", "Error: connection refused", "two", "fine"]


@pytest.mark.parametrize(
    "arguments, problem",
    [
        (["path"], "expected a JSON object of named arguments, got an array"),
        (None, "expected a JSON object of named arguments, got null"),
        ({1: "x"}, "argument names must be strings"),
        ('{"path": ', "not valid JSON (Expecting value at character 9)"),
    ],
)
async def test_malformed_doing_arguments_are_an_ok_false_result_and_the_turn_goes_on(ws, arguments, problem):
    provider = Script([{"type": "doing", "id": "1", "name": "read", "arguments": arguments}])
    result = await Session(provider, ws).turn("go")
    assert (result.reply, result.error, result.steps) == ("end", None, 2)
    [answer] = [m for m in provider.seen[1] if m["role"] == "tool"]
    assert json.loads(answer["content"]) == {"ok": False, "error": f"invalid arguments for read: {problem}"}


async def test_doing_arguments_as_json_text_are_parsed(ws):
    provider = Script([{"type": "doing", "id": "1", "name": "read", "arguments": '{"path": "README.md"}'}])
    await Session(provider, ws).turn("go")
    assert provider.seen[1][2]["tool_calls"] == [{"id": "1", "name": "read", "arguments": {"path": "README.md"}}]
    assert json.loads(provider.seen[1][3]["content"])["content"] == "1\t# readme"


async def test_unknown_events_and_return_values_are_ignored(ws):
    class Odd:
        def fetch(self, messages, tools, emit):
            emit({"type": "usage", "tokens": 5})
            emit({"type": "saying", "text": "hi"})
            return "ignored"

    assert (await Session(Odd(), ws).turn("x")).reply == "hi"


async def test_tool_failure_is_a_result_the_model_reads(ws):
    provider = Script([{"type": "doing", "id": "1", "name": "nosuch", "arguments": {}}])
    result = await Session(provider, ws).turn("x")
    assert result.reply == "end"
    assert json.loads(provider.seen[1][-1]["content"])["error"].startswith('unknown tool: "nosuch"')


async def test_step_limit_ends_a_runaway_loop(ws):
    class Loop:
        def fetch(self, messages, tools, emit):
            emit({"type": "doing", "id": "x", "name": "list", "arguments": {}})

    result = await Session(Loop(), ws, max_steps=3).turn("forever")
    assert result.steps == 3 and "stopped after 3 steps" in result.reply


async def test_cancelling_an_async_fetch_keeps_the_prompt_and_partial_reply(ws):
    started = asyncio.Event()

    class Slow:
        async def fetch(self, messages, tools, emit):
            emit({"type": "saying", "text": "partial"})
            started.set()
            await asyncio.sleep(30)

    session = Session(Slow(), ws)
    task = asyncio.create_task(session.turn("long"))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # kept, and marked so the model knows it was cut off (issue 13)
    assert session.history == [
        {"role": "user", "content": "long"},
        {"role": "assistant", "content": "partial\n\n[cancelled by the user before the reply was finished]"},
    ]
    assert session.cancelled_turn.cancelled and session.cancelled_turn.reply == "partial"


async def test_cancelled_threaded_fetch_is_abandoned_and_its_later_events_dropped(ws):
    started, release, stopped = threading.Event(), threading.Event(), threading.Event()

    class Blocking:
        def fetch(self, messages, tools, emit):
            emit({"type": "saying", "text": "before"})
            started.set()
            release.wait(5)
            try:
                emit({"type": "saying", "text": "after"})
            finally:
                stopped.set()

    seen = []
    session = Session(Blocking(), ws)
    task = asyncio.create_task(session.turn("x", seen.append))
    await asyncio.to_thread(started.wait, 5)  # "before" was handed to the loop ahead of this: it is seen
    assert [e["text"] for e in seen] == ["before"]
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    release.set()
    # A late emit would hand its drain to the loop before the thread's end reaches it: it has run by now.
    assert await asyncio.to_thread(stopped.wait, 5)
    assert [e["text"] for e in seen] == ["before"]


async def test_threaded_fetch_does_not_block_the_loop(ws):
    fetching, loop_ran = threading.Event(), threading.Event()

    class Waiting:
        """A blocking fetch that waits for the loop to do something while it runs."""

        def fetch(self, messages, tools, emit):
            fetching.set()
            emit({"type": "saying", "text": "the loop ran" if loop_ran.wait(5) else "the loop was blocked"})

    async def alongside():
        await asyncio.to_thread(fetching.wait, 5)
        loop_ran.set()  # only reached if the loop turns while the fetch blocks

    other = asyncio.create_task(alongside())
    result = await Session(Waiting(), ws).turn("x")
    await other
    assert result.reply == "the loop ran"
