"""Stopping a turn from the three places an editor offers, and asking before running commands."""

from __future__ import annotations

import asyncio
import json
import os

import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcRequestCancelled

from scaffold import add_plugin, wait_until, write_script

# The first fetch waits until the test releases it, then says more: a plain fetch on its worker
# thread cannot be cancelled, so it goes on after its turn ends, and its late words must go nowhere.
SLOW = [[{"type": "saying", "text": "partial "}, {"type": "saying", "text": "reply"},
         {"type": "wait_for", "file": "release", "seconds": 30}, {"type": "saying", "text": " too late"},
         {"type": "doing", "id": "late", "name": "read", "arguments": {"path": "too late.txt"}}],
        [{"type": "saying", "text": "next turn works"}]]


def errors_shown(editor):
    return [m for m in editor.client.messages if m.type == lsp.MessageType.Error] + [
        m for m in editor.client.log_messages if m.type == lsp.MessageType.Error
    ]


async def wait_for_report(editor, token):
    await wait_until(lambda: any(v["kind"] == "report" for v in editor.progress[token]), "a report")


async def check_cancelled_and_usable(editor, token):
    assert editor.progress[token][-1] == {"kind": "end", "message": "cancelled"}
    messages = (await editor.command("elelem.context", {}))["messages"]
    # what was said is kept, marked as cancelled so the model knows (docs/conversations.md)
    kept = ["long", "partial reply\n\n[cancelled by the user before the reply was finished]"]
    assert [m["content"] for m in messages[1:]] == kept
    assert (await editor.ask("again", token="after"))["reply"] == "next turn works"
    # The cancelled fetch goes on (a plain one, on its thread) until released, then says more and ends.
    shown = json.dumps(editor.progress)
    agents = editor.root / ".agents"
    (agents / "release").touch()
    await wait_until((agents / "release.ended").exists, "the cancelled fetch to end")
    # what its late events and its end set off on the server is on the wire before this answer
    messages = (await editor.command("elelem.context", {}))["messages"]
    assert [m["content"] for m in messages[1:3]] == kept and "too late" not in json.dumps(messages)
    assert json.dumps(editor.progress) == shown
    assert errors_shown(editor) == []


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize("mode", ["async", "thread"])
async def test_cancel_request_stops_the_turn(project, start_editor, mode):
    add_plugin(project, "scripted")
    write_script(project, SLOW)
    editor = await start_editor(project, settings={"provider": "scripted"}, env={"SCRIPTED_MODE": mode})
    params = lsp.ExecuteCommandParams(command="elelem.ask", arguments=[{"prompt": "long", "progressToken": "t"}])
    reply = asyncio.ensure_future(
        editor.client.protocol.send_request_async(lsp.WORKSPACE_EXECUTE_COMMAND, params, msg_id="long-turn")
    )
    await wait_for_report(editor, "t")
    editor.client.protocol.notify(lsp.CANCEL_REQUEST, lsp.CancelParams(id="long-turn"))
    with pytest.raises(JsonRpcRequestCancelled):
        await reply
    await wait_until(lambda: editor.progress["t"][-1]["kind"] == "end", "the progress to end")
    await check_cancelled_and_usable(editor, "t")


@pytest.mark.parametrize("route", ["window/workDoneProgress/cancel", "elelem.cancel"])
async def test_progress_cancel_and_elelem_cancel_stop_the_turn(project, start_editor, route):
    add_plugin(project, "scripted")
    write_script(project, SLOW)
    editor = await start_editor(project, settings={"provider": "scripted"})
    turn = asyncio.create_task(editor.ask("long", token="t"))
    await wait_for_report(editor, "t")
    if route == "elelem.cancel":
        assert await editor.command("elelem.cancel", {"uri": project.as_uri()}) == {"cancelled": True}
    else:
        editor.client.window_work_done_progress_cancel(lsp.WorkDoneProgressCancelParams(token="t"))
    result = await asyncio.wait_for(turn, 5)
    assert result["cancelled"] is True and result["reply"] == "partial reply"
    await check_cancelled_and_usable(editor, "t")
    assert await editor.command("elelem.cancel", {}) == {"cancelled": False}  # nothing left running


async def test_cancel_kills_a_running_command(project, start_editor, tmp_path):
    add_plugin(project, "scripted")
    pid_file = tmp_path / "pid"
    write_script(project, [[{"type": "doing", "id": "x", "name": "execute",
                             "arguments": {"command": f"echo $$ > {pid_file}; sleep 60"}}]])
    # Without the sandbox: the pid is the host's, the file outside the workspace (test_sandbox.py has the sandbox's).
    editor = await start_editor(project, settings={"provider": "scripted", "execute": "allow", "sandbox": "off"})
    turn = asyncio.create_task(editor.ask("run", token="t"))
    await wait_until(lambda: pid_file.exists() and pid_file.read_text().strip(), "the command to start")
    pid = int(pid_file.read_text())
    await editor.command("elelem.cancel", {})
    assert (await asyncio.wait_for(turn, 5))["cancelled"]
    await wait_until(lambda: not alive(pid), "the process group to be killed", timeout=5)


async def test_cancel_while_the_editor_is_asking_shows_no_error(project, start_editor):
    """pygls #621: a reply that arrives after the turn was cancelled must not pop up an error."""
    add_plugin(project, "scripted")
    write_script(project, [[{"type": "doing", "id": "x", "name": "execute", "arguments": {"command": "true"}}]])
    editor = await start_editor(project, settings={"provider": "scripted"})
    asked, cancelled, answered = asyncio.Event(), asyncio.Event(), asyncio.Event()

    @editor.client.feature(lsp.WINDOW_SHOW_MESSAGE_REQUEST)
    async def slow_answer(params):
        asked.set()
        await cancelled.wait()  # the person answers after the turn was cancelled
        answered.set()
        return lsp.MessageActionItem(title="Allow once")

    turn = asyncio.create_task(editor.ask("run", token="t"))
    await asyncio.wait_for(asked.wait(), 20)
    await editor.command("elelem.cancel", {})
    assert (await asyncio.wait_for(turn, 20))["cancelled"]
    cancelled.set()
    await asyncio.wait_for(answered.wait(), 20)
    # The late answer reaches the server before this request (one pipe, in order).
    assert (await editor.ask("again", token="t2"))["reply"] == "done."
    assert errors_shown(editor) == []


def permission_script(project, command="touch ran.txt", times=1):
    call = {"type": "doing", "id": "x", "name": "execute", "arguments": {"command": command}}
    write_script(project, [[call]] * times)


@pytest.mark.parametrize("answer, runs", [("Allow once", True), ("Deny", False), (None, False)])
async def test_execute_asks_the_person(project, start_editor, answer, runs):
    add_plugin(project, "scripted")
    permission_script(project)
    editor = await start_editor(project, settings={"provider": "scripted"})
    asked = []

    @editor.client.feature(lsp.WINDOW_SHOW_MESSAGE_REQUEST)
    def answer_prompt(params):
        asked.append(params)
        return lsp.MessageActionItem(title=answer) if answer else None

    await editor.ask("run")
    [prompt] = asked
    assert "touch ran.txt" in prompt.message
    assert [a.title for a in prompt.actions] == ["Allow once", "Allow for this session", "Deny"]
    assert (project / "ran.txt").exists() is runs
    [outcome] = [e for e in editor.events() if e["type"] == "result"]
    assert outcome["ok"] is runs
    if not runs:
        assert ("denied" if answer else "dismissed") in outcome["error"]


async def test_allow_for_this_session_asks_once(project, start_editor):
    add_plugin(project, "scripted")
    permission_script(project, times=2)
    editor = await start_editor(project, settings={"provider": "scripted"})
    asked = []

    @editor.client.feature(lsp.WINDOW_SHOW_MESSAGE_REQUEST)
    def answer_prompt(params):
        asked.append(params)
        return lsp.MessageActionItem(title="Allow for this session")

    await editor.ask("run")
    assert len(asked) == 1
    assert [e["ok"] for e in editor.events() if e["type"] == "result"] == [True, True]


async def test_allow_commands_prefixes_and_deny_setting(project, start_editor):
    add_plugin(project, "scripted")
    permission_script(project, "touch allowed.txt")
    editor = await start_editor(project, settings={"provider": "scripted", "allowCommands": ["touch "]})
    await editor.ask("run")
    assert (project / "allowed.txt").exists()

    write_script(project, [[{"type": "doing", "id": "x", "name": "execute", "arguments": {"command": "touch denied.txt"}}]])
    editor.client.set_configuration({"elelem": {"provider": "scripted", "workspacePlugins": True, "execute": "deny"}})
    await editor.command("elelem.reset", {})
    await editor.ask("run", token="t2")
    assert not (project / "denied.txt").exists()
    [outcome] = [e for e in editor.events("t2") if e["type"] == "result"]
    assert "elelem.execute" in outcome["error"]


async def test_client_that_cannot_answer_is_a_refusal(project, start_editor):
    add_plugin(project, "scripted")
    permission_script(project)
    # pytest-lsp's client has no showMessageRequest handler: it answers "method not found"
    editor = await start_editor(project, settings={"provider": "scripted"})
    result = await editor.ask("run")
    assert result["error"] is None
    [outcome] = [e for e in editor.events() if e["type"] == "result"]
    assert outcome["ok"] is False and "could not ask" in outcome["error"]
    assert not (project / "ran.txt").exists()
