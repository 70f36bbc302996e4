"""MCP servers a client passes in ``session/new``: attached to the session's folder, their tools
called as ``NAME__tool`` tool calls; a kind we do not speak is refused by name; none outlives an
agent ended by a signal."""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

import pytest
from acp import RequestError
from acp.schema import EnvVariable, McpServerStdio, SseMcpServer

from scaffold import write_user_settings
from scaffold import wait_until, write_script
from security.attacks_cmds import alive

TOOL_SERVER = Path(__file__).resolve().parents[1] / "mcp" / "tool_server.py"


def stdio_server(log: Path) -> McpServerStdio:
    return McpServerStdio(name="tools", command=sys.executable, args=[str(TOOL_SERVER)],
                          env=[EnvVariable(name="TOOL_SERVER_LOG", value=str(log))])


async def test_a_clients_mcp_server_is_attached_and_its_tool_called(scripted_project: Path, tmp_path: Path, start_agent):
    log = tmp_path / "calls.log"
    write_script(scripted_project, [[{"type": "doing", "id": "m1", "name": "tools__echo", "arguments": {"text": "hi there"}}],
                                    [{"type": "say_tool_result"}]])
    agent = await start_agent(scripted_project, new_session=False)
    assert agent.init.agent_capabilities.mcp_capabilities.http is True
    session = await agent.conn.new_session(cwd=str(scripted_project), mcp_servers=[stdio_server(log)])
    agent.client.permission_answers = ["allow_once"]  # mcp: ask, the default
    assert (await agent.prompt("echo", session_id=session.session_id)).stop_reason == "end_turn"
    start, *_, done = agent.client.tool_updates("m1")
    assert start.title == 'tools: echo text="hi there"' and start.kind == "other"
    assert done.status == "completed"
    assert "hi there" in agent.client.text()
    [(call, _options)] = agent.client.permission_requests
    assert call.tool_call_id == "m1" and call.title is None  # the card keeps its title
    assert call.content[0].content.text == 'elelem wants to call echo {"text": "hi there"} (MCP server tools)'
    assert "echo" in log.read_text()


async def test_mcp_denied_by_settings_is_a_failed_call_and_sse_is_refused(scripted_project: Path, home: Path, tmp_path: Path, start_agent):
    write_user_settings(home, {"provider": "scripted", "mcp": "deny"})
    write_script(scripted_project, [[{"type": "doing", "id": "m1", "name": "tools__echo", "arguments": {"text": "x"}}]])
    agent = await start_agent(scripted_project, new_session=False)
    with pytest.raises(RequestError) as sse:
        await agent.conn.new_session(cwd=str(scripted_project), mcp_servers=[
            SseMcpServer(type="sse", name="old", url="http://127.0.0.1:9/sse", headers=[])])
    assert sse.value.code == -32602 and "mcpServers[0]" in str(sse.value) and "sse" in str(sse.value)
    session = await agent.conn.new_session(cwd=str(scripted_project), mcp_servers=[stdio_server(tmp_path / "calls.log")])
    await agent.prompt("echo", session_id=session.session_id)
    assert agent.client.permission_requests == []
    assert agent.client.tool_updates("m1")[-1].status == "failed"
    assert not (tmp_path / "calls.log").exists() or "echo" not in (tmp_path / "calls.log").read_text()


async def test_an_agent_ended_by_sigterm_leaves_no_process(scripted_project: Path, home: Path, tmp_path: Path, start_agent):
    log, command_pid = tmp_path / "calls.log", tmp_path / "command.pid"
    # Without the sandbox: the pid is the host's, its file outside the workspace.
    write_user_settings(home, {"provider": "scripted", "mcp": "allow", "execute": "allow", "sandbox": "off"})
    command = f"echo $$ > {command_pid}; exec sleep 100"
    write_script(scripted_project, [[{"type": "doing", "id": "x1", "name": "execute", "arguments": {"command": command}}]])
    agent = await start_agent(scripted_project, terminal=False, new_session=False)  # the agent runs the command
    session = await agent.conn.new_session(cwd=str(scripted_project), mcp_servers=[stdio_server(log)])
    prompt = asyncio.ensure_future(agent.prompt("run", session_id=session.session_id))
    await wait_until(lambda: command_pid.exists() and command_pid.read_text().strip(), "the command to start", timeout=30)
    [mcp_pid] = [int(line.split()[1]) for line in log.read_text().splitlines() if line.startswith("started ")]
    agent.process.send_signal(signal.SIGTERM)  # the client quit without closing stdin
    await asyncio.wait_for(agent.process.wait(), 5)
    assert agent.process.returncode == -signal.SIGTERM  # ended by the signal, once it had stopped what it runs
    assert not alive(int(command_pid.read_text())) and not alive(mcp_pid)
    with pytest.raises(ConnectionError):  # the prompt ends with the agent
        await prompt


async def test_session_close_stops_the_sessions_mcp_server(scripted_project: Path, home: Path, tmp_path: Path, start_agent):
    log = tmp_path / "calls.log"
    write_user_settings(home, {"provider": "scripted", "mcp": "allow"})
    write_script(scripted_project, [[{"type": "doing", "id": "m1", "name": "tools__echo", "arguments": {"text": "hi"}}]])
    agent = await start_agent(scripted_project, new_session=False)
    session = await agent.conn.new_session(cwd=str(scripted_project), mcp_servers=[stdio_server(log)])
    await agent.prompt("echo", session_id=session.session_id)
    [mcp_pid] = [int(line.split()[1]) for line in log.read_text().splitlines() if line.startswith("started ")]
    assert alive(mcp_pid)
    await agent.conn.close_session(session_id=session.session_id)
    await wait_until(lambda: not alive(mcp_pid), "the MCP server to stop")
    assert agent.process.returncode is None  # the agent goes on serving
