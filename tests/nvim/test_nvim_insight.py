"""clients/nvim answering what the buffer's other language servers know, in a real headless
Neovim: `ruff server` (and basedpyright, for definitions) attached beside elelem-lsp. The agent
breaks a Python file; the model's next fetch holds ruff's message for that line, the
transcript shows the `checked` row and its problems (drawn again from the stored conversation), and `definition`, `references` and `symbols`
land in the right files and lines."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from optional_parts import require
from scaffold import add_plugin, write_script
from test_nvim_conversations import PICKER

pytestmark = pytest.mark.slow

ATTACH = """
local name, cmd, root = ...
vim.lsp.config(name, { cmd = cmd, filetypes = { 'python' }, root_dir = root })
vim.lsp.enable(name)
"""


def attached(nvim, name: str) -> None:
    nvim.wait(
        "(function(n) local c = vim.lsp.get_clients({ bufnr = 0, name = n })[1] return c ~= nil and c.initialized end)(...)",
        name,
        what=f"{name} to attach to the buffer",
    )


@pytest.fixture
def python_project(tmp_path: Path, home: Path) -> Path:
    root = tmp_path / "py"
    root.mkdir()
    add_plugin(root, "scripted")
    (root / "lib.py").write_text("def add(a, b):\n    return a + b\n")
    (root / "app.py").write_text("from lib import add\n\nprint(add(1, 2))\n")
    return root


def test_the_agent_reads_ruffs_problem_with_its_change_and_finds_a_definition(python_project: Path, start_nvim) -> None:
    ruff = shutil.which("ruff")
    pyright = shutil.which("basedpyright-langserver")
    require(ruff is not None, "ruff", "ruff", "python3 -m pip install -e '.[dev]'")
    require(pyright is not None, "basedpyright", "basedpyright", "python3 -m pip install -e '.[dev]'")
    definition = {"type": "doing", "id": "d", "name": "definition", "arguments": {"path": "app.py", "symbol": "add", "line": 3}}
    edit = {"type": "doing", "id": "e", "name": "edit", "arguments": {"path": "app.py", "old": "add(1, 2)", "new": "undefined_name"}}
    navigation = [
        {"type": "doing", "id": "r", "name": "references", "arguments": {"path": "lib.py", "symbol": "add"}},
        {"type": "doing", "id": "s", "name": "symbols", "arguments": {"path": "lib.py"}},
    ]
    write_script(python_project, [[definition], navigation, [edit], [{"type": "record"}]])
    nvim = start_nvim(python_project, "app.py", settings={"checkWaitMs": 5000})
    nvim.lua(ATTACH, "ruff", [ruff, "server"], str(python_project))
    nvim.lua(ATTACH, "basedpyright", [pyright, "--stdio"], str(python_project))
    attached(nvim, "ruff")
    attached(nvim, "basedpyright")

    nvim.command("ElelemAsk break it")
    nvim.wait_turns(1, timeout=60)

    [fetch] = [json.loads(line) for line in (python_project / ".agents/fetches.jsonl").read_text().splitlines()]
    offered = {tool["function"]["name"] for tool in fetch["tools"]}
    assert {"diagnostics", "definition", "references", "symbols"} <= offered
    tool_results = [json.loads(m["content"]) for m in fetch["messages"] if m["role"] == "tool"]
    found, used, symbols, edited = tool_results
    assert found["definitions"] == ["lib.py:1:5  def add(a, b):"]
    assert sorted(used["references"]) == ["app.py:1:17  from lib import add", "app.py:3:7  print(add(1, 2))", "lib.py:1:5  def add(a, b):"]
    assert symbols["symbols"][0] == "lib.py:1:5 function add"
    checked = edited["checked"].splitlines()
    assert checked[0].startswith("checked app.py: ") and "new error" in checked[0]
    assert "app.py:3:7 error: Undefined name `undefined_name` [Ruff F821]" in checked
    assert nvim.lines() == ["from lib import add", "", "print(undefined_name)"]

    transcript = nvim.transcript()
    row = next(line for line in transcript if line.startswith("✓ checked app.py: "))
    assert row == "✓ " + checked[0]
    assert "    app.py:3:7 error: Undefined name `undefined_name`" in transcript

    # the stored conversation keeps the row: drawn again from it, it follows the edit's outcome
    nvim.lua(PICKER)
    nvim.lua("vim.g.pick = 'break it'")
    drawn = nvim.lua("return vim.b[vim.fn.bufnr('elelem://transcript')].changedtick")
    nvim.command("ElelemConversations")  # its footer is the live one's: the buffer's change says it was redrawn
    nvim.wait("vim.b[vim.fn.bufnr('elelem://transcript')].changedtick ~= ...", drawn,
              what="the transcript redrawn from the stored conversation")
    redrawn = nvim.transcript()
    at, live_at = redrawn.index(row), transcript.index(row)
    assert redrawn[at - 2] == transcript[live_at - 2] == "+ Edit app.py"
    assert redrawn[at - 2 : at + 2] == transcript[live_at - 2 : live_at + 2]
    assert "    app.py:3:7 error: Undefined name `undefined_name`" in redrawn[at:]
