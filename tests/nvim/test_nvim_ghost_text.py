"""Ghost text and next edit in a real headless Neovim against a real elelem-lsp and the fake model
server (tests/completion/fim_server.py, real HTTP): typing in insert mode shows the suggestion,
the keys accept it (whole, or a word at a time) and dismiss it, through Neovim 0.12's own
`vim.lsp.inline_completion` and through the plugin's own extmarks (forced by `ghost_text.builtin
= false`); a renamed parameter brings the other uses as virtual text, and accepting them leaves the
file renamed in one undoable change."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from elelem_lsp.nextedit.zeta import EDITABLE_END, EDITABLE_START

pytestmark = pytest.mark.slow


def inline_virtual_text(nvim, namespace: str) -> list[list[Any]]:
    """[row, text] of each extmark of `namespace` (a Lua expression) that shows text inline or
    below its line, in the buffer's order."""
    return nvim.lua(
        """
        local ns = load('return ' .. ...)()
        local out = {}
        for _, m in ipairs(vim.api.nvim_buf_get_extmarks(0, ns, 0, -1, { details = true })) do
          local d = m[4]
          if d.virt_text_pos == 'inline' or d.virt_text_pos == 'overlay' or d.virt_lines then
            local parts = {}
            for _, chunk in ipairs(d.virt_text or {}) do parts[#parts + 1] = chunk[1] end
            for _, line in ipairs(d.virt_lines or {}) do
              local text = {}
              for _, chunk in ipairs(line) do text[#text + 1] = chunk[1] end
              parts[#parts + 1] = '\\n' .. table.concat(text)
            end
            out[#out + 1] = { m[2], table.concat(parts) }
          end
        end
        return out
        """,
        namespace,
    )


def accepted_once(nvim, key: str = "completion", when: str = "figures.accepted == 1") -> dict[str, Any]:
    """The server's figures for `key` (`elelem.context`), once `when` (Lua, of `figures`) holds:
    by default, once they count one acceptance."""
    return nvim.wait(
        "(function(key) local answer = vim.lsp.get_clients({name='elelem'})[1]:request_sync("
        "'workspace/executeCommand', {command='elelem.context', arguments={vim.empty_dict()}}, 5000)"
        f" local figures = answer and answer.result and answer.result[key] return figures and {when} and figures end)(...)",
        key,
        what=f"the {key} figures where {when}",
    )


def marks(namespace: str) -> str:
    """Lua: how many extmarks of `namespace` (a Lua expression) the current buffer has."""
    return f"#(vim.api.nvim_buf_get_extmarks(0, {namespace}, 0, -1, {{}}))"


BUILTIN = "vim.api.nvim_get_namespaces()['nvim.lsp.inline_completion'] or -1"
OWN = "require('elelem.ghost').namespace"
# Neovim 0.12's own inline completion, and the plugin's own ghost text forced by the setting
BOTH_PATHS = pytest.mark.parametrize(
    ("options", "namespace"), [({}, BUILTIN), ({"ghost_text": {"builtin": False}}, OWN)], ids=["builtin", "own"]
)
GHOST_SETTINGS = {"provider": "llamacpp", "completion": {"api": "completions"}, "nextEdit": {"enabled": False}}


def type_along(nvim) -> None:
    """Opens calc.py's second line for appending and types `a`, as a person would."""
    nvim.lua("vim.api.nvim_win_set_cursor(0, {2, 0})")
    nvim.session.input("Aa")
    nvim.wait("vim.api.nvim_get_mode().mode == 'i' and vim.api.nvim_get_current_line() == '    return a'")


@BOTH_PATHS
def test_typing_shows_ghost_text_and_tab_accepts_it(workspace: Path, start_nvim, fim, options, namespace) -> None:
    (workspace / "calc.py").write_text("def add(a, b):\n    return \n")
    fim.answer = [" + b"]
    nvim = start_nvim(workspace, "calc.py", settings=GHOST_SETTINGS, options=options)
    assert nvim.lua("return require('elelem.ghost').builtin()") is (namespace == BUILTIN)

    type_along(nvim)

    nvim.wait(f"{marks(namespace)} > 0", what="the ghost text")
    assert inline_virtual_text(nvim, namespace) == [[1, " + b"]]
    assert fim.bodies("/v1/completions")[-1]["prompt"].endswith("def add(a, b):\n    return a")
    assert nvim.lines() == ["def add(a, b):", "    return a"]  # shown, not yet in the buffer

    nvim.session.input("<Tab>")
    nvim.wait("vim.api.nvim_get_current_line() == '    return a + b'", what="the suggestion accepted")
    assert nvim.lua("return vim.api.nvim_win_get_cursor(0)") == [2, len("    return a + b")]
    figures = accepted_once(nvim)
    assert figures["charsAccepted"] == len(" + b")


@BOTH_PATHS
def test_ghost_text_accepts_a_word_then_the_rest_and_dismisses(workspace: Path, start_nvim, fim, options, namespace) -> None:
    (workspace / "calc.py").write_text("def add(a, b):\n    return \n")
    fim.answer = [" + b * 2"]
    nvim = start_nvim(workspace, "calc.py", settings=GHOST_SETTINGS, options=options)
    type_along(nvim)
    nvim.wait(f"{marks(namespace)} > 0", what="the ghost text")
    asked = len(fim.requests)

    nvim.session.input("<M-Right>")
    nvim.wait("vim.api.nvim_get_current_line() == '    return a +'", what="a word accepted")
    # the rest still shown after the cursor (the builtin asks the server again, which answers from memory)
    nvim.wait(f"{marks(namespace)} > 0", what="the rest shown")
    assert inline_virtual_text(nvim, namespace) == [[1, " b * 2"]]
    assert len(fim.requests) == asked  # and not asked of the model again

    nvim.session.input("<Tab>")
    nvim.wait("vim.api.nvim_get_current_line() == '    return a + b * 2'", what="the rest accepted")
    figures = accepted_once(nvim, when=f"figures.charsAccepted == {len(' + b * 2')}")
    assert (figures["shown"], figures["accepted"]) == (1, 1)  # a word, then the rest: one suggestion accepted

    # the changed line brings the next suggestion; <C-]> hides it and leaves the buffer as it is
    nvim.wait(f"{marks(namespace)} > 0", what="the next ghost text")
    nvim.session.input("<C-]>")
    nvim.wait(f"{marks(namespace)} == 0", what="the ghost text dismissed")
    assert nvim.lines() == ["def add(a, b):", "    return a + b * 2"]


SOURCE = (
    "def total(values, scale):\n    result = 0\n    for value in values:\n"
    "        result += value * scale\n    return result * scale\n"
)
RENAMED = SOURCE.replace("scale", "factor")


def test_next_edit_shows_the_other_uses_and_accepting_renames_them(workspace: Path, start_nvim, fim) -> None:
    (workspace / "calc.py").write_text(SOURCE)
    region = RENAMED.rstrip("\n")
    fim.answer = ["```calc.py\n", EDITABLE_START + "\n", region[:30], region[30:], "\n" + EDITABLE_END, "\n```"]
    settings = {"provider": "llamacpp", "completion": {"enabled": False}, "nextEdit": {"enabled": True, "api": "chat"}}
    nvim = start_nvim(workspace, "calc.py", settings=settings)
    assert nvim.lua("return vim.lsp.get_clients({name='elelem'})[1].capabilities.experimental.elelem.nextEdit") is True

    nvim.lua("vim.api.nvim_win_set_cursor(0, {1, 18})")
    nvim.session.input("cwfactor<Esc>")
    nvim.wait("vim.api.nvim_get_mode().mode == 'n' and vim.api.nvim_get_current_line() == 'def total(values, factor):'")

    namespace = "require('elelem.next_edit').namespace"
    nvim.wait(f"{marks(namespace)} > 0", what="the next edit")
    assert inline_virtual_text(nvim, namespace) == [[3, "factor"], [4, "factor"]]
    assert "<|user_cursor_is_here|>" in fim.bodies("/v1/chat/completions")[-1]["messages"][-1]["content"]
    assert nvim.lines() == SOURCE.replace("scale", "factor", 1).splitlines()  # shown, not applied

    nvim.session.input("<M-n>")
    nvim.wait("vim.api.nvim_win_get_cursor(0)[1] == 4", what="the jump to the first edit")
    nvim.session.input("<M-y>")
    nvim.wait("vim.api.nvim_buf_get_lines(0, 0, -1, false)[5] == '    return result * factor'", what="the edits applied")
    assert nvim.lines() == RENAMED.splitlines()
    accepted_once(nvim, "nextEdit")

    nvim.command("undo")  # one undoable change: the uses go back, the typed rename stays
    assert nvim.lines() == SOURCE.replace("scale", "factor", 1).splitlines()
