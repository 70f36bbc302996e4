"""MCP servers as a person meets them: the reference filesystem server from npm driven through
``elelem.ask``, and the terminal client (``elelem-lsp ask``) taking its servers from the user's
settings file and showing MCP calls like built-in ones, leaving no server process behind."""

from __future__ import annotations

import json

import pytest

from scaffold import add_plugin, run_ask, write_script, write_user_settings

from mcp_servers import FILESYSTEM_INSTALL, SAY_RESULT, alive, call, filesystem_server_path, tool_server
from optional_parts import require, require_program


def filesystem_server(root) -> dict:
    node = require_program("node", "mcp", "apt-get install nodejs npm")
    script = filesystem_server_path()
    require(script.exists(), "mcp", "the reference MCP server @modelcontextprotocol/server-filesystem", FILESYSTEM_INSTALL)
    return {"command": node, "args": [str(script), str(root)]}


async def test_the_reference_filesystem_server_lists_and_reads_through_ask(project, start_editor):
    (project / "src").mkdir()
    add_plugin(project, "scripted")
    script = [
        call("fs__list_directory", path=str(project)),
        call("fs__read_text_file", "2", path=str(project / "README.md")),
        call("fs__read_text_file", "3", path="/etc/hostname"),  # outside the folder it was given
        SAY_RESULT,
    ]
    write_script(project, script)
    servers = {"fs": filesystem_server(project)}
    editor = await start_editor(project, settings={"provider": "scripted", "mcpServers": servers, "allowMcpTools": ["fs"]})
    await editor.ask("look around")
    listed, read, outside = [e for e in editor.events() if e["type"] == "result"]
    assert listed["ok"] and read["ok"] and listed["name"] == "fs__list_directory"
    assert outside["ok"] is False and "denied" in outside["error"].lower()
    tools = {t["name"]: t for t in (await editor.command("elelem.tools", {}))["tools"]}
    assert tools["fs__read_text_file"]["server"] == "fs" and "path" in tools["fs__read_text_file"]["parameters"]["properties"]

    write_script(project, [call("fs__list_directory", path=str(project)), SAY_RESULT])
    listing = json.loads((await editor.ask("list", token="turn-2"))["reply"])["content"]
    assert set(listing.splitlines()) >= {"[FILE] README.md", "[DIR] src"}
    write_script(project, [call("fs__read_text_file", path=str(project / "README.md")), SAY_RESULT])
    assert json.loads((await editor.ask("read", token="turn-3"))["reply"])["content"] == "# hello\n"


def test_the_terminal_takes_servers_from_the_settings_file_and_shows_their_calls(project, home):
    add_plugin(project, "scripted")
    write_script(project, [call("t__echo", text="from the terminal"), call("t__pid", "2"), SAY_RESULT])
    write_user_settings(home, {"mcpServers": {"t": tool_server()}, "allowMcpTools": ["t"]})
    run = run_ask(project, "-p", "scripted", "go")
    assert run.returncode == 0, run.stderr
    assert '+ t: echo text="from the terminal" → 1 line\n+ t: pid → 1 line\n' in run.stderr
    pid = int(json.loads(run.stdout)["content"])
    assert not alive(pid)  # the terminal's server stopped it before exiting


@pytest.mark.parametrize("yes", [[], ["--yes"]], ids=["asked", "yes"])
def test_the_terminal_cannot_be_asked_so_an_unlisted_mcp_tool_is_refused(project, home, yes):
    """--yes answers for commands only: an MCP tool's call is asked still (only the mcp setting silences it)."""
    add_plugin(project, "scripted")
    write_script(project, [call("t__echo", text="x"), SAY_RESULT])
    write_user_settings(home, {"mcpServers": {"t": tool_server()}})
    run = run_ask(project, "-p", "scripted", *yes, "go")
    assert json.loads(run.stdout) == {"ok": False, "error": "not allowed to call t__echo: the prompt was dismissed"}
    assert '+ t: echo text="x" → failed: not allowed to call t__echo: the prompt was dismissed' in run.stderr
