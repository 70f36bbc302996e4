"""MCP tool calls in a real Neovim's transcript: shown like the built-in tools' calls, the
permission prompt answered by the editor (the test's init allows once)."""

from __future__ import annotations

from pathlib import Path

import pytest

from scaffold import add_plugin, write_script

from mcp_servers import call, tool_server
from nvim.conftest import nvim_binary, start_nvim  # noqa: F401  (the Neovim fixtures, reused)

pytestmark = pytest.mark.slow  # a real Neovim, as the Neovim suite


def test_neovim_shows_an_mcp_call_like_a_built_in_one(project: Path, start_nvim) -> None:  # noqa: F811
    add_plugin(project, "scripted")
    write_script(project, [call("t__echo", text="from nvim"), call("t__fail", "2", message="x"),
                           [{"type": "saying", "text": "both called."}]])
    nvim = start_nvim(project, "README.md", settings={"mcpServers": {"t": tool_server()}})
    nvim.command("ElelemAsk call them")
    nvim.wait_turns(1, timeout=60)
    assert nvim.transcript() == [
        "> call them",
        '+ t: echo text="from nvim"',
        '  ok: t: echo text="from nvim" — 1 line',
        '+ t: fail message="x"',
        '  failed: t: fail message="x": Error executing tool fail',
        "both called.",
        "-- done — scripted · 3 steps",
    ]
