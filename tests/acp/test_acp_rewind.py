"""``/rewind`` over ACP: it lists the turns that changed files, puts the files and the context back
to before one, says what stands in the way (a change made since, a buffer the client has not
saved) until ``force``, and a restart replays the rewind as one thought line. A client that reads and
writes files gets the rewind through ``fs/write_text_file`` (its buffers follow); one that lacks
either, on disk."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scaffold import write_user_settings
from scaffold import wait_until, write_script

COMMAND = "printf 'x = 2\\n' > app.py && rm old.txt && echo new > new.txt"


async def test_rewind_lists_refuses_a_change_made_since_then_forces_and_the_context_goes_back(
    scripted_project: Path, home: Path, start_agent
):
    write_user_settings(home, {"provider": "scripted", "execute": "allow"})
    (scripted_project / "app.py").write_text("x = 1\n")
    (scripted_project / "old.txt").write_text("old\n")
    write_script(scripted_project, [
        [{"type": "saying", "text": "one"}],
        [{"type": "doing", "id": "c1", "name": "execute", "arguments": {"command": COMMAND}}],
        [{"type": "saying", "text": "changed"}],
        [{"type": "record"}, {"type": "saying", "text": "after"}],
    ])
    agent = await start_agent(scripted_project)
    await agent.prompt("first")
    await agent.prompt("change things")
    assert (scripted_project / "new.txt").exists()

    seen = len(agent.client.updates)
    await agent.prompt("/rewind")
    listing = agent.client.text(since=seen)
    assert "turn 1" in listing and "change things" in listing and "added    new.txt" in listing

    (scripted_project / "new.txt").write_text("the person's\n")
    seen = len(agent.client.updates)
    await agent.prompt("/rewind 1")
    refused = agent.client.text(since=seen)
    assert "new.txt: changed since the turn" in refused and "/rewind 1 force" in refused
    assert (scripted_project / "new.txt").read_text() == "the person's\n"

    seen = len(agent.client.updates)
    await agent.prompt("/rewind 1 force")
    assert "rewound turn 1 and the conversation:" in agent.client.text(since=seen)
    assert (scripted_project / "app.py").read_text() == "x = 1\n" and (scripted_project / "old.txt").exists()
    assert not (scripted_project / "new.txt").exists()

    await agent.prompt("and now?")
    [fetch] = [json.loads(line) for line in (scripted_project / ".agents" / "fetches.jsonl").read_text().splitlines()]
    assert [m["content"] for m in fetch["messages"] if m["role"] != "system"] == ["first", "one", "and now?"]
    session_id = agent.session_id
    assert await agent.stop() == 0

    again = await start_agent(scripted_project, new_session=False)
    await again.conn.load_session(cwd=str(scripted_project), session_id=session_id, mcp_servers=[])
    rewound = "rewound to before turn 1: the model no longer sees it or the turns after it\n"  # the host's words
    await wait_until(lambda: rewound in again.client.text("agent_thought_chunk"), "the rewind replayed")


def edit_turn(project: Path) -> None:
    """One turn that edits ``app.py`` and writes ``made.txt``; the next prompts are slash commands."""
    (project / "app.py").write_text("x = 1\n")
    write_script(project, [
        [{"type": "doing", "id": "e1", "name": "edit", "arguments": {"path": "app.py", "old": "x = 1", "new": "x = 2"}},
         {"type": "doing", "id": "w1", "name": "write", "arguments": {"path": "made.txt", "content": "made\n"}}],
        [{"type": "saying", "text": "edited"}],
    ])


async def test_rewind_goes_through_the_clients_buffers_and_a_created_file_is_deleted_on_disk(
    scripted_project: Path, start_agent
):
    edit_turn(scripted_project)
    agent = await start_agent(scripted_project, fs=True)
    await agent.prompt("edit")
    app, made = str(scripted_project / "app.py"), str(scripted_project / "made.txt")
    assert agent.client.buffers == {app: "x = 2\n", made: "made\n"}
    agent.client.writes.clear()

    seen = len(agent.client.updates)
    await agent.prompt("/rewind 1")
    assert "rewound turn 1" in agent.client.text(since=seen)
    assert agent.client.writes == [(app, "x = 1\n")]  # the editor's buffer follows the rewind
    assert agent.client.buffers[app] == "x = 1\n" and (scripted_project / "app.py").read_text() == "x = 1\n"
    assert not (scripted_project / "made.txt").exists()  # ACP cannot delete: the disk does


async def test_an_unsaved_buffer_stands_in_the_way_of_a_rewind_until_forced(scripted_project: Path, start_agent):
    edit_turn(scripted_project)
    agent = await start_agent(scripted_project, fs=True)
    await agent.prompt("edit")
    app = str(scripted_project / "app.py")
    agent.client.buffers[app] = "x = 2  # typed, not saved\n"
    agent.client.writes.clear()

    seen = len(agent.client.updates)
    await agent.prompt("/rewind 1")
    refused = agent.client.text(since=seen)
    assert "app.py: has unsaved changes in the editor" in refused and "/rewind 1 force" in refused
    assert agent.client.writes == [] and agent.client.buffers[app] == "x = 2  # typed, not saved\n"
    assert (scripted_project / "app.py").read_text() == "x = 2\n" and (scripted_project / "made.txt").exists()

    await agent.prompt("/rewind 1 force")
    assert agent.client.writes == [(app, "x = 1\n")] and agent.client.buffers[app] == "x = 1\n"
    assert not (scripted_project / "made.txt").exists()


async def test_without_client_files_a_rewind_writes_the_disk(scripted_project: Path, start_agent):
    edit_turn(scripted_project)
    agent = await start_agent(scripted_project, fs=False)
    await agent.prompt("edit")
    assert (scripted_project / "app.py").read_text() == "x = 2\n"
    await agent.prompt("/rewind 1")
    assert (scripted_project / "app.py").read_text() == "x = 1\n" and not (scripted_project / "made.txt").exists()
    assert agent.client.writes == [] and agent.client.reads == []


@pytest.mark.parametrize("fs", ["read", "write"])
async def test_a_client_with_one_of_the_file_methods_gets_the_rewind_on_disk(scripted_project: Path, start_agent, fs):
    edit_turn(scripted_project)
    agent = await start_agent(scripted_project, fs=fs)
    await agent.prompt("edit")
    app = scripted_project / "app.py"
    assert app.read_text() == "x = 2\n"
    agent.client.writes.clear()

    seen = len(agent.client.updates)
    await agent.prompt("/rewind 1")
    assert "rewound turn 1" in agent.client.text(since=seen)
    assert app.read_text() == "x = 1\n" and not (scripted_project / "made.txt").exists()
    assert agent.client.writes == []  # never asked to write a buffer it cannot read back, or at all
    assert (str(app) in agent.client.reads) == (fs == "read")  # its buffer is asked for where it can be
