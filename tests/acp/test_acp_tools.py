"""Tool calls over ACP: ``tool_call`` / ``tool_call_update`` with titles, kinds and locations; edits as
diffs through the client's ``fs/write_text_file`` or on disk; commands in a client terminal or our own
subprocess; permission asked with ``session/request_permission``."""

from __future__ import annotations

from pathlib import Path

import pytest

from scaffold import write_user_settings
from optional_parts import require_bubblewrap
from scaffold import write_script


def doing(call_id: str, name: str, **arguments) -> dict:
    return {"type": "doing", "id": call_id, "name": name, "arguments": arguments}


ECHO_RESULT = [{"type": "say_tool_result"}]


async def test_a_read_is_a_tool_call_pending_then_running_then_completed(scripted_project: Path, start_agent):
    write_script(scripted_project, [[doing("r1", "read", path="README.md")], ECHO_RESULT])
    agent = await start_agent(scripted_project, fs=False)
    assert (await agent.prompt("read it")).stop_reason == "end_turn"
    start, running, done = agent.client.tool_updates("r1")
    assert start.session_update == "tool_call"
    assert (start.title, start.kind, start.status) == ("Read README.md", "read", "pending")
    assert [loc.path for loc in start.locations] == [str(scripted_project / "README.md")]
    assert start.raw_input == {"path": "README.md"}
    assert (running.session_update, running.status) == ("tool_call_update", "in_progress")
    assert done.status == "completed" and done.raw_output == {"ok": True, "summary": "1 line"}
    assert "# hello" in agent.client.text()  # the model got the file


async def test_a_failed_read_is_failed_with_the_error_as_content(scripted_project: Path, start_agent):
    write_script(scripted_project, [[doing("r1", "read", path="missing.txt"), doing("r2", "read", path="../../etc/passwd")]])
    agent = await start_agent(scripted_project)
    await agent.prompt("read them")
    for call_id, words in (("r1", "missing.txt does not exist"), ("r2", "outside the workspace")):
        done = agent.client.tool_updates(call_id)[-1]
        assert done.status == "failed"
        assert words in done.content[0].content.text
    assert agent.client.reads == []  # nothing outside was asked of the client either


async def test_reads_go_through_the_client_and_see_its_unsaved_buffer(scripted_project: Path, start_agent):
    write_script(scripted_project, [[doing("r1", "read", path="README.md")], ECHO_RESULT])
    agent = await start_agent(scripted_project, fs=True)
    agent.client.buffers[str(scripted_project / "README.md")] = "# typed, not saved\n"
    await agent.prompt("read it")
    assert str(scripted_project / "README.md") in agent.client.reads
    assert "typed, not saved" in agent.client.text()


async def test_an_edit_goes_through_fs_write_text_file_with_a_diff(scripted_project: Path, start_agent):
    path = scripted_project / "app.py"
    path.write_text("x = 1\ny = 2\n")
    write_script(scripted_project, [[doing("e1", "edit", path="app.py", old="y = 2", new="y = 3")]])
    agent = await start_agent(scripted_project, fs=True)
    agent.client.buffers[str(path)] = "x = 10\ny = 2\n"  # unsaved in the editor: the edit lands on it
    await agent.prompt("change y")
    assert agent.client.writes == [(str(path), "x = 10\ny = 3\n")]
    start, running, done = agent.client.tool_updates("e1")
    assert (start.title, start.kind) == ("Edit app.py", "edit")
    assert done.status == "completed"
    [diff] = done.content
    assert (diff.type, diff.path, diff.old_text, diff.new_text) == ("diff", str(path), "x = 10\ny = 2\n", "x = 10\ny = 3\n")


async def test_without_client_files_an_edit_is_written_to_disk_keeping_its_line_endings(scripted_project: Path, start_agent):
    path = scripted_project / "win.txt"
    path.write_bytes(b"one\r\ntwo\r\n")
    write_script(scripted_project, [[doing("e1", "edit", path="win.txt", old="two", new="2"),
                                     doing("w1", "write", path="new/made.txt", content="fresh\n")]])
    agent = await start_agent(scripted_project, fs=False)
    await agent.prompt("edit")
    assert path.read_bytes() == b"one\r\n2\r\n"
    assert (scripted_project / "new" / "made.txt").read_text() == "fresh\n"
    assert agent.client.writes == []
    [edit_diff] = agent.client.tool_updates("e1")[-1].content
    assert (edit_diff.old_text, edit_diff.new_text) == ("one\r\ntwo\r\n", "one\r\n2\r\n")
    [write_diff] = agent.client.tool_updates("w1")[-1].content
    assert (write_diff.old_text, write_diff.new_text) == (None, "fresh\n")
    assert agent.client.tool_updates("w1")[0].title == "Write new/made.txt"


async def test_an_edit_that_cannot_apply_changes_nothing(scripted_project: Path, start_agent):
    path = scripted_project / "app.py"
    path.write_text("a = 1\n")
    write_script(scripted_project, [[doing("e1", "edit", path="app.py", old="nope", new="x"),
                                     doing("e2", "write", path="../escape.txt", content="x")]])
    agent = await start_agent(scripted_project, fs=True)
    await agent.prompt("edit")
    assert agent.client.writes == [] and path.read_text() == "a = 1\n"
    assert not (scripted_project.parent / "escape.txt").exists()
    assert [agent.client.tool_updates(c)[-1].status for c in ("e1", "e2")] == ["failed", "failed"]


async def test_confirm_edits_asks_and_a_rejection_leaves_the_file(scripted_project: Path, home: Path, start_agent):
    write_user_settings(home, {"provider": "scripted", "confirmEdits": True})
    path = scripted_project / "app.py"
    path.write_text("a = 1\n")
    write_script(scripted_project, [[doing("e1", "edit", path="app.py", old="1", new="2")]])
    agent = await start_agent(scripted_project, fs=True)
    agent.client.permission_answers = ["reject_once"]
    await agent.prompt("edit")
    [(call, options)] = agent.client.permission_requests
    assert call.tool_call_id == "e1"
    assert [o.kind for o in options] == ["allow_once", "allow_always", "reject_once"]  # as the card shows them
    question, diff = call.content  # what is asked, and what the edit would do
    assert question.content.text == "elelem wants to edit app.py" and call.title is None  # the card keeps "Edit app.py"
    assert (diff.type, diff.path, diff.old_text, diff.new_text) == ("diff", str(path), "a = 1\n", "a = 2\n")
    assert agent.client.writes == [] and path.read_text() == "a = 1\n"
    assert "rejected" in agent.client.tool_updates("e1")[-1].content[0].content.text


@pytest.mark.parametrize("sandbox", ["auto", "off"])
async def test_a_command_runs_in_a_client_terminal(scripted_project: Path, home: Path, start_agent, sandbox: str):
    if sandbox == "auto":
        require_bubblewrap()
    write_user_settings(home, {"provider": "scripted", "execute": "allow", "sandbox": sandbox})
    write_script(scripted_project, [[doing("x1", "execute", command="echo made here; pwd")], ECHO_RESULT])
    agent = await start_agent(scripted_project, terminal=True)
    await agent.prompt("run")
    [terminal] = agent.client.terminals.values()
    if sandbox == "auto":  # the client's terminal starts bubblewrap, which runs the shell
        assert Path(terminal.command[0]).name == "bwrap" and terminal.command[-3:] == ["/bin/sh", "-c", "echo made here; pwd"]
    else:
        assert terminal.command == ["/bin/sh", "-c", "echo made here; pwd"]
    assert terminal.cwd == str(scripted_project) and terminal.released
    start, *middle, done = agent.client.tool_updates("x1")
    assert (start.title, start.kind) == ("Run echo made here; pwd", "execute")
    shown = [c.terminal_id for u in middle for c in (u.content or []) if c.type == "terminal"]
    assert shown == ["term-1"]  # the person sees the terminal while it runs
    assert done.status == "completed" and done.content[0].terminal_id == "term-1"
    assert "made here" in agent.client.text() and str(scripted_project) in agent.client.text()


async def test_without_client_terminals_a_command_runs_here_and_shows_its_output(scripted_project: Path, home: Path, start_agent):
    write_user_settings(home, {"provider": "scripted", "execute": "allow"})
    write_script(scripted_project, [[doing("x1", "execute", command="echo out; exit 3")], ECHO_RESULT])
    agent = await start_agent(scripted_project, terminal=False)
    await agent.prompt("run")
    assert agent.client.terminals == {}
    done = agent.client.tool_updates("x1")[-1]
    assert done.status == "completed"
    assert done.content[0].content.text == "out\n(exit 3)"
    assert '"exit_code":3' in agent.client.text()


async def test_permission_allow_once_asks_again_always_does_not_reject_refuses(scripted_project: Path, start_agent):
    require_bubblewrap()  # the default: commands run in it
    marker = scripted_project / "ran.txt"
    command = "echo x >> ran.txt"
    write_script(scripted_project, [[doing(f"x{n}", "execute", command=command) for n in range(1, 6)]])
    agent = await start_agent(scripted_project, terminal=False)
    # once, once, always, (not asked), then a new session... reject
    agent.client.permission_answers = ["allow_once", "allow_once", "allow_always"]
    await agent.prompt("run five times")
    assert len(agent.client.permission_requests) == 3
    assert [c.tool_call_id for c, _ in agent.client.permission_requests] == ["x1", "x2", "x3"]
    assert {c.title for c, _ in agent.client.permission_requests} == {"Run echo x >> ran.txt (in the sandbox)"}
    assert marker.read_text() == "x\n" * 5

    other = await agent.conn.new_session(cwd=str(scripted_project), mcp_servers=[])
    write_script(scripted_project, [[doing("y1", "execute", command=command)], [doing("y2", "execute", command=command)]])
    agent.client.permission_answers = ["reject_once", "cancelled"]
    await agent.prompt("run", session_id=other.session_id)
    assert marker.read_text() == "x\n" * 5  # "always" belonged to the first session
    first, second = (agent.client.tool_updates(c)[-1] for c in ("y1", "y2"))
    assert first.status == second.status == "failed"
    assert "denied" in first.content[0].content.text and "dismissed" in second.content[0].content.text


async def test_allow_commands_and_deny_need_no_question(scripted_project: Path, home: Path, start_agent):
    write_user_settings(home, {"provider": "scripted", "execute": "deny", "allowCommands": ["echo"]})
    write_script(scripted_project, [[doing("x1", "execute", command="echo ok"), doing("x2", "execute", command="touch no")]])
    agent = await start_agent(scripted_project, terminal=False)
    await agent.prompt("run")
    assert agent.client.permission_requests == []
    assert agent.client.tool_updates("x1")[-1].status == "completed"
    assert agent.client.tool_updates("x2")[-1].status == "failed"
    assert not (scripted_project / "no").exists()


async def test_tool_call_ids_a_provider_repeats_get_cards_of_their_own(scripted_project: Path, start_agent):
    # a plugin without ids of its own: the agent names them call_1, call_2... again at each step
    write_script(scripted_project, [
        [doing("", "read", path="README.md")], [doing("", "list"), doing("", "read", path="gone")], [],  # one turn
        [doing("", "read", path="README.md")], [],  # the next
    ])
    agent = await start_agent(scripted_project)
    await agent.prompt("look")
    await agent.prompt("again")
    started = agent.client.of("tool_call")
    assert [(u.tool_call_id, u.title) for u in started] == [
        ("call_1", "Read README.md"), ("call_1-2", "List ."), ("call_2", "Read gone"), ("call_1-3", "Read README.md")]
    finished = [agent.client.tool_updates(u.tool_call_id)[-1].status for u in started]
    assert finished == ["completed", "completed", "failed", "completed"]


@pytest.mark.parametrize(("sandbox", "note"), [("auto", "in the sandbox"), ("off", "no sandbox")])
async def test_the_permission_card_of_a_command_says_whether_it_runs_in_the_sandbox(
    scripted_project: Path, home: Path, start_agent, sandbox: str, note: str
):
    if sandbox == "auto":
        require_bubblewrap()
    write_user_settings(home, {"provider": "scripted", "sandbox": sandbox})
    write_script(scripted_project, [[doing("x1", "execute", command="echo hi")], ECHO_RESULT])
    agent = await start_agent(scripted_project, terminal=True)
    await agent.prompt("run")
    [(call, _options)] = agent.client.permission_requests
    assert (call.tool_call_id, call.title) == ("x1", f"Run echo hi ({note})")
    [question] = call.content
    assert question.content.text == f"elelem wants to run: echo hi ({note})"
    # answered, the card shows what the command does (its terminal, its end), not the question
    *_, answered, _running, done = agent.client.tool_updates("x1")
    assert answered.content == [] and [c.type for c in done.content] == ["terminal"]
    assert done.status == "completed" and "hi" in agent.client.text()


async def test_the_permission_card_of_a_new_file_shows_its_text(scripted_project: Path, home: Path, start_agent):
    write_user_settings(home, {"provider": "scripted", "confirmEdits": True})
    write_script(scripted_project, [[doing("w1", "write", path="made.txt", content="fresh\n")]])
    agent = await start_agent(scripted_project, fs=True)
    await agent.prompt("write")
    [(call, _options)] = agent.client.permission_requests
    question, diff = call.content
    assert question.content.text == "elelem wants to write made.txt"
    assert (diff.path, diff.old_text, diff.new_text) == (str(scripted_project / "made.txt"), None, "fresh\n")
    assert agent.client.writes == [(str(scripted_project / "made.txt"), "fresh\n")]
    [diff_after] = agent.client.tool_updates("w1")[-1].content  # the finished card keeps the diff alone
    assert diff_after.type == "diff"
