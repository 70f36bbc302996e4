"""clients/nvim in a real headless Neovim against a real elelem-lsp: asking streams the turn into
the transcript and edits the open buffer; providers switch; code actions fix; input and cancel."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def highlighted(nvim, group: str) -> list[str]:
    """The transcript text covered by extmarks of highlight `group`."""
    return nvim.lua(
        """
        local group = ...
        local b = vim.fn.bufnr('elelem://transcript')
        local ns = require('elelem.transcript').namespace
        local out = {}
        for _, m in ipairs(vim.api.nvim_buf_get_extmarks(b, ns, 0, -1, { details = true })) do
          if m[4].hl_group == group then
            local text = vim.api.nvim_buf_get_text(b, m[2], m[3], m[4].end_row, m[4].end_col, {})
            out[#out + 1] = table.concat(text, '\\n')
          end
        end
        return out
        """,
        group,
    )


def test_ask_streams_the_turn_and_edits_the_open_buffer(workspace: Path, start_nvim) -> None:
    nvim = start_nvim(workspace, "a.txt")

    nvim.command("ElelemAsk change x to y")
    nvim.wait_turns(1)

    # the edit landed in the buffer, unsaved, as an ordinary undoable change
    assert nvim.lines() == ["y"]
    assert nvim.lua("return vim.bo.modified") is True
    assert (workspace / "a.txt").read_text() == "x\n"

    transcript = nvim.transcript()
    assert transcript == [
        "> change x to y",
        "planning",
        "I will edit.",
        "+ Edit a.txt",
        "  ok: Edited a.txt — edited",
        "edited.",
        "-- done — scripted · 2 steps",
    ]
    assert highlighted(nvim, "ElelemThinking") == ["planning"]
    assert highlighted(nvim, "ElelemTool") == ["+ Edit a.txt"]
    assert highlighted(nvim, "ElelemPrompt") == ["> change x to y"]
    # the transcript opened in a window of its own, and the cursor stayed in the file
    assert nvim.lua("return vim.fn.bufwinnr('elelem://transcript') ~= -1") is True
    assert nvim.lua("return vim.api.nvim_buf_get_name(0)").endswith("a.txt")

    nvim.command("undo")
    assert nvim.lines() == ["x"]


def test_provider_is_picked_from_the_servers_list_or_named(workspace: Path, start_nvim) -> None:
    nvim = start_nvim(workspace, "a.txt")
    nvim.lua(
        """
        vim.ui.select = function(items, opts, on_choice)
          vim.g.offered, vim.g.select_prompt = items, opts.prompt
          on_choice('second')
        end
        """
    )
    assert {"scripted", "second"} <= set(nvim.lua("return vim.fn.getcompletion('ElelemProvider s', 'cmdline')"))
    nvim.command("ElelemProvider")
    nvim.wait("vim.g.offered ~= nil", what="the provider list")
    assert {"scripted", "second", "stub"} <= set(nvim.lua("return vim.g.offered"))
    assert nvim.lua("return vim.g.select_prompt") == "elelem provider (now scripted): "

    nvim.command("ElelemAsk hello")
    nvim.wait_turns(1)
    assert nvim.transcript()[-2:] == ["second here.", "-- done — second · 1 step"]
    assert nvim.lines() == ["x"]

    nvim.command("ElelemProvider scripted")
    nvim.wait(
        "vim.lsp.get_clients({name='elelem'})[1]:request_sync('workspace/executeCommand',"
        " {command='elelem.providers', arguments={vim.empty_dict()}}, 5000).result.provider == 'scripted'",
        what="the switch back to scripted",
    )
    nvim.command("ElelemAsk change it")
    nvim.wait_turns(2)
    assert nvim.lines() == ["y"]
    assert nvim.transcript()[-1] == "-- done — scripted · 2 steps"


def test_asking_about_a_range_sends_the_selection(workspace: Path, start_nvim) -> None:
    (workspace / "a.txt").write_text("one\ntwo x\nthree\n")
    nvim = start_nvim(workspace, "a.txt")

    nvim.command("2,3ElelemAsk echo this")
    nvim.wait_turns(1)
    transcript = nvim.transcript()
    assert transcript[0] == "> echo this  [a.txt:2-3]"
    assert "File: a.txt (lines 2-3)" in transcript
    assert transcript[transcript.index("File: a.txt (lines 2-3)") + 2 : transcript.index("File: a.txt (lines 2-3)") + 4] == [
        "two x",
        "three",
    ]


def test_visual_selection_is_sent_character_wise(workspace: Path, start_nvim) -> None:
    (workspace / "a.txt").write_text("alpha beta gamma\n")
    nvim = start_nvim(workspace, "a.txt")
    nvim.lua("vim.api.nvim_win_set_cursor(0, {1, 6})")
    nvim.session.input("ve<Esc>")  # select "beta"
    nvim.wait("vim.fn.visualmode() == 'v'")
    captured = nvim.lua(
        """
        local client = vim.lsp.get_clients({ bufnr = 0, name = 'elelem' })[1]
        return require('elelem.selection').range(0, 1, 1, client.offset_encoding)
        """
    )
    assert captured == {"start": {"line": 0, "character": 6}, "end": {"line": 0, "character": 10}}


def test_code_action_fixes_a_diagnostic_from_another_source(workspace: Path, start_nvim) -> None:
    nvim = start_nvim(workspace, "a.txt")
    # a linter's diagnostic, in a namespace of its own (not elelem's)
    nvim.lua(
        """
        local ns = vim.api.nvim_create_namespace('some-linter')
        vim.diagnostic.set(ns, 0, { { lnum = 0, col = 0, end_col = 1, message = 'x should be y', source = 'lint' } })
        """
    )
    nvim.lua(
        """
        vim.lsp.buf.code_action({
          apply = true,
          filter = function(action) return vim.startswith(action.title, 'Fix with elelem') end,
        })
        """
    )
    nvim.wait_turns(1)
    assert nvim.lines() == ["y"]
    transcript = nvim.transcript()
    assert transcript[0] == "> Fix with elelem: x should be y  [a.txt:1]"
    assert transcript[-2:] == ["edited.", "-- done — scripted · 2 steps"]


def test_input_request_is_answered_with_vim_ui_input(workspace: Path, start_nvim) -> None:
    nvim = start_nvim(workspace, "a.txt")
    nvim.lua(
        """
        vim.ui.input = function(opts, on_confirm)
          vim.g.input_prompt = opts.prompt
          on_confirm('Ada')
        end
        """
    )
    nvim.command("ElelemAsk ask me")
    nvim.wait_turns(1)
    assert nvim.lua("return vim.g.input_prompt") == "Your name? "
    assert nvim.transcript()[-2] == "hello Ada"


def test_ask_without_a_prompt_asks_for_one(workspace: Path, start_nvim) -> None:
    nvim = start_nvim(workspace, "a.txt")
    nvim.lua("vim.ui.input = function(opts, on_confirm) vim.g.input_prompt = opts.prompt; on_confirm('change it') end")
    nvim.command("ElelemAsk")
    nvim.wait_turns(1)
    assert nvim.lua("return vim.g.input_prompt") == "Ask elelem: "
    assert nvim.transcript()[0] == "> change it"
    assert nvim.lines() == ["y"]


def test_cancel_stops_the_turn_and_reset_starts_over(workspace: Path, start_nvim) -> None:
    nvim = start_nvim(workspace, "a.txt")
    nvim.command("ElelemAsk wait for it")
    nvim.wait("vim.tbl_contains(vim.api.nvim_buf_get_lines(vim.fn.bufnr('elelem://transcript'), 0, -1, false), 'waiting')",
              what="the turn to start")
    assert nvim.lua("return require('elelem').status()") == "elelem: waiting"
    nvim.command("ElelemCancel")
    nvim.wait_turns(1, timeout=10)
    # the server's footer says it was cancelled: no "[cancelled]" of the client's own
    assert nvim.transcript()[-2:] == ["waiting", "-- cancelled — scripted · 1 step"]
    assert nvim.lua("return require('elelem').status()") == ""

    nvim.command("ElelemReset")
    nvim.wait("vim.api.nvim_buf_get_lines(vim.fn.bufnr('elelem://transcript'), -2, -1, false)[1] == '-- new conversation --'",
              what="the reset note")
    context = nvim.lua(
        "return vim.lsp.get_clients({name='elelem'})[1]:request_sync('workspace/executeCommand',"
        " {command='elelem.context', arguments={vim.empty_dict()}}, 5000).result.messages"
    )
    assert [m["role"] for m in context if m["role"] != "system"] == []


def test_write_creates_a_new_file_as_a_buffer(workspace: Path, start_nvim) -> None:
    nvim = start_nvim(workspace, "a.txt")
    nvim.command("ElelemAsk create b")
    nvim.wait_turns(1)
    assert nvim.transcript()[-3:] == ["  ok: Wrote b.txt — wrote 4 bytes", "edited.", "-- done — scripted · 2 steps"]
    assert (workspace / "b.txt").exists()
    nvim.command(f"buffer {workspace / 'b.txt'}")
    nvim.command("write")
    assert (workspace / "b.txt").read_text() == "new\n"


def test_settings_can_depend_on_the_workspace_folder(workspace: Path, start_nvim) -> None:
    nvim = start_nvim(
        workspace,
        "a.txt",
        settings_lua="function(root) return { workspacePlugins = true,"
        " provider = vim.fs.basename(root) == 'work' and 'second' or 'scripted' } end",
    )
    nvim.command("ElelemAsk hello")
    nvim.wait_turns(1)
    assert nvim.transcript()[-2:] == ["second here.", "-- done — second · 1 step"]


def messages(nvim) -> str:
    return nvim.lua("return vim.api.nvim_exec2('messages', { output = true }).output")


def test_an_agent_edit_never_stops_at_a_hit_enter_prompt(workspace: Path, start_nvim) -> None:
    nvim = start_nvim(workspace, "a.txt")
    nvim.session.ui_attach(80, 10, True)  # a screen, so that a hit-enter prompt can happen
    nvim.command("ElelemAsk change x to y")
    nvim.wait_turns(1)
    assert nvim.lines() == ["y"]
    assert nvim.lua("return vim.api.nvim_get_mode()") == {"mode": "n", "blocking": False}
    said = messages(nvim)
    assert "Applied changes" not in said and "Workspace edit" not in said
    # the server knows this client renders the turn: no plain-client popup with the reply
    assert "elelem: edited." not in said
    nvim.command("undo")
    assert nvim.lines() == ["x"]


def test_thinking_is_dimmed_on_256_colour_terminals_too(workspace: Path, start_nvim) -> None:
    nvim = start_nvim(workspace, "a.txt")
    thinking = "return vim.api.nvim_get_hl(0, { name = 'ElelemThinking' })"
    for setup in ("set notermguicolors", "set termguicolors", "colorscheme default"):
        nvim.command(setup)
        highlight = nvim.lua(thinking)
        assert highlight.get("ctermfg") == 245 and highlight.get("fg") == 0x8A8A8A, (setup, highlight)
    nvim.command("highlight ElelemThinking ctermfg=1 guifg=#ff0000")  # a colour scheme's own choice wins
    assert nvim.lua(thinking).get("ctermfg") == 1


def test_edit_keeps_a_dos_buffer_dos_when_saved(workspace: Path, start_nvim) -> None:
    (workspace / "a.txt").write_bytes(b"w\r\nx\r\nz\r\n")
    nvim = start_nvim(workspace, "a.txt")
    assert nvim.lua("return vim.bo.fileformat") == "dos"

    nvim.command("ElelemAsk change x to y")
    nvim.wait_turns(1)

    assert nvim.lines() == ["w", "y", "z"]  # no stray ^M, no joined lines

    nvim.command("undo")

    # The model's "\n" matches the buffer's CRLF lines; its new line arrives as a line of its own.
    nvim.command("ElelemAsk add a line after w")
    nvim.wait_turns(2)
    assert nvim.lines() == ["w", "x", "x2", "z"]
    nvim.command("write")
    assert (workspace / "a.txt").read_bytes() == b"w\r\nx\r\nx2\r\nz\r\n"
