"""The ACP face's plain pieces: titles and kinds of tool calls, prompts' attachments, slash
commands, and the outbox that keeps updates in order while it coalesces text."""

from __future__ import annotations

import asyncio
from pathlib import Path

from elelem_lsp.acp.prompts import attached, file_path
from elelem_lsp.acp.slash_commands import slash_command
from elelem_lsp.acp.updates import Outbox, ToolCalls, locations_of, replayed
from scaffold import wait_until


def test_locations_only_for_paths_that_can_be_paths(tmp_path: Path):
    assert [l.path for l in locations_of("edit", {"path": "a.py"}, tmp_path)] == [str(tmp_path / "a.py")]
    assert locations_of("execute", {"command": "ls", "path": "x"}, tmp_path) is None
    assert locations_of("read", {"path": "bad\0path"}, tmp_path) is None
    assert locations_of("read", {"path": ""}, tmp_path) is None


def test_attachments_are_fenced_past_any_backticks_inside():
    assert attached("a.md", "x\n") == "a.md:\n```\nx\n```"
    assert attached("b.md", "````inside") == "b.md:\n`````\n````inside\n`````"


def test_only_local_file_uris_are_paths():
    assert file_path("file:///tmp/caf%C3%A9.txt") == Path("/tmp/café.txt")
    assert file_path("file://localhost/etc/hosts") == Path("/etc/hosts")
    assert file_path("file://other-host/etc/hosts") is None
    assert file_path("https://example.com/x") is None


def test_slash_commands_are_only_the_known_ones():
    assert slash_command("/provider openai  gpt-4o") == ("provider", "openai  gpt-4o")
    assert slash_command("/tools") == ("tools", "")
    assert slash_command("/etc/hosts is a file") is None  # a prompt that starts with a path
    assert slash_command("please /reset") is None
    assert slash_command("/reset") == ("reset", "")


def test_a_replayed_turn_shows_prompt_calls_and_reply(tmp_path: Path):
    transcript = {"entries": [
        {"kind": "turn", "prompt": "hi", "reply": "", "cancelled": True, "tools": [
            {"id": "c1", "name": "execute", "arguments": {"command": "ls"}, "ok": False, "summary": None, "error": "denied"}]},
        {"kind": "compaction", "turns": 4, "summary": "...", "at": "2026-01-01T00:00:00Z",
         "text": "4 turns compacted into a summary"},  # as the host serves it (host/transcript.py)
        {"kind": "bookmark", "at": "2026-01-01T00:00:01Z"},  # a newer server's kind, with no words: not shown
    ]}
    calls = ToolCalls()
    updates = replayed(transcript, tmp_path, calls)
    assert [u.session_update for u in updates] == [
        "user_message_chunk", "tool_call", "tool_call_update", "agent_message_chunk", "agent_thought_chunk"]
    assert updates[2].status == "failed" and updates[2].content[0].content.text == "denied"
    assert updates[3].content.text == "(cancelled)"
    assert updates[4].content.text == "4 turns compacted into a summary\n"  # the served words, not ACP's own
    assert calls.announce("c1") == "c1-2"  # a later call the provider also names c1 gets a card of its own


def test_a_replayed_step_shows_its_check_after_its_calls(tmp_path: Path):
    checked = {"type": "checked", "files": ["a.py"], "text": "checked a.py: no new problems", "newProblems": []}
    transcript = {"entries": [{"kind": "turn", "prompt": "hi", "reply": "done", "cancelled": False, "tools": [
        {"id": "w", "name": "write", "arguments": {"path": "a.py"}, "ok": True, "summary": "wrote", "error": None,
         "checked": checked}]}]}
    updates = replayed(transcript, tmp_path, ToolCalls())
    assert [u.session_update for u in updates] == [
        "user_message_chunk", "tool_call", "tool_call_update", "agent_thought_chunk", "agent_message_chunk"]
    assert updates[3].content.text == "checked a.py: no new problems\n"


def test_tool_call_ids_are_unique_in_the_session_and_results_find_their_call():
    calls = ToolCalls()
    first = [calls.announce("call_1"), calls.announce("call_2")]
    assert [calls.finish("call_1"), calls.finish("call_2")] == first == ["call_1", "call_2"]
    step_two = ToolCalls(calls.used)  # the next turn shares the session's ids
    assert step_two.announce("call_1") == "call_1-2" and step_two.announce("call_1-2") == "call_1-2-2"
    assert step_two.of("call_1") == "call_1-2" and step_two.finish("call_1") == "call_1-2"


async def test_the_outbox_keeps_order_and_coalesces_text_between_other_updates():
    sent: list = []
    gate = asyncio.Event()

    async def send(update):
        await gate.wait()
        sent.append(update)

    outbox = Outbox(send, interval=10)  # a long interval: only a non-text update or sent() may end a wait
    outbox.put_text("saying", "a")
    for piece in "bcd":
        outbox.put_text("saying", piece)
    outbox.put("tool call")
    outbox.put_text("thinking", "t1")
    outbox.put_text("thinking", "t2")
    outbox.put_text("saying", "e")
    gate.set()
    await asyncio.wait_for(outbox.sent(), 5)
    shown = [u if isinstance(u, str) else (u.session_update, u.content.text) for u in sent]
    assert shown == [("agent_message_chunk", "abcd"), "tool call", ("agent_thought_chunk", "t1t2"),
                     ("agent_message_chunk", "e")]


async def test_text_after_a_quiet_spell_goes_at_once_and_the_rest_waits_for_more_to_join_it():
    sent: list = []

    async def send(update):
        sent.append(update.content.text)

    outbox = Outbox(send, interval=10)  # longer than any stall of a loaded machine: the window stays open
    outbox.put_text("saying", "first")
    await wait_until(lambda: sent == ["first"], "the first text, at once", timeout=5)
    outbox.put_text("saying", "second")
    await asyncio.sleep(0)  # one turn of the loop: the outbox's pump runs its step, and must hold the text
    assert sent == ["first"]
    outbox.put_text("saying", "third")
    await asyncio.wait_for(outbox.sent(), 5)  # the end of the turn sends it at once, not after the window
    assert sent == ["first", "secondthird"]


async def test_text_waiting_for_more_goes_once_its_interval_has_passed():
    loop = asyncio.get_running_loop()
    sent: list[tuple[str, float]] = []

    async def send(update):
        sent.append((update.content.text, loop.time()))

    outbox = Outbox(send, interval=0.2)
    before = loop.time()  # no later than the first text went out
    outbox.put_text("saying", "first")
    outbox.put_text("saying", " and more")
    await wait_until(lambda: len(sent) == 1, "the first text")
    outbox.put_text("saying", "second")
    await wait_until(lambda: len(sent) == 2, "the second text, after the interval, with no end of turn")
    [(first, _), (second, went)] = sent
    assert (first, second) == ("first and more", "second")
    assert went - before >= 0.2 - 0.01  # not before the interval (a timer may fire a tick early; load only delays it)
