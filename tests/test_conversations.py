"""Conversations that last, through real server processes: a server killed mid-turn is followed
by one that continues up to the last finished turn; list, resume, transcript, delete and compact
over LSP with their errors; two servers appending to one conversation; a 300-turn conversation
sent within ``contextTokens``; ``elelem.context`` with the estimate."""

from __future__ import annotations

import asyncio
import json
import signal

import pytest
from pygls.exceptions import JsonRpcException

from scaffold import add_plugin, wait_until, write_script

from elelem_lsp.agent.budget import estimate_tokens, total_tokens
from elelem_lsp.host.conversations import ConversationStore, new_id

SCRIPTED = {"provider": "scripted"}


async def command_error(editor, name, *arguments) -> JsonRpcException:
    with pytest.raises(JsonRpcException) as error:
        await editor.command(name, *arguments)
    return error.value


def fetches(project) -> list[dict]:
    return [json.loads(line) for line in (project / ".agents/fetches.jsonl").read_text().splitlines()]


def seed(project, turns: int, size: int = 0) -> str:
    """A stored conversation of ``turns`` turns for the project, as an earlier server left it."""
    store, conversation = ConversationStore(project.resolve()), new_id()
    for n in range(turns):
        store.append(conversation, {
            "kind": "turn", "prompt": f"prompt {n} " + "p" * size, "reply": f"reply {n} " + "r" * size,
            "provider": "scripted", "model": None, "started": f"2026-01-01T00:00:{n % 60:02d}.000Z",
            "ended": f"2026-01-01T00:00:{n % 60:02d}.500Z", "cancelled": False, "error": None, "tools": [],
        })
    return conversation


async def test_a_server_killed_mid_turn_is_continued_up_to_the_last_finished_turn(project, start_editor):
    add_plugin(project, "scripted")
    write_script(project, [[{"type": "saying", "text": "one"}], [{"type": "saying", "text": "two"}],
                           [{"type": "saying", "text": "working on it"}, {"type": "sleep", "seconds": 60}]])
    first = await start_editor(project, settings=SCRIPTED)
    assert (await first.ask("first", token="t1"))["reply"] == "one"
    assert (await first.ask("second", token="t2"))["reply"] == "two"
    running = asyncio.ensure_future(first.ask("third", token="t3"))
    await wait_until(lambda: any(e["type"] == "saying" for e in first.events("t3")), "the third turn to begin")
    server = first.client._server
    server.send_signal(signal.SIGKILL)
    await asyncio.wait_for(server.wait(), 10)
    with pytest.raises(Exception):
        await asyncio.wait_for(running, 10)

    write_script(project, [[{"type": "record"}]])
    second = await start_editor(project, settings=SCRIPTED)
    await second.ask("fourth", token="t4")
    [sent] = fetches(project)
    assert [m["content"] for m in sent["messages"][1:]] == ["first", "one", "second", "two", "fourth"]
    transcript = await second.command("elelem.transcript", {})
    assert [(e["prompt"], e["reply"]) for e in transcript["entries"]] == [
        ("first", "one"), ("second", "two"), ("fourth", "")]  # the recording fetch says nothing


async def test_list_resume_transcript_delete_and_compact_over_lsp(project, start_editor):
    add_plugin(project, "scripted")
    editor = await start_editor(project, settings=SCRIPTED)
    assert await editor.command("elelem.conversations", {}) == []
    await editor.ask("the first question", token="a1")
    first = (await editor.command("elelem.transcript", {}))["id"]
    await editor.command("elelem.reset", {})
    for n in range(4):
        await editor.ask(f"second conversation {n} " + "words " * 100, token=f"b{n}")
    listing = await editor.command("elelem.conversations", {"uri": project.as_uri()})
    assert [(c["title"], c["turns"]) for c in listing] == [(("second conversation 0 " + "words " * 10)[:59] + "…", 4), ("the first question", 1)]
    assert set(listing[0]) == {"id", "title", "created", "updated", "turns", "provider", "model"}
    second = listing[0]["id"]

    resumed = await editor.command("elelem.resume", {"id": first})
    assert resumed["id"] == first and [e["prompt"] for e in resumed["entries"]] == ["the first question"]
    assert set(resumed["entries"][0]) == {"kind", "prompt", "reply", "provider", "model", "steps", "started", "ended",
                                          "cancelled", "error", "tools", "usage", "text"}
    assert resumed["entries"][0]["text"] == "done — scripted · 1 step"  # the footer the turn ended with
    context = await editor.command("elelem.context", {})
    assert [m["content"] for m in context["messages"][1:]] == ["the first question", "done."]
    assert 0 < context["tokens"] < context["budget"] == 32000

    error = await command_error(editor, "elelem.resume", {"id": "20990101T000000-00000000"})
    assert error.code == -32602 and "id: no conversation" in error.message
    error = await command_error(editor, "elelem.resume", {"id": "../../../etc/passwd"})
    assert error.code == -32602 and "id" in error.message
    error = await command_error(editor, "elelem.deleteConversation", {})
    assert error.code == -32602 and "id" in error.message

    await editor.command("elelem.resume", {"id": second})
    write_script(project, [[{"type": "saying", "text": "Summary: four questions asked."}]])
    report = await editor.command("elelem.compact", {})
    assert report["turns"] == 2 and report["tokensAfter"] < report["tokensBefore"]
    entries = (await editor.command("elelem.transcript", {"id": second}))["entries"]
    assert entries[-1] == {"kind": "compaction", "turns": 2, "summary": "Summary: four questions asked.",
                           "at": entries[-1]["at"], "text": "2 turns compacted into a summary"}

    write_script(project, [[{"type": "sleep", "seconds": 60}]])
    running = asyncio.ensure_future(editor.ask("busy", token="busy"))
    await wait_until(lambda: editor.progress["busy"], "the turn to begin")
    error = await command_error(editor, "elelem.resume", {"id": first})
    assert error.code == -32803 and "turn is running" in error.message
    await editor.command("elelem.cancel", {})
    assert (await running)["cancelled"] is True

    assert await editor.command("elelem.deleteConversation", {"id": first}) == {"deleted": first}
    assert [c["id"] for c in await editor.command("elelem.conversations", {})] == [second]
    error = await command_error(editor, "elelem.transcript", {"id": first})
    assert error.code == -32602


async def test_two_servers_appending_to_one_conversation_keep_every_line(project, start_editor):
    add_plugin(project, "scripted")
    conversation = seed(project, 1)
    one = await start_editor(project, settings=SCRIPTED)
    two = await start_editor(project, settings=SCRIPTED)

    async def asks(editor, name):
        for n in range(15):
            await editor.ask(f"{name} {n} " + "x" * 5000, token=f"{name}{n}")

    await asyncio.gather(asks(one, "one"), asks(two, "two"))
    entries = ConversationStore(project.resolve()).entries(conversation)
    lines = ConversationStore(project.resolve()).path(conversation).read_text().splitlines()
    assert len(entries) == len(lines) == 31
    for name in ("one", "two"):
        assert [e["prompt"].split()[1] for e in entries if e["prompt"].startswith(name)] == [str(n) for n in range(15)]


async def test_a_300_turn_conversation_is_sent_within_the_budget_oldest_left_out(project, start_editor):
    add_plugin(project, "scripted")
    seed(project, 300, size=300)
    write_script(project, [[{"type": "record"}]])
    editor = await start_editor(project, settings={**SCRIPTED, "contextTokens": 8000})
    await editor.ask("the newest", token="t")
    [sent] = fetches(project)
    tools_sent = json.dumps(sent["tools"], ensure_ascii=False, separators=(",", ":"))  # as the APIs' clients send them
    tools = total_tokens([{"role": "system", "content": tools_sent}], estimate_tokens)
    assert total_tokens(sent["messages"], estimate_tokens) + tools <= 8000
    prompts = [m["content"].split()[1] for m in sent["messages"] if m["role"] == "user"][:-1]
    assert prompts == [str(n) for n in range(int(prompts[0]), 300)] and int(prompts[0]) > 250
    [context] = [e for e in editor.events("t") if e["type"] == "context"]
    assert context["leftOut"] == int(prompts[0]) and context["budget"] == 8000 and context["tokens"] <= 8000
    context = await editor.command("elelem.context", {})
    assert context["budget"] == 8000 and context["tokens"] <= 8000 and len(context["messages"]) == 1 + 602
