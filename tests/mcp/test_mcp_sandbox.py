"""A stdio MCP server whose config says ``sandbox: true`` runs in the command sandbox: it works, from
wherever its interpreter and script are (/tmp included), it writes in the workspace and not outside
it; where no sandbox works it does not start, saying why."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from test_mcp_host import answer, host_for, stopped_hosts  # noqa: F401  (stopped_hosts: a fixture)

from elelem_lsp.agent import sandbox
from elelem_lsp.agent.sandbox import Available
from optional_parts import require_bubblewrap
from mcp_servers import SAY_RESULT, TOOL_SERVER, call, tool_server
from security.sandbox_tmp import tmp_kind, under_tmp, venv_in  # noqa: F401  (fixtures)


@pytest.fixture
def outside():
    """A folder outside the workspace and outside /tmp (where a write lands in the sandbox's private layer)."""
    folder = Path(tempfile.mkdtemp(prefix="elelem-mcp-outside-", dir="/var/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def a_sandbox_works_here():
    require_bubblewrap()


@pytest.mark.parametrize(("sandboxed", "written"), [(True, False), (False, True)])
async def test_a_sandboxed_server_cannot_write_outside_the_workspace(
    project, stopped_hosts, outside, a_sandbox_works_here, sandboxed, written
):
    log = outside / "calls.log"  # the tool server notes each call in this file
    host, frontend, folder = host_for(project, {"t": tool_server(log, sandbox=sandboxed)}, [call("t__echo", text="hi"), SAY_RESULT])
    stopped_hosts.append(host)
    result = answer(await folder.turn("echo"))
    assert log.exists() is written
    if sandboxed:  # it notes its start in the file: it cannot, and ends; its stderr says why
        assert result["ok"] is False, result
        assert any("Read-only file system" in text for _, text in frontend.messages), frontend.messages
    else:
        assert result["ok"] is True, result


async def test_a_sandboxed_server_works_and_writes_in_the_workspace(project, stopped_hosts, a_sandbox_works_here):
    log = project / "calls.log"
    host, frontend, folder = host_for(project, {"t": tool_server(log, sandbox=True)}, [call("t__echo", text="hi"), SAY_RESULT])
    stopped_hosts.append(host)
    assert answer(await folder.turn("echo"))["content"] == "hi"
    assert "echo hi" in log.read_text()


async def test_a_sandboxed_server_whose_interpreter_and_script_are_under_tmp_works(
    project, stopped_hosts, under_tmp, tmp_kind, a_sandbox_works_here
):
    script = under_tmp / "tool_server.py"
    shutil.copy(TOOL_SERVER, script)
    log = project / "calls.log"
    config = {**tool_server(log, sandbox=True), "command": str(venv_in(under_tmp)), "args": [str(script)]}
    host, frontend, folder = host_for(project, {"t": config}, [call("t__echo", text="hi"), SAY_RESULT])
    stopped_hosts.append(host)
    result = answer(await folder.turn("echo"))
    assert result.get("content") == "hi", (result, frontend.messages)
    assert "echo hi" in log.read_text()


async def test_a_sandboxed_servers_writes_to_tmp_do_not_land_outside(project, stopped_hosts, under_tmp, tmp_kind, a_sandbox_works_here):
    log = under_tmp / "calls.log"
    host, frontend, folder = host_for(project, {"t": tool_server(log, sandbox=True)}, [call("t__echo", text="hi"), SAY_RESULT])
    stopped_hosts.append(host)
    result = answer(await folder.turn("echo"))
    assert not log.exists()
    if tmp_kind == "overlay":  # it wrote its log in its private layer, and works
        assert result.get("content") == "hi", (result, frontend.messages)
    else:  # /tmp is read-only: it cannot note its start, and ends saying why
        assert result["ok"] is False, result
        assert any("Read-only file system" in text for _, text in frontend.messages), frontend.messages


async def test_where_no_sandbox_works_a_sandboxed_server_does_not_start_and_says_why(project, stopped_hosts, monkeypatch):
    monkeypatch.setattr(sandbox, "probe", lambda: Available(None, why_not="bubblewrap is not installed"))
    host, frontend, folder = host_for(project, {"t": tool_server(sandbox=True)}, [call("t__echo", text="hi"), SAY_RESULT])
    stopped_hosts.append(host)
    await folder.turn("echo")
    [status] = (await folder.mcp_status())["servers"]
    why = "its settings ask for the sandbox and no sandbox works here: bubblewrap is not installed"
    assert status["state"] == "failed" and why in status["error"]
    assert any(why in text for _, text in frontend.messages)
