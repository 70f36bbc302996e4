"""`:ElelemRewind` in a real Neovim against a real elelem-lsp: the turn's edit, unsaved in the
buffer, is picked from the server's list; a change typed since is listed, and "Cancel" leaves the
buffer as it is; asked again, "Overwrite them" rewinds it in the buffer, as a workspace edit that
`u` undoes."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

PICKER = """
-- vim.ui.select records each prompt with its items and picks the item named vim.g.answers[n]
-- (the first item when there is no answer for it)
vim.g.prompts = {}
vim.ui.select = function(items, opts, on_choice)
  local shown = {}
  for _, item in ipairs(items) do shown[#shown + 1] = opts.format_item and opts.format_item(item) or item end
  vim.g.prompts = vim.list_extend(vim.g.prompts, { opts.prompt .. table.concat(shown, ' | ') })
  local wanted = (vim.g.answers or {})[#vim.g.prompts]
  for _, item in ipairs(items) do
    if item == wanted then return on_choice(item) end
  end
  on_choice(items[1])
end
"""


def test_rewind_refused_then_forced_puts_the_buffer_back_and_u_undoes_it(workspace: Path, start_nvim) -> None:
    nvim = start_nvim(workspace, "a.txt")
    nvim.command("ElelemAsk change x to y")
    nvim.wait_turns(1)
    assert nvim.lines() == ["y"] and (workspace / "a.txt").read_text() == "x\n"
    nvim.lua(PICKER)
    nvim.lua("vim.api.nvim_buf_set_lines(0, 0, -1, false, { 'y', 'typed since' })")

    nvim.lua("vim.g.answers = { [2] = 'Cancel' }")
    nvim.command("ElelemRewind")
    nvim.wait("#vim.g.prompts == 2", what="the list, then the conflict")
    listed, conflict = nvim.lua("return vim.g.prompts")
    assert listed.startswith("rewind to before: turn 1 · ") and "change x to y" in listed and "1 file" in listed
    assert conflict == "changed since turn 1:\na.txt: has unsaved changes in the editor\nOverwrite them | Cancel"
    # the conflict is asked about once the server refused (no edit sent); "Cancel" asks it nothing more
    assert nvim.lines() == ["y", "typed since"] and nvim.lua("return vim.bo.modified")

    nvim.lua("vim.g.prompts, vim.g.answers, vim.g.notified = {}, { [2] = 'Overwrite them' }, {}")
    nvim.lua("vim.notify = function(message) vim.g.notified = vim.list_extend(vim.g.notified, { message }) end")
    nvim.command("ElelemRewind")
    nvim.wait("vim.deep_equal(vim.api.nvim_buf_get_lines(0, 0, -1, false), { 'x' })", what="the buffer rewound")
    assert nvim.lua("return vim.g.prompts")[1] == conflict
    assert nvim.lua("return vim.bo.modified") and (workspace / "a.txt").read_text() == "x\n"
    nvim.wait("#vim.g.notified > 0", what="what the rewind did")
    assert nvim.lua("return vim.g.notified") == ["elelem: rewound turn 1 and the conversation"]  # the server's words

    nvim.command("normal! u")  # the rewind was an edit of the buffer: undo takes it back
    assert nvim.lines() == ["y", "typed since"]
