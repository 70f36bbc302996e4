"""Stored conversations over ACP: ``session/new`` continues the folder's conversation, ``session/load``
replays one after a restart, ``/reset`` and ``/compact``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from acp import RequestError

from scaffold import wait_until, write_script


def recorded(root: Path) -> list[dict]:
    return [json.loads(line) for line in (root / ".agents" / "fetches.jsonl").read_text().splitlines()]


async def test_session_load_after_a_restart_replays_the_conversation(scripted_project: Path, start_agent):
    write_script(scripted_project, [
        [{"type": "doing", "id": "r1", "name": "read", "arguments": {"path": "README.md"}},
         {"type": "doing", "id": "r2", "name": "read", "arguments": {"path": "gone.txt"}}],
        [{"type": "saying", "text": "It says hello."}],
    ])
    first = await start_agent(scripted_project)
    await first.prompt("what does the readme say?")
    session_id = first.session_id
    assert await first.stop() == 0

    write_script(scripted_project, [[{"type": "record"}, {"type": "saying", "text": "still hello"}]])
    second = await start_agent(scripted_project, new_session=False)
    loaded = await second.conn.load_session(cwd=str(scripted_project), session_id=session_id, mcp_servers=[])
    assert [o.id for o in loaded.config_options] == ["provider", "model"]
    await wait_until(lambda: second.client.of("agent_message_chunk"), "the replayed reply")
    kinds = [(u.session_update, getattr(u, "status", None)) for _, u in second.client.updates
             if u.session_update != "available_commands_update"]
    assert kinds == [
        ("user_message_chunk", None),
        ("tool_call", "pending"), ("tool_call_update", "completed"),
        ("tool_call", "pending"), ("tool_call_update", "failed"),
        ("agent_message_chunk", None),
    ]
    assert second.client.text("user_message_chunk") == "what does the readme say?"
    assert second.client.text() == "It says hello."
    assert second.client.tool_updates("r1")[0].title == "Read README.md"
    assert "does not exist" in second.client.tool_updates("r2")[-1].content[0].content.text

    await second.prompt("and now?", session_id=session_id)  # the conversation goes on where it was
    [fetch] = recorded(scripted_project)
    said = [m["content"] for m in fetch["messages"] if m["role"] in ("user", "assistant")]
    assert said == ["what does the readme say?", "It says hello.", "and now?"]


async def test_session_new_continues_the_folders_conversation_and_a_second_session_starts_another(
    scripted_project: Path, start_agent
):
    write_script(scripted_project, [[{"type": "saying", "text": "one"}]])
    first = await start_agent(scripted_project)
    await first.prompt("first")
    assert await first.stop() == 0

    second = await start_agent(scripted_project)
    assert second.session_id == first.session_id  # the folder's current conversation
    also = await second.conn.new_session(cwd=str(scripted_project), mcp_servers=[])
    assert also.session_id != second.session_id  # that one has a live session already: a new one

    write_script(scripted_project, [[{"type": "record"}]])
    await second.prompt("fresh start", session_id=also.session_id)
    said = [m["content"] for m in recorded(scripted_project)[0]["messages"] if m["role"] == "user"]
    assert said == ["fresh start"]  # its own conversation, not the live session's
    # the first conversation is still stored, under its id
    third = await start_agent(scripted_project, new_session=False)
    await third.conn.load_session(cwd=str(scripted_project), session_id=first.session_id, mcp_servers=[])
    await wait_until(lambda: third.client.text() == "one", "the old conversation replayed")


async def test_reset_starts_the_context_over_in_the_same_thread_and_a_restart_keeps_it_so(
    scripted_project: Path, start_agent
):
    write_script(scripted_project, [[{"type": "saying", "text": "one"}], [{"type": "record"}, {"type": "saying", "text": "two"}]])
    agent = await start_agent(scripted_project)
    await agent.prompt("before")
    seen = len(agent.client.updates)
    assert (await agent.prompt("/reset")).stop_reason == "end_turn"
    assert "context starts over" in agent.client.text(since=seen)
    await agent.prompt("after")
    [fetch] = recorded(scripted_project)
    assert [m["content"] for m in fetch["messages"] if m["role"] != "system"] == ["after"]  # "before" forgotten
    listed = (await agent.conn.list_sessions(cwd=str(scripted_project))).sessions
    assert [s.session_id for s in listed] == [agent.session_id]  # still one thread, under its own id
    assert await agent.stop() == 0

    write_script(scripted_project, [[{"type": "record"}, {"type": "saying", "text": "three"}]])
    again = await start_agent(scripted_project, new_session=False)
    await again.conn.load_session(cwd=str(scripted_project), session_id=agent.session_id, mcp_servers=[])
    await wait_until(lambda: again.client.text() == "onetwo", "the whole thread replayed")
    assert [u.content.text for u in again.client.of("user_message_chunk")] == ["before", "after"]
    # the reset's line in the host's words, as every client draws it again
    assert again.client.text("agent_thought_chunk") == "the conversation started over here: the model no longer sees the turns above\n"
    (scripted_project / ".agents" / "fetches.jsonl").unlink()
    await again.prompt("and then?", session_id=agent.session_id)
    [fetch] = recorded(scripted_project)  # after a restart the model still sees only what came after /reset
    assert [m["content"] for m in fetch["messages"] if m["role"] != "system"] == ["after", "two", "and then?"]


async def test_loading_an_unknown_or_running_session_is_refused(scripted_project: Path, start_agent):
    agent = await start_agent(scripted_project)
    for bad in ("20990101T000000-deadbeef", "../../etc", ""):
        with pytest.raises(RequestError) as unknown:
            await agent.conn.load_session(cwd=str(scripted_project), session_id=bad, mcp_servers=[])
        assert unknown.value.code == -32602 and "sessionId" in str(unknown.value)
    write_script(scripted_project, [[{"type": "saying", "text": "ok"}]])
    assert (await agent.prompt("still fine")).stop_reason == "end_turn"


async def test_compact_summarises_older_turns(scripted_project: Path, start_agent):
    write_script(scripted_project, [[{"type": "saying", "text": f"reply {n}"}] for n in range(6)]
                 + [[{"type": "saying", "text": "a short summary"}]])
    agent = await start_agent(scripted_project)
    for n in range(6):
        await agent.prompt(f"turn {n}")
    seen = len(agent.client.updates)
    await agent.prompt("/compact")
    said = agent.client.text(since=seen)
    assert "turns compacted into a summary" in said and "tokens" in said
    await wait_until(lambda: agent.client.of("available_commands_update"), "the slash commands")
    names = {c.name for c in agent.client.of("available_commands_update")[0].available_commands}
    assert "compact" in names


async def test_session_list_gives_the_folders_stored_conversations_newest_first(
    scripted_project: Path, start_agent, tmp_path: Path
):
    write_script(scripted_project, [[{"type": "saying", "text": "one"}], [{"type": "saying", "text": "two"}]])
    agent = await start_agent(scripted_project)
    assert agent.init.agent_capabilities.session_capabilities.list is not None
    await agent.prompt("the first question")
    first = agent.session_id
    second = (await agent.conn.new_session(cwd=str(scripted_project), mcp_servers=[])).session_id
    await agent.prompt("the second question", session_id=second)

    listed = (await agent.conn.list_sessions(cwd=str(scripted_project))).sessions
    assert [(s.session_id, s.title, s.cwd) for s in listed] == [
        (second, "the second question", str(scripted_project)), (first, "the first question", str(scripted_project)),
    ]
    assert all(s.updated_at for s in listed)
    assert [s.session_id for s in (await agent.conn.list_sessions()).sessions] == [second, first]  # the folders open here

    # a folder no session is on is listed from its store; one with nothing stored lists nothing
    empty = tmp_path / "empty"
    empty.mkdir()
    assert (await agent.conn.list_sessions(cwd=str(empty))).sessions == []
    for params, field in (({"cwd": "relative/path"}, "cwd"), ({"cwd": str(scripted_project), "cursor": "x"}, "cursor")):
        with pytest.raises(RequestError) as error:
            await agent.conn.list_sessions(**params)
        assert error.value.code == -32602 and field in str(error.value.data or error.value)
    await agent.prompt("still here", session_id=first)  # the agent goes on
