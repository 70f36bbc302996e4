"""MCP tools through the real language server: a scripted provider calls them through
``elelem.ask``, the person is asked with ``window/showMessageRequest``, the stream shows the
calls like built-in ones, ``elelem.tools``/``elelem.mcp``/``elelem.reload`` report and restart
them, a streamable-HTTP server on 127.0.0.1 works like a stdio one, and no server process
outlives the language server, whether the editor shuts it down, just goes away or ends it
with a signal."""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path

import pytest
from lsprotocol import types as lsp

from scaffold import add_plugin, wait_until, write_script

from mcp_servers import SAY_RESULT, alive, call, calls_seen, read_log, start_http_tool_server, tool_server

def permission_handler(questions: list[str], answer: str):
    async def show_message_request(params: lsp.ShowMessageRequestParams):
        questions.append(params.message)
        return lsp.MessageActionItem(title=answer)

    return {lsp.WINDOW_SHOW_MESSAGE_REQUEST: show_message_request}


async def test_ask_calls_an_mcp_tool_once_the_person_allows_it(project, start_editor):
    add_plugin(project, "scripted")
    write_script(project, [call("t__echo", text="over LSP"), SAY_RESULT])
    questions: list[str] = []
    editor = await start_editor(
        project, settings={"provider": "scripted", "mcpServers": {"t": tool_server()}},
        handlers=permission_handler(questions, "Allow once"),
    )
    assert (await editor.command("elelem.mcp", {}))["servers"][0]["state"] == "stopped"
    result = await editor.ask("echo")
    assert json.loads(result["reply"]) == {"ok": True, "content": "over LSP", "structured": {"result": "over LSP"}}
    assert questions == ['elelem wants to call echo {"text": "over LSP"} (MCP server t)']
    calls = [e for e in editor.events() if e["type"] in ("doing", "result")]
    assert calls == [
        {"type": "doing", "id": "1", "name": "t__echo", "arguments": {"text": "over LSP"}, "title": 't: echo text="over LSP"'},
        {"type": "result", "id": "1", "name": "t__echo", "ok": True, "title": 't: echo text="over LSP"', "summary": "1 line"},
    ]
    tools = {t["name"]: t for t in (await editor.command("elelem.tools", {}))["tools"]}
    assert tools["t__echo"] == {
        "name": "t__echo", "description": "Answer with the text it was given.", "server": "t",
        "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},  # lean
    }
    [status] = (await editor.command("elelem.mcp", {"uri": project.as_uri()}))["servers"]
    assert status["state"] == "ready" and "echo" in status["tools"]


async def test_a_denied_call_is_an_error_result_and_the_server_never_sees_it(project, start_editor, tmp_path):
    log = tmp_path / "calls.log"
    add_plugin(project, "scripted")
    write_script(project, [call("t__echo", text="no"), SAY_RESULT])
    questions: list[str] = []
    editor = await start_editor(
        project, settings={"provider": "scripted", "mcpServers": {"t": tool_server(log)}, "execute": "allow"},
        handlers=permission_handler(questions, "Deny"),
    )
    result = await editor.ask("echo")
    assert json.loads(result["reply"]) == {"ok": False, "error": "not allowed to call t__echo: the person denied it"}
    assert len(questions) == 1 and calls_seen(log) == []


async def test_elelem_cancel_stops_the_turn_and_cancels_the_call_on_the_server(project, start_editor, tmp_path):
    log = tmp_path / "calls.log"
    add_plugin(project, "scripted")
    write_script(project, [call("t__hang"), SAY_RESULT])
    editor = await start_editor(project, settings={"provider": "scripted", "mcpServers": {"t": tool_server(log)}, "mcp": "allow"})
    turn = asyncio.ensure_future(editor.ask("hang"))
    await wait_until(lambda: "hang started" in calls_seen(log), "the call to reach the server", timeout=30)
    assert await editor.command("elelem.cancel", {}) == {"cancelled": True}
    result = await asyncio.wait_for(turn, 10)
    assert result["cancelled"] is True
    await wait_until(lambda: "hang cancelled" in calls_seen(log), "the server to hear notifications/cancelled")
    write_script(project, [call("t__echo", text="still serving"), SAY_RESULT])
    assert json.loads((await editor.ask("again", token="turn-2"))["reply"])["content"] == "still serving"


async def test_reload_restarts_the_servers_and_shutdown_leaves_no_process(project, start_editor):
    add_plugin(project, "scripted")
    write_script(project, [call("t__pid"), SAY_RESULT])
    editor = await start_editor(project, settings={"provider": "scripted", "mcpServers": {"t": tool_server()}, "mcp": "allow"})
    first = int(json.loads((await editor.ask("pid"))["reply"])["content"])
    assert (await editor.command("elelem.reload", {}))["pluginErrors"] == []
    await wait_until(lambda: not alive(first), "the reloaded server to stop", timeout=15)
    second = int(json.loads((await editor.ask("pid", token="turn-2"))["reply"])["content"])
    assert second != first and alive(second)
    await editor.client.shutdown_session()  # shutdown, then exit: the server waits for its MCP servers
    assert editor.client._server.returncode == 0
    assert not alive(second)


async def test_an_editor_that_goes_away_without_shutdown_leaves_no_process(project, start_editor):
    add_plugin(project, "scripted")
    write_script(project, [call("t__pid"), SAY_RESULT])
    editor = await start_editor(project, settings={"provider": "scripted", "mcpServers": {"t": tool_server()}, "mcp": "allow"})
    pid = int(json.loads((await editor.ask("pid"))["reply"])["content"])
    editor.client._server.stdin.close()  # the editor crashed: no shutdown, no exit
    await editor.client._server.wait()
    await wait_until(lambda: not alive(pid), "the MCP server to stop", timeout=15)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
async def test_a_server_ended_by_a_signal_leaves_no_process(project, start_editor, tmp_path, signum):
    log, command_pid = tmp_path / "calls.log", tmp_path / "command.pid"
    add_plugin(project, "scripted")
    write_script(project, [call("execute", command=f"echo $$ > {command_pid}; exec sleep 100")])
    # Without the sandbox: the pid is the host's, its file outside the workspace (test_sandbox.py has the sandbox's).
    editor = await start_editor(project, settings={
        "provider": "scripted", "mcpServers": {"t": tool_server(log)}, "mcp": "allow", "execute": "allow", "sandbox": "off"})
    turn = asyncio.ensure_future(editor.ask("run"))
    await wait_until(lambda: command_pid.exists() and command_pid.read_text().strip(), "the command to start", timeout=30)
    [mcp_pid] = [int(line.split()[1]) for line in read_log(log) if line.startswith("started ")]
    server = editor.client._server
    server.send_signal(signum)  # the editor gave up waiting for shutdown, or its terminal closed
    await asyncio.wait_for(server.wait(), 5)
    assert server.returncode == -signum  # ended by the signal, once it had stopped what it runs
    assert not alive(int(command_pid.read_text())) and not alive(mcp_pid)
    assert (await turn)["cancelled"] is True  # answered before the server went


async def test_a_streamable_http_server_on_loopback_works_like_a_stdio_one(project, start_editor, tmp_path):
    process, port_file = start_http_tool_server(tmp_path)
    try:
        await wait_until(lambda: Path(port_file).exists(), "the HTTP server to listen", timeout=30)
        url = f"http://127.0.0.1:{Path(port_file).read_text()}/mcp"
        add_plugin(project, "scripted")
        write_script(project, [call("web__add", a=2, b=40), call("web__header", "2", name="X-Elelem-Test"), SAY_RESULT])
        servers = {"web": {"url": url, "headers": {"X-Elelem-Test": "sent along"}}}
        editor = await start_editor(project, settings={"provider": "scripted", "mcpServers": servers, "mcp": "allow"})
        result = await editor.ask("add")
        assert [e["ok"] for e in editor.events() if e["type"] == "result"] == [True, True]
        assert json.loads(result["reply"])["content"] == "sent along"  # the configured header reached the server
        [status] = (await editor.command("elelem.mcp", {}))["servers"]
        assert status["transport"] == "http" and status["state"] == "ready"

        process.terminate()  # the server goes away between two turns: the next call starts the session again
        process.wait(10)
        write_script(project, [call("web__add", a=1, b=1), SAY_RESULT])
        error = json.loads((await editor.ask("add", token="turn-2"))["reply"])["error"]
        assert error == 'MCP server "web" is not available: could not start: All connection attempts failed'
        await wait_until(lambda: any("MCP server 'web'" in m.message for m in editor.client.messages), "the message")
        assert [m.message for m in editor.client.messages if "MCP server 'web'" in m.message] == [
            "elelem: MCP server 'web' could not start: All connection attempts failed"
        ]
    finally:
        process.terminate()
        process.wait(10)


async def test_an_http_server_that_is_not_there_fails_with_a_message(project, start_editor):
    add_plugin(project, "scripted")
    write_script(project, [call("web__add", a=1, b=2), SAY_RESULT])
    # The discard port: nothing listens, so the refusal comes at once; a generous start timeout
    # keeps a busy machine's slow start from being taken for it.
    servers = {"web": {"url": "http://127.0.0.1:9/mcp", "startTimeout": 120}}
    editor = await start_editor(project, settings={"provider": "scripted", "mcpServers": servers, "mcp": "allow"})
    result = await editor.ask("add")
    error = json.loads(result["reply"])["error"]
    assert error.startswith('MCP server "web" is not available: could not start: ')
    await wait_until(lambda: any("MCP server 'web'" in m.message for m in editor.client.messages), "the message")
    [message] = [m for m in editor.client.messages if "MCP server 'web'" in m.message]
    assert message.type == lsp.MessageType.Error


async def test_bad_mcp_settings_are_named_and_the_rest_works(project, start_editor):
    add_plugin(project, "scripted")
    write_script(project, [[{"type": "saying", "text": "fine"}]])
    servers = {"both": {"command": "x", "url": "http://127.0.0.1:1/mcp"}, "t": tool_server(), "ftp": {"url": "ftp://x"}}
    editor = await start_editor(project, settings={"provider": "scripted", "mcpServers": servers, "mcp": "sometimes"})
    assert (await editor.ask("hi"))["reply"] == "fine"
    [warning] = [m.message for m in editor.client.messages if m.type == lsp.MessageType.Warning]
    assert warning == (
        "elelem: elelem.mcpServers.both is left out: command: Extra inputs are not permitted; "
        "elelem.mcpServers.ftp is left out: url: String should match pattern '^https?://'; "
        "invalid value for elelem.mcp: 'sometimes'; using 'ask'"
    )
    assert [s["name"] for s in (await editor.command("elelem.mcp", {}))["servers"]] == ["t"]  # the good one stays
