"""A stdio MCP server whose config says ``sandbox: true`` runs in the command sandbox: it works, it
writes in the workspace and not outside it; where no sandbox works it does not start, saying why."""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from test_mcp_host import answer, host_for, stopped_hosts  # noqa: F401  (stopped_hosts: a fixture)

from elelem_lsp.agent import sandbox
from elelem_lsp.agent.sandbox import Available, probe
from mcp_servers import SAY_RESULT, TOOL_SERVER, call, tool_server


def sandboxed_server(project: Path, log: Path | None = None, **config) -> dict:
    """The tool server's entry with its script copied into the workspace: the sandbox has a /tmp of
    its own, so a checkout under /tmp (as CI's may be) is not there for the server to start from."""
    script = project / ".tool_server.py"
    shutil.copy(TOOL_SERVER, script)
    return {**tool_server(log, **config), "args": [str(script)]}


@pytest.fixture
def outside():
    """A folder outside the workspace and outside /tmp (the sandbox has a /tmp of its own)."""
    folder = Path(tempfile.mkdtemp(prefix="elelem-mcp-outside-", dir="/var/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def a_sandbox_works_here():
    if not sys.platform.startswith("linux"):
        pytest.skip(f"checked with bubblewrap, on Linux ({sys.platform} here)")
    assert probe().kind == "bubblewrap", f"no sandbox works on this Linux machine: {probe().why_not}"


@pytest.mark.parametrize(("sandboxed", "written"), [(True, False), (False, True)])
async def test_a_sandboxed_server_cannot_write_outside_the_workspace(
    project, stopped_hosts, outside, a_sandbox_works_here, sandboxed, written
):
    log = outside / "calls.log"  # the tool server notes each call in this file
    host, frontend, folder = host_for(project, {"t": sandboxed_server(project, log, sandbox=sandboxed)}, [call("t__echo", text="hi"), SAY_RESULT])
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
    host, frontend, folder = host_for(project, {"t": sandboxed_server(project, log, sandbox=True)}, [call("t__echo", text="hi"), SAY_RESULT])
    stopped_hosts.append(host)
    assert answer(await folder.turn("echo"))["content"] == "hi"
    assert "echo hi" in log.read_text()


async def test_where_no_sandbox_works_a_sandboxed_server_does_not_start_and_says_why(project, stopped_hosts, monkeypatch):
    monkeypatch.setattr(sandbox, "probe", lambda: Available(None, why_not="bubblewrap is not installed"))
    host, frontend, folder = host_for(project, {"t": sandboxed_server(project, sandbox=True)}, [call("t__echo", text="hi"), SAY_RESULT])
    stopped_hosts.append(host)
    await folder.turn("echo")
    [status] = (await folder.mcp_status())["servers"]
    why = "its settings ask for the sandbox and no sandbox works here: bubblewrap is not installed"
    assert status["state"] == "failed" and why in status["error"]
    assert any(why in text for _, text in frontend.messages)
