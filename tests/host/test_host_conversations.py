"""Stored conversations through the host: a turn is written as it ends (a cancelled one as it is
cancelled), a new host continues where the last stopped, resume/delete/transcript and their
refusals, ``history: false``, keys never written, and compaction by the provider."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from scaffold import add_plugin, wait_until, write_script

from elelem_lsp.agent.budget import estimate_tokens, total_tokens
from elelem_lsp.agent.history import CANCELLED_EMPTY_MARK, CANCELLED_MARK, SUMMARY_MARK
from elelem_lsp.agent.messages import system
from elelem_lsp.host.conversations import ConversationStore, conversations_dir
from elelem_lsp.host import stored
from elelem_lsp.host.frontend import BadRequest, Refused
from elelem_lsp.host.host import Host

from .memory_frontend import MemoryFrontend

SCRIPTED = {"workspacePlugins": True, "provider": "scripted"}
READ_THEN_ANSWER = [
    [{"type": "saying", "text": "Reading."}, {"type": "doing", "id": "r1", "name": "read", "arguments": {"path": "README.md"}},
     {"type": "doing", "id": "r2", "name": "read", "arguments": {"path": "missing.md"}}],
    [{"type": "saying", "text": "It says hello."}],
]


def started_host(root: Path, settings=None) -> tuple[Host, MemoryFrontend]:
    """A host as a server starts one: the folder synced, nothing else done yet."""
    frontend = MemoryFrontend(settings_by_folder={root.as_uri(): settings if settings is not None else SCRIPTED})
    host = Host(frontend)
    host.sync_folders({root.as_uri(): root})
    return host, frontend


def folder_of(host: Host, root: Path):
    return host.agents[root.as_uri()]


async def start_turn(host: Host, root: Path, prompt: str) -> asyncio.Future:
    folder = folder_of(host, root)
    turn = asyncio.ensure_future(folder.turn(prompt))
    await wait_until(lambda: folder.running is not None and not folder.running.done(), "the turn to start")
    return turn


async def test_a_turn_is_stored_with_its_tools_and_a_new_host_continues_it(project):
    add_plugin(project, "scripted")
    write_script(project, READ_THEN_ANSWER)
    host, _ = started_host(project)
    folder = folder_of(host, project)
    await folder.turn("what is in it?")
    await folder.turn("and now?")  # the script has run out: "done."
    history = list(folder.session.history)

    [listed] = await stored.conversations(folder)
    assert (listed["title"], listed["turns"], listed["provider"]) == ("what is in it?", 2, "scripted")
    transcript = await stored.transcript(folder)
    assert transcript["id"] == listed["id"] == folder.current.id
    first, second = transcript["entries"]
    assert (first["prompt"], first["reply"], first["cancelled"], first["error"]) == ("what is in it?", "It says hello.", False, None)
    assert first["tools"] == [
        {"id": "r1", "name": "read", "arguments": {"path": "README.md"}, "title": "Read README.md",
         "outcomeTitle": "Read README.md", "ok": True, "summary": first["tools"][0]["summary"], "error": None},
        {"id": "r2", "name": "read", "arguments": {"path": "missing.md"}, "title": "Read missing.md",
         "outcomeTitle": "Read missing.md", "ok": False, "summary": None, "error": first["tools"][1]["error"]},
    ]
    assert first["tools"][0]["summary"] and "missing.md" in first["tools"][1]["error"]
    assert first["started"] <= first["ended"] <= second["started"] and first["ended"].endswith("Z")
    assert "thinking" not in json.dumps(transcript)

    restarted, _ = started_host(project)
    await restarted.prepare()
    again = folder_of(restarted, project)
    assert again.current.id == folder.current.id
    assert (await again.context())["messages"][1:] == history
    write_script(project, [[{"type": "record"}]])
    await again.turn("third")
    [fetch] = [json.loads(line) for line in (project / ".agents/fetches.jsonl").read_text().splitlines()]
    assert [m["content"] for m in fetch["messages"][1:]] == ["what is in it?", "It says hello.", "and now?", "done.", "third"]


async def test_the_context_a_turn_was_asked_from_is_stored_apart_from_the_words(project):
    add_plugin(project, "scripted")
    write_script(project, [[{"type": "record"}], [{"type": "record"}]])
    host, _ = started_host(project)
    folder = folder_of(host, project)
    await folder.turn("what does it do?", context="File: src/app.py (lines 3-4)\n```\nx = 1\n```")
    await folder.turn("and without a file?")

    [listed] = await stored.conversations(folder)
    assert listed["title"] == "what does it do?"
    first, second = (await stored.transcript(folder))["entries"]
    assert (first["prompt"], first["context"]) == ("what does it do?", "File: src/app.py (lines 3-4)\n```\nx = 1\n```")
    assert second["prompt"] == "and without a file?" and "context" not in second
    sent = [json.loads(line) for line in (project / ".agents/fetches.jsonl").read_text().splitlines()]
    asked_from_file = "what does it do?\n\nFile: src/app.py (lines 3-4)\n```\nx = 1\n```"
    assert sent[0]["messages"][-1]["content"] == asked_from_file  # the model reads both

    restarted, _ = started_host(project)
    await restarted.prepare()
    history = (await folder_of(restarted, project).context())["messages"][1:]
    assert [m["content"] for m in history][0] == asked_from_file  # and still does after a restart


async def test_prompts_and_replies_holding_line_separators_survive_a_restart(project):
    add_plugin(project, "scripted")
    separators = "\u2028\u2029\x85\x0b\x0c\x1c\x1d\x1e"
    write_script(project, [[{"type": "saying", "text": f"reply{c}end"}] for c in separators])
    host, _ = started_host(project)
    folder = folder_of(host, project)
    for character in separators:
        await folder.turn(f"prompt{character}end")
    history = list(folder.session.history)
    assert len(history) == 2 * len(separators)

    restarted, _ = started_host(project)
    again = folder_of(restarted, project)
    assert (await again.context())["messages"][1:] == history
    entries = (await stored.transcript(again))["entries"]
    assert [(e["prompt"], e["reply"]) for e in entries] == [(f"prompt{c}end", f"reply{c}end") for c in separators]


async def test_cancelled_turns_are_stored_as_cancelled_and_an_empty_one_adds_no_reply(project):
    add_plugin(project, "scripted")
    host, _ = started_host(project)
    folder = folder_of(host, project)
    fetches = project / ".agents" / "fetches.jsonl"
    for n, script in enumerate(([[{"type": "record"}, {"type": "saying", "text": "half"}, {"type": "sleep", "seconds": 30}]],
                                [[{"type": "record"}, {"type": "sleep", "seconds": 30}]]), start=1):
        write_script(project, script)
        turn = await start_turn(host, project, "long job")
        await wait_until(lambda: fetches.exists() and len(fetches.read_text().splitlines()) == n, "the fetch to begin")
        folder.cancel()
        assert (await asyncio.wait_for(turn, 10))["cancelled"] is True
    entries = (await stored.transcript(folder))["entries"]
    assert [(e["reply"], e["cancelled"]) for e in entries] == [("half", True), ("", True)]
    expected = [
        {"role": "user", "content": "long job"},
        {"role": "assistant", "content": f"half\n\n{CANCELLED_MARK}"},
        {"role": "user", "content": f"long job\n\n{CANCELLED_EMPTY_MARK}"},
    ]
    assert folder.session.history == expected
    restarted, _ = started_host(project)
    assert (await folder_of(restarted, project).context())["messages"][1:] == expected


async def test_resume_transcript_and_delete_and_what_they_refuse(project):
    add_plugin(project, "scripted")
    host, _ = started_host(project)
    folder = folder_of(host, project)
    await folder.turn("in the first")
    first = folder.current.id
    new = await stored.new_conversation(folder)
    assert new["reset"] is True and new["id"] != first and folder.session.history == []
    restarted, _ = started_host(project)  # nothing asked in the new one yet: a restart goes on with the first
    assert (await stored.transcript(folder_of(restarted, project)))["id"] == first
    await folder.turn("in the second")
    restarted, _ = started_host(project)
    assert (await stored.transcript(folder_of(restarted, project)))["id"] == new["id"]
    second = folder.current.id
    assert [c["id"] for c in await stored.conversations(folder)] == [second, first]

    resumed = await stored.resume(folder, first)
    assert resumed["id"] == first and resumed["title"] == "in the first"
    assert [e["prompt"] for e in resumed["entries"]] == ["in the first"]
    assert [m["content"] for m in folder.session.history] == ["in the first", "done."]
    assert (await stored.transcript(folder, second))["entries"][0]["prompt"] == "in the second"

    restarted, _ = started_host(project)  # the resumed one is what a restart continues
    assert (await stored.transcript(folder_of(restarted, project)))["id"] == first

    for call in (lambda: stored.resume(folder, "20990101T000000-00000000"),
                 lambda: stored.transcript(folder, "20990101T000000-00000000"),
                 lambda: stored.delete_conversation(folder, "20990101T000000-00000000")):
        with pytest.raises(BadRequest, match="^id: no conversation '20990101T000000-00000000'"):
            await call()

    write_script(project, [[{"type": "sleep", "seconds": 30}]])
    turn = await start_turn(host, project, "busy")
    for call in (lambda: stored.resume(folder, second), lambda: stored.delete_conversation(folder, first),
                 lambda: stored.new_conversation(folder), lambda: folder.compact()):
        with pytest.raises(Refused, match="turn is"):
            await call()
    assert await stored.delete_conversation(folder, second) == {"deleted": second}  # not the current one: fine
    folder.cancel()
    await asyncio.wait_for(turn, 10)
    assert folder.current.id == first

    assert await stored.delete_conversation(folder, first) == {"deleted": first, "started": folder.current.id}
    assert folder.current.id not in (first, second) and folder.session.history == []
    assert await stored.conversations(folder) == []


async def test_with_history_off_nothing_is_written_and_nothing_read(project):
    add_plugin(project, "scripted")
    host, _ = started_host(project, {**SCRIPTED, "history": False})
    folder = folder_of(host, project)
    await folder.turn("private")
    await stored.new_conversation(folder)
    assert not conversations_dir().exists() or list(conversations_dir().rglob("*")) == []
    restarted, _ = started_host(project, {**SCRIPTED, "history": False})
    assert (await folder_of(restarted, project).context())["messages"][1:] == []

    earlier, _ = started_host(project)  # a conversation stored while history was on
    await folder_of(earlier, project).turn("stored before")
    kept = folder_of(earlier, project).current.id
    host, _ = started_host(project, {**SCRIPTED, "history": False})
    folder = folder_of(host, project)
    assert await stored.conversations(folder) == []
    assert (await stored.transcript(folder))["entries"] == []
    for call in (lambda: stored.resume(folder, kept), lambda: stored.transcript(folder, kept),
                 lambda: stored.delete_conversation(folder, kept)):
        with pytest.raises(BadRequest, match=f"^id: history is off in {project.name} \\(the history setting\\)"):
            await call()
    assert ConversationStore(project.resolve()).exists(kept)


async def test_no_key_from_the_environment_reaches_the_files(project, monkeypatch):
    secret = "sk-test-SECRET-do-not-store-4242"
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OFFICE_KEY"):
        monkeypatch.setenv(name, secret)
    add_plugin(project, "scripted")
    write_script(project, READ_THEN_ANSWER)
    settings = {**SCRIPTED, "providers": [{"name": "office", "type": "openai-chat", "model": "m",
                                           "endpoint": "http://127.0.0.1:9/v1", "apiKeyEnv": "OFFICE_KEY"}]}
    host, _ = started_host(project, settings)
    await folder_of(host, project).turn("hello")
    files = [p for p in conversations_dir().rglob("*") if p.is_file()]
    assert any(p.suffix == ".jsonl" for p in files)
    assert all(secret not in p.read_text() for p in files)


async def test_the_model_stored_is_the_one_the_provider_ran_when_none_was_chosen(project):
    settings = {"provider": "office", "providers": [{"name": "office", "type": "openai-chat", "model": "office-model",
                                                     "endpoint": "http://127.0.0.1:9/v1"}]}
    host, _ = started_host(project, settings)
    folder = folder_of(host, project)
    result = await folder.turn("hello")  # nothing listens there: the turn's error, stored all the same
    assert result["error"] and result["model"] == "office-model"
    [entry] = (await stored.transcript(folder))["entries"]
    assert (entry["provider"], entry["model"]) == ("office", "office-model")
    [listed] = await stored.conversations(folder)
    assert listed["model"] == "office-model"


async def test_a_store_that_cannot_be_written_is_reported_and_the_turn_goes_on(project, tmp_path):
    add_plugin(project, "scripted")
    conversations_dir().parent.mkdir(parents=True)
    conversations_dir().symlink_to(tmp_path)  # planted
    host, frontend = started_host(project)
    result = await folder_of(host, project).turn("hello")
    assert result["reply"] == "done." and result["error"] is None
    assert any(level == "warning" and "is not stored" in text and "symlink" in text for level, text in frontend.messages)
    assert not any(tmp_path.glob("*/*.jsonl"))


async def test_stored_files_that_cannot_be_read_are_refused_with_the_reason_and_the_rest_still_listed(project, tmp_path):
    add_plugin(project, "scripted")
    host, frontend = started_host(project)
    folder = folder_of(host, project)
    await folder.turn("kept")
    store = ConversationStore(project.resolve())
    victim = tmp_path / "victim.jsonl"
    victim.write_text(json.dumps({"kind": "turn", "prompt": "not ours"}) + "\n")
    planted = "20260101T000000-aaaaaaaa"
    store.path(planted).symlink_to(victim)
    store.path("20260101T000000-bbbbbbbb").mkdir()  # a folder where a file goes

    assert [c["title"] for c in await stored.conversations(folder)] == ["kept"]
    for call in (lambda: stored.transcript(folder, planted), lambda: stored.resume(folder, planted)):
        with pytest.raises(Refused, match=f"conversations of {project.name} cannot be read: cannot read .*symbolic links"):
            await call()
    assert [m["content"] for m in folder.session.history] == ["kept", "done."]  # still on the one it had

    current = store.directory / "current"
    current.unlink()
    current.mkdir()  # where the folder's current conversation is named
    resumed = await stored.resume(folder, folder.current.id)
    assert [e["prompt"] for e in resumed["entries"]] == ["kept"]
    assert any(level == "warning" and "is not stored" in text for level, text in frontend.messages)


async def test_compaction_asks_the_provider_and_keeps_the_last_two_turns(project):
    add_plugin(project, "scripted")
    host, _ = started_host(project)
    folder = folder_of(host, project)
    assert (await folder.compact())["turns"] == 0  # nothing yet
    for n in range(5):
        await folder.turn(f"turn {n} " + "words " * 200)
    write_script(project, [[{"type": "record"}, {"type": "saying", "text": "Edited a.py; decided on X; open: tests."}]])
    report = await folder.compact()
    assert report["turns"] == 3 and report["tokensAfter"] < report["tokensBefore"]
    [fetch] = [json.loads(line) for line in (project / ".agents/fetches.jsonl").read_text().splitlines()]
    assert fetch["tools"] == [] and "file name" in fetch["messages"][0]["content"]
    assert [m["content"][:6] for m in fetch["messages"][1:-1]] == ["turn 0", "done.", "turn 1", "done.", "turn 2", "done."]

    summary = f"{SUMMARY_MARK}\n\nEdited a.py; decided on X; open: tests."
    expected = [summary, "turn 3", "done.", "turn 4", "done."]
    assert [m["content"][:6] if m["content"].startswith("turn") else m["content"] for m in folder.session.history] == expected
    entries = (await stored.transcript(folder))["entries"]
    assert [e["kind"] for e in entries] == ["turn"] * 5 + ["compaction"]
    assert entries[-1]["turns"] == 3 and entries[-1]["summary"] == "Edited a.py; decided on X; open: tests."
    restarted, _ = started_host(project)
    again = (await folder_of(restarted, project).context())["messages"][1:]
    assert again == folder.session.history

    write_script(project, [[{"type": "raise", "message": "model overloaded"}]])
    await folder.turn("turn 5")  # fetch 1 of the script raises: the turn's own error
    before = list(folder.session.history)
    write_script(project, [[{"type": "raise", "message": "model overloaded"}], []])  # a changed script starts again
    with pytest.raises(Refused, match="could not compact the conversation: model overloaded"):
        await folder.compact()
    assert folder.session.history == before


OUTSIDE_TOOL = {"type": "function", "function": {"name": "notes__add", "description": "adds a note " * 500,
                                                 "parameters": {"type": "object"}}}


async def test_the_context_and_the_compaction_check_count_the_outside_tools_a_turn_offers(project, monkeypatch):
    add_plugin(project, "scripted")
    # the full prompt: a compact one would leave the large outside tool out for want of room
    settings = {**SCRIPTED, "compaction": "summarize", "contextTokens": 4000, "prompt": "full"}
    host, frontend = started_host(project, settings)
    folder = folder_of(host, project)

    async def served_tools():  # what the folder's MCP servers offer, as they join its turns
        return [OUTSIDE_TOOL]

    monkeypatch.setattr(folder.mcp, "definitions", served_tools)
    monkeypatch.setattr(folder.mcp, "counted", served_tools)
    estimated = (await folder.context())["tokens"]
    write_script(project, [[{"type": "record"}]])
    await folder.turn("turn 0")
    [fetch] = [json.loads(line) for line in (project / ".agents/fetches.jsonl").read_text().splitlines()]
    assert fetch["tools"][-1] == OUTSIDE_TOOL
    offered = total_tokens([system(json.dumps(fetch["tools"], ensure_ascii=False, separators=(",", ":")))], estimate_tokens)
    assert estimated == total_tokens(fetch["messages"][:1], estimate_tokens) + offered

    # about 500 tokens a turn and 2,900 for the tools with the outside one (800 without): over by the third
    for n in range(1, 4):
        await folder.turn(f"turn {n} " + "x" * 1500)
    assert "compacted" in [e["type"] for p in frontend.progress for e in p.events]


async def test_a_long_conversation_is_summarised_in_requests_that_each_fit_the_budget(project):
    add_plugin(project, "scripted")
    host, _ = started_host(project, {**SCRIPTED, "contextTokens": 1000})
    folder = folder_of(host, project)
    for n in range(8):  # about 600 tokens a turn: the six to compact are three times the budget
        await folder.turn(f"turn {n} " + "x" * 1800)
    write_script(project, [[{"type": "record"}, {"type": "saying", "text": f"summary {n}"}] for n in range(6)])
    report = await folder.compact()

    sent = [json.loads(line)["messages"] for line in (project / ".agents/fetches.jsonl").read_text().splitlines()]
    assert 3 <= len(sent) <= 6
    assert all(total_tokens(messages, estimate_tokens) <= 1000 for messages in sent)
    asked = [m["content"][:6] for messages in sent for m in messages if m["content"].startswith("turn")]
    assert asked == [f"turn {n}" for n in range(6)]  # each older turn once, oldest first
    for n, messages in enumerate(sent[1:]):  # each request after the first goes on from the summary so far
        assert messages[1]["content"] == f"{SUMMARY_MARK}\n\nsummary {n}"
    assert report["turns"] == 6
    assert folder.session.history[0]["content"] == f"{SUMMARY_MARK}\n\nsummary {len(sent) - 1}"


async def test_over_budget_a_summarize_folder_compacts_before_the_turn(project):
    add_plugin(project, "scripted")
    settings = {**SCRIPTED, "compaction": "summarize", "contextTokens": 5700, "prompt": "full"}
    host, frontend = started_host(project, settings)
    folder = folder_of(host, project)
    for n in range(6):  # about 700 tokens a turn, 2,650 for the tools (the plan tool too) and the system prompt: the fifth is over
        await folder.turn(f"turn {n} " + "x" * 2000)
    kinds = [e["type"] for p in frontend.progress for e in p.events]
    assert "compacted" in kinds
    [compacted] = [e for p in frontend.progress for e in p.events if e["type"] == "compacted"]
    assert compacted["turns"] >= 1 and compacted["tokensAfter"] < compacted["tokensBefore"]
    assert folder.session.history[0]["content"].startswith(SUMMARY_MARK)
    kinds = [e["kind"] for e in ConversationStore(project.resolve()).entries(folder.current.id)]
    assert kinds == ["turn"] * 4 + ["compaction", "turn", "turn"]  # the fifth turn compacted first
    restarted, _ = started_host(project, settings)
    assert (await folder_of(restarted, project).context())["messages"][1:] == folder.session.history


async def over_budget_with_summaries_on(project):
    """A host whose folder holds five long turns (stored under ``drop``), then set to ``summarize``."""
    add_plugin(project, "scripted")
    settings = {**SCRIPTED, "compaction": "summarize", "contextTokens": 4000}
    host, frontend = started_host(project, {**settings, "compaction": "drop"})
    folder = folder_of(host, project)
    for n in range(5):
        await folder.turn(f"turn {n} " + "x" * 2000)
    frontend.settings_by_folder[project.as_uri()] = settings
    return host, frontend, folder


async def test_when_the_summary_fails_the_turn_goes_on_leaving_the_oldest_out(project):
    host, frontend, folder = await over_budget_with_summaries_on(project)
    write_script(project, [[{"type": "raise", "message": "no summary today"}], [{"type": "saying", "text": "answered anyway"}]])
    result = await folder.turn("one more " + "x" * 2000)
    assert result["reply"] == "answered anyway" and result["error"] is None
    assert any(level == "warning" and "could not compact the conversation (no summary today)" in text
               for level, text in frontend.messages)
    events = frontend.progress[-1].events
    assert [e["type"] for e in events] == ["context", "saying", "usage"] and events[0]["leftOut"] >= 1
    assert not any(m["content"].startswith(SUMMARY_MARK) for m in folder.session.history)
    assert "compaction" not in [e["kind"] for e in (await stored.transcript(folder))["entries"]]


async def test_a_failed_compaction_is_said_once_and_tried_again_only_after_five_more_turns(project):
    host, frontend, folder = await over_budget_with_summaries_on(project)
    failing = [{"type": "raise", "message": "no summary today"}]
    # a try at compacting takes the next step of the script: a reply out of order would show one
    write_script(project, [failing, *[[{"type": "saying", "text": f"a{n}"}] for n in range(5)], failing,
                           [{"type": "saying", "text": "a5"}]])
    replies = [(await folder.turn(f"more {n} " + "x" * 2000))["reply"] for n in range(6)]
    assert replies == [f"a{n}" for n in range(6)]  # tried before the first and the sixth turn only
    warnings = [text for level, text in frontend.messages if "could not compact" in text]
    assert warnings == ["elelem: could not compact the conversation (no summary today); older turns are left out, "
                        "and compacting is tried again after 5 more turns"]


async def test_a_storm_of_cancelled_turns_adds_no_empty_replies_and_the_store_matches(project):
    add_plugin(project, "scripted")
    write_script(project, [[{"type": "record"}, {"type": "sleep", "seconds": 30}]] * 30)
    fetches = project / ".agents/fetches.jsonl"
    host, _ = started_host(project)
    folder = folder_of(host, project)

    def fetching(prompt: str) -> bool:  # the last fetch recorded was asked ``prompt``
        last = fetches.read_text().splitlines()[-1:] if fetches.exists() else []
        return bool(last) and json.loads(last[0])["messages"][-1]["content"] == prompt

    for n in range(20):
        turn = asyncio.ensure_future(folder.turn(f"stop {n}"))
        await wait_until(lambda: folder.running is not None and not folder.running.done(), "the turn to start")
        if n % 2:  # half cancelled once the fetch is under way, half as soon as the turn exists
            await wait_until(lambda: fetching(f"stop {n}"), "the fetch to start")
        folder.cancel()
        assert (await asyncio.wait_for(turn, 10))["cancelled"] is True
    assert all(m["role"] == "user" and m["content"].endswith(CANCELLED_EMPTY_MARK) for m in folder.session.history)
    restarted, _ = started_host(project)
    assert (await folder_of(restarted, project).context())["messages"][1:] == folder.session.history
