"""The current ACP through the Python SDK: the authentication method and what it means,
``session/close`` (the turn, its terminal and the session end), ``session/resume`` (no replay,
the conversation goes on), the ``plan``, ``usage_update`` and ``session_info_update`` a turn
sends, message ids, and image blocks kept with the conversation by reference. Every message
of each test, both ways, is checked against the protocol's schema (``schema_check``)."""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path

import pytest
from acp import RequestError, image_block, text_block

from scaffold import write_user_settings
from schema_check import problems
from scaffold import wait_until, write_script

from elelem_lsp.host.conversations import ConversationStore

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


def running_in(folder: Path, but: int) -> list[str]:
    """The command lines of the processes whose working folder is ``folder``, but the process ``but``."""
    found = []
    for process in Path("/proc").glob("[0-9]*"):
        try:
            if process.name == str(but):
                continue
            if Path(process / "cwd").resolve(strict=True) == folder.resolve():
                found.append((process / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
        except OSError:  # gone, or not ours to look at
            continue
    return found


def recorded(root: Path) -> list[dict]:
    return [json.loads(line) for line in (root / ".agents" / "fetches.jsonl").read_text().splitlines()]


async def test_initialize_offers_close_resume_and_the_key_method_it_means(scripted_project: Path, start_agent):
    agent = await start_agent(scripted_project)
    sessions = agent.init.agent_capabilities.session_capabilities
    assert sessions.close is not None and sessions.resume is not None and sessions.list is not None
    assert agent.init.agent_capabilities.prompt_capabilities.image is False  # the scripted provider takes none
    [method] = agent.init.auth_methods
    assert method.id == "environment" and "environment" in method.description and "settings.json" in method.description
    await agent.conn.authenticate(method_id="environment")
    [asked] = [m for sender, m in agent.wire if sender == "client" and m.get("method") == "authenticate"]
    [answer] = [m for sender, m in agent.wire if sender == "agent" and "method" not in m and m.get("id") == asked["id"]]
    assert answer.get("result") == {} and "error" not in answer  # accepted: nothing to sign in to
    with pytest.raises(RequestError) as unknown:
        await agent.conn.authenticate(method_id="oauth")
    assert unknown.value.code == -32602 and "methodId" in str(unknown.value)
    for started in (agent,):
        assert problems(started.wire) == []



async def test_a_turn_sends_its_plan_usage_title_and_message_ids(scripted_project: Path, home: Path, start_agent):
    write_user_settings(home, {"provider": "scripted", "model": "claude-sonnet-4-5"})
    entries = [{"content": "read it", "status": "in_progress"}, {"content": "answer", "status": "pending", "priority": "high"}]
    write_script(scripted_project, [
        [{"type": "saying", "text": "Planning."}, {"type": "doing", "id": "p1", "name": "plan", "arguments": {"entries": entries}},
         {"type": "usage", "inputTokens": 1000, "outputTokens": 40}],
        [{"type": "saying", "text": "Done."}, {"type": "usage", "inputTokens": 1100, "outputTokens": 60}],
        [{"type": "saying", "text": "Again."}, {"type": "usage", "inputTokens": 1300, "outputTokens": 10}],
    ])
    agent = await start_agent(scripted_project)
    assert (await agent.prompt("plan the readme work")).stop_reason == "end_turn"
    await wait_until(lambda: agent.client.of("session_info_update"), "the session's title")

    [plan] = agent.client.of("plan")
    assert [(e.content, e.status, e.priority) for e in plan.entries] == [
        ("read it", "in_progress", "medium"), ("answer", "pending", "high")]
    [usage] = agent.client.of("usage_update")
    assert usage.used == 1160 and usage.size >= usage.used  # the last fetch read 1,100 and wrote 60
    # Claude Sonnet 4.5's published price, $3 per million tokens read and $15 written: 2,100 read and 100 written
    assert usage.cost.currency == "USD" and usage.cost.amount == pytest.approx(2100 * 3 / 1e6 + 100 * 15 / 1e6)
    [info] = agent.client.of("session_info_update")
    assert info.title == "plan the readme work" and info.updated_at
    said = agent.client.of("agent_message_chunk")
    assert all(chunk.message_id for chunk in said)
    assert said[0].message_id != said[-1].message_id  # "Planning." and "Done." are two messages around the call

    await agent.prompt("and again")
    second = agent.client.of("session_info_update")[-1]
    assert second.title is None and second.updated_at  # the title did not change: only the time is said
    [_, again] = agent.client.of("usage_update")
    assert again.cost.amount > usage.cost.amount  # the conversation's cost so far
    for started in (agent,):
        assert problems(started.wire) == []



async def test_close_ends_the_turn_its_terminal_and_the_session(scripted_project: Path, home: Path, start_agent):
    write_user_settings(home, {"provider": "scripted", "execute": "allow"})
    write_script(scripted_project, [[{"type": "doing", "id": "x1", "name": "execute",
                                      "arguments": {"command": "sleep 30; touch finished"}}]])
    agent = await start_agent(scripted_project)
    prompt = asyncio.ensure_future(agent.prompt("run"))
    await wait_until(lambda: agent.client.terminals, "the command's terminal")
    await agent.conn.close_session(session_id=agent.session_id)
    [terminal] = agent.client.terminals.values()
    assert terminal.killed and terminal.released  # before the close was answered
    assert (await asyncio.wait_for(prompt, 10)).stop_reason == "cancelled"
    with pytest.raises(RequestError) as closed:
        await agent.prompt("still there?")
    assert closed.value.code == -32602 and "sessionId" in str(closed.value)
    with pytest.raises(RequestError) as twice:
        await agent.conn.close_session(session_id=agent.session_id)
    assert twice.value.code == -32602
    assert await asyncio.wait_for(terminal.process.wait(), 10) < 0  # ended by a signal, not run out
    left = lambda: running_in(scripted_project, but=agent.process.pid)  # noqa: E731
    await wait_until(lambda: not left(), "nothing the command started left running")
    for started in (agent,):
        assert problems(started.wire) == []



async def test_resume_after_a_restart_goes_on_without_replaying(scripted_project: Path, start_agent):
    write_script(scripted_project, [[{"type": "doing", "id": "p1", "name": "plan",
                                      "arguments": {"entries": [{"content": "remember", "status": "completed"}]}}],
                                    [{"type": "saying", "text": "first answer"}]])
    first = await start_agent(scripted_project)
    await first.prompt("remember this")
    session_id = first.session_id
    assert await first.stop() == 0

    write_script(scripted_project, [[{"type": "record"}, {"type": "saying", "text": "went on"}]])
    second = await start_agent(scripted_project, new_session=False)
    resumed = await second.conn.resume_session(cwd=str(scripted_project), session_id=session_id, mcp_servers=[])
    assert [o.id for o in resumed.config_options] == ["provider", "model"]
    await wait_until(lambda: second.client.of("session_info_update"), "the resumed session's title")
    assert second.client.of("session_info_update")[0].title == "remember this"
    assert not second.client.of("user_message_chunk") and not second.client.of("agent_message_chunk")
    await wait_until(lambda: second.client.of("plan"), "the plan as it stands")
    assert [(e.content, e.status) for e in second.client.of("plan")[0].entries] == [("remember", "completed")]
    await second.prompt("and now?", session_id=session_id)
    said = [m["content"] for m in recorded(scripted_project)[0]["messages"] if m["role"] in ("user", "assistant")]
    assert said == ["remember this", "first answer", "and now?"]
    with pytest.raises(RequestError) as unknown:
        await second.conn.resume_session(cwd=str(scripted_project), session_id="20990101T000000-ffffffff", mcp_servers=[])
    assert unknown.value.code == -32602 and "sessionId" in str(unknown.value)
    for started in (first, second,):
        assert problems(started.wire) == []



async def test_an_image_goes_to_a_provider_that_takes_images_and_is_stored_once_by_path(
    scripted_project: Path, start_agent
):
    write_script(scripted_project, [[{"type": "record"}, {"type": "saying", "text": "a dot"}],
                                    [{"type": "record"}, {"type": "saying", "text": "still a dot"}]])
    agent = await start_agent(scripted_project, env={"SCRIPTED_IMAGES": "1"})
    assert agent.init.agent_capabilities.prompt_capabilities.image is True
    data = base64.b64encode(PNG).decode()
    await agent.prompt([text_block("what is this?"), image_block(data, "image/png")])
    await agent.prompt("and now?")

    first, second = recorded(scripted_project)
    [image] = first["messages"][-1]["images"]
    assert image["mimeType"] == "image/png" and Path(image["path"]).read_bytes() == PNG and "data" not in image
    assert second["messages"][1]["images"] == [image]  # the history keeps it for the next turn
    store = ConversationStore(scripted_project.resolve())
    entries = store.entries(agent.session_id)
    assert entries[0]["images"] == [image] and data not in json.dumps(entries)
    assert Path(image["path"]).parent == store.directory / "images"
    assert await agent.stop() == 0

    again = await start_agent(scripted_project, new_session=False, env={"SCRIPTED_IMAGES": "1"})
    await again.conn.load_session(cwd=str(scripted_project), session_id=agent.session_id, mcp_servers=[])
    asked = again.client.of("user_message_chunk")
    assert [u.content.type for u in asked] == ["text", "image", "text"]  # the image replayed within its message
    assert asked[1].content.data == data and asked[1].message_id == asked[0].message_id
    for started in (agent, again):
        assert problems(started.wire) == []



async def test_an_image_to_a_provider_that_takes_none_is_refused_naming_the_block(scripted_project: Path, start_agent):
    agent = await start_agent(scripted_project)
    with pytest.raises(RequestError) as refused:
        await agent.prompt([text_block("look"), image_block(base64.b64encode(PNG).decode(), "image/png")])
    assert refused.value.code == -32602 and "prompt[1]" in str(refused.value) and "cannot take images" in str(refused.value)
    assert (await agent.prompt("words only")).stop_reason == "end_turn"  # the session goes on
    for started in (agent,):
        assert problems(started.wire) == []


async def test_load_replays_the_plan_and_gives_each_message_its_id(scripted_project: Path, start_agent):
    write_script(scripted_project, [[{"type": "doing", "id": "p1", "name": "plan",
                                      "arguments": {"entries": [{"content": "one step", "status": "in_progress"}]}}],
                                    [{"type": "saying", "text": "on it"}]])
    first = await start_agent(scripted_project)
    await first.prompt("do the step")
    assert await first.stop() == 0
    second = await start_agent(scripted_project, new_session=False)
    await second.conn.load_session(cwd=str(scripted_project), session_id=first.session_id, mcp_servers=[])
    kinds = [u.session_update for _, u in second.client.updates if u.session_update != "available_commands_update"]
    assert kinds[:5] == ["user_message_chunk", "tool_call", "tool_call_update", "plan", "agent_message_chunk"]
    [asked] = second.client.of("user_message_chunk")
    [replied] = second.client.of("agent_message_chunk")
    assert asked.message_id and replied.message_id and asked.message_id != replied.message_id
    assert [(e.content, e.status) for e in second.client.of("plan")[0].entries] == [("one step", "in_progress")]
    for started in (first, second):
        assert problems(started.wire) == []
