"""`:ElelemRewind` in a real Neovim: the turn's edit, unsaved in the buffer, is picked from the
server's list and rewound in the buffer; a change typed since is listed and overwritten only when
"Overwrite them" is picked."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def test_rewind_puts_the_buffer_back_after_asking_about_a_change_typed_since(workspace: Path, start_nvim) -> None:
    nvim = start_nvim(workspace, "a.txt")
    nvim.command("ElelemAsk change x to y")
    nvim.wait_turns(1)
    assert nvim.lines() == ["y"] and (workspace / "a.txt").read_text() == "x\n"
    nvim.lua(
        """
        vim.g.prompts = {}
        vim.ui.select = function(items, opts, on_choice)
          local shown = {}
          for _, item in ipairs(items) do shown[#shown + 1] = opts.format_item and opts.format_item(item) or item end
          vim.g.prompts = vim.list_extend(vim.g.prompts, { opts.prompt .. table.concat(shown, ' | ') })
          on_choice(items[1])
        end
        vim.api.nvim_buf_set_lines(0, 0, -1, false, { 'y', 'typed since' })
        """
    )
    nvim.command("ElelemRewind")
    nvim.wait("#vim.g.prompts == 2", what="the list, then the conflict")
    nvim.wait("vim.api.nvim_buf_get_lines(0, 0, -1, false)[1] == 'x'", what="the buffer rewound")
    listed, conflict = nvim.lua("return vim.g.prompts")
    assert listed.startswith("rewind to before: turn 1 · ") and "change x to y" in listed and "1 file" in listed
    assert conflict == "changed since turn 1:\na.txt: has unsaved changes in the editor\nOverwrite them | Cancel"
    assert nvim.lines() == ["x"]
