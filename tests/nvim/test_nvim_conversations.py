"""clients/nvim and stored conversations: the transcript drawn from `elelem.transcript` /
`elelem.resume` entries (turns, tool rows, compactions), the dim line of `context`/`compacted`
events, and what a newer server may send (unknown events and entry kinds, MCP tool names)."""

from __future__ import annotations

from pathlib import Path

import pytest

from scaffold import add_plugin, write_script
from stored_transcripts import (CONVERSATION, CONVERSATION_LINES, EVENTS, EVENTS_LINES, EVENTS_RESULT, NOTES,
                                ODD, ODD_LINES, PLANNED_SCRIPT, PLANNED_USAGE, SERVED_LINES, SHORT, SHORT_LINES,
                                STORED_WITHOUT_WORDS, WORDED_EVENTS,
                                SUGGESTION_CONTEXT, WORDED_CONVERSATION, WORDED_CONVERSATION_LINES, WORDED_LINES,
                                WORDED_NOTES, WORDED_RESULT,
                                check_conversation_labels)
from test_nvim_client import highlighted, messages

from elelem_lsp.host.conversations import ConversationStore, new_id

pytestmark = pytest.mark.slow


def show(nvim, conversation) -> list[str]:
    nvim.lua("require('elelem.transcript').show_conversation(...)", conversation)
    return nvim.transcript()


def test_a_stored_conversation_is_drawn_turn_by_turn(workspace: Path, start_nvim) -> None:
    nvim = start_nvim(workspace)
    assert show(nvim, CONVERSATION) == CONVERSATION_LINES
    assert highlighted(nvim, "ElelemNote") == ["-- 12 turns compacted into a summary"]
    assert highlighted(nvim, "ElelemPrompt") == ["> read the notes please", "> break", "> stop"]
    assert highlighted(nvim, "ElelemTool") == ['+ read(path="notes.txt")', '+ files__stat(deep={"a":[1,2]}, path="x")']
    assert highlighted(nvim, "ElelemToolError") == ["  failed: files__stat: no such file"]
    assert highlighted(nvim, "ElelemError") == ["Error: boom", "[cancelled]"]

    # drawing another conversation replaces this one, highlights included
    assert show(nvim, SHORT) == SHORT_LINES
    assert highlighted(nvim, "ElelemNote") == [] and highlighted(nvim, "ElelemToolError") == []


def test_a_stored_turn_is_drawn_in_the_servers_words_as_it_was_live(workspace: Path, start_nvim) -> None:
    nvim = start_nvim(workspace)
    assert show(nvim, WORDED_CONVERSATION) == WORDED_CONVERSATION_LINES
    assert highlighted(nvim, "ElelemNote") == ["-- 1,234 in · 567 out · $0.01"]  # the usage row, dim as live
    assert highlighted(nvim, "ElelemToolError") == ["  failed: Edit a.py: old text not found"]


def test_odd_or_newer_entries_are_skipped_not_fatal(workspace: Path, start_nvim) -> None:
    nvim = start_nvim(workspace)
    assert show(nvim, ODD) == ODD_LINES
    assert show(nvim, {"id": "c3", "title": "empty", "entries": []}) == [""]
    assert show(nvim, {"id": "c4"}) == [""]


@pytest.mark.parametrize(("events", "result", "lines", "notes"), [(EVENTS, EVENTS_RESULT, EVENTS_LINES, NOTES),
                                                                (WORDED_EVENTS, WORDED_RESULT, WORDED_LINES, WORDED_NOTES)],
                         ids=["an older server's, worded here", "the server's words, as they are"])
def test_a_turns_events_and_its_context_and_compacted_notes_are_drawn(workspace: Path, start_nvim, events, result,
                                                                       lines, notes) -> None:
    nvim = start_nvim(workspace)
    nvim.lua(
        """
        local events, result = ...
        local t = require('elelem.transcript')
        t.start_turn('k', 'long one')
        t.render_events('k', events)
        t.finish_turn('k', nil, result)
        """,
        events,
        result,
    )
    assert nvim.transcript() == lines
    assert highlighted(nvim, "ElelemNote") == notes


# -- against the real server ---------------------------------------------------------------------

PICKER = """
-- vim.ui.select records what it offers and picks the item whose label contains vim.g.pick
vim.ui.select = function(items, opts, on_choice)
  local labels = vim.tbl_map(opts.format_item or tostring, items)
  vim.g.offered, vim.g.select_prompt = labels, opts.prompt
  for i, label in ipairs(labels) do
    if label:find(vim.g.pick, 1, true) then
      return on_choice(items[i], i)
    end
  end
  on_choice(nil, nil)
end
vim.g.notified = {}
vim.notify = function(message, level)
  vim.g.notified = vim.list_extend(vim.g.notified, { { message, level } })
end
"""


def conversations(nvim) -> list[dict]:
    return nvim.lua(
        "return vim.lsp.get_clients({name='elelem'})[1]:request_sync('workspace/executeCommand',"
        " {command='elelem.conversations', arguments={vim.empty_dict()}}, 5000).result"
    )


def ask(nvim, prompt: str, turns: int) -> None:
    nvim.command(f"ElelemAsk {prompt}")
    nvim.wait_turns(turns)


def three_conversations(nvim) -> None:
    """"note one", "note two", "note three": one turn each, in conversations of their own."""
    for number, prompt in enumerate(["note one", "note two", "note three"], start=1):
        if number > 1:
            nvim.command("ElelemNewConversation")
            nvim.wait("vim.deep_equal(vim.api.nvim_buf_get_lines(vim.fn.bufnr('elelem://transcript'), 0, -1, false),"
                      " { '-- new conversation --' })", what="the transcript to start over")
        ask(nvim, prompt, number)


def test_conversations_are_listed_newest_first_and_resumed(workspace: Path, start_nvim) -> None:
    nvim = start_nvim(workspace, "a.txt")
    nvim.lua(PICKER)
    three_conversations(nvim)
    assert nvim.transcript() == ["-- new conversation --", "", "> note three", "note three", "-- done — scripted · 1 step"]

    nvim.lua("vim.g.pick = 'note one'")
    nvim.command("ElelemConversations")
    nvim.wait("vim.startswith(vim.api.nvim_buf_get_lines(vim.fn.bufnr('elelem://transcript'), 0, 1, false)[1], '> note one')",
              what="the transcript redrawn from the resumed conversation")
    check_conversation_labels(nvim.lua("return vim.g.offered"), ["note three", "note two", "note one"])
    assert nvim.lua("return vim.g.select_prompt") == "elelem conversation: "
    assert nvim.transcript() == ["> note one", "note one", "-- done — scripted · 1 step"]  # stored with its steps

    # the next turn continues the resumed conversation: the provider is sent its earlier turn
    ask(nvim, "recall", 4)
    assert nvim.transcript() == ["> note one", "note one", "-- done — scripted · 1 step", "", "> recall",
                                 "earlier: note one", "-- done — scripted · 1 step"]
    listed = conversations(nvim)
    assert listed[0]["title"].startswith("note one") and listed[0]["turns"] == 2

    # dismissing the picker changes nothing
    nvim.lua("vim.g.pick = 'no such conversation'; vim.g.offered = nil")
    nvim.command("ElelemConversations")
    nvim.wait("vim.g.offered ~= nil", what="the list")
    assert nvim.transcript()[-2] == "earlier: note one"
    assert nvim.lua("return vim.g.notified") == []


def test_a_conversation_is_deleted_from_the_list(workspace: Path, start_nvim) -> None:
    nvim = start_nvim(workspace, "a.txt")
    nvim.lua(PICKER)
    three_conversations(nvim)
    nvim.lua("vim.g.pick = 'note two'")
    nvim.command("ElelemDeleteConversation")
    nvim.wait("#vim.g.notified > 0", what="the deletion notice")
    assert nvim.lua("return vim.g.select_prompt") == "delete elelem conversation: "
    assert nvim.lua("return vim.g.notified")[0][0].startswith("elelem: deleted note two")
    assert [c["title"].split()[:2] for c in conversations(nvim)] == [["note", "three"], ["note", "one"]]
    assert nvim.transcript()[-2] == "note three"  # another one than the current: the transcript stays

    # the current one: a new conversation begins and the transcript starts over, as after :ElelemNew
    nvim.lua("vim.g.pick = 'note three'; vim.g.notified = {}")
    nvim.command("ElelemDeleteConversation")
    nvim.wait("#vim.g.notified > 0", what="the deletion notice")
    assert nvim.transcript() == ["-- new conversation --"]
    assert [c["title"].split()[:2] for c in conversations(nvim)] == [["note", "one"]]
    ask(nvim, "recall", 4)
    assert nvim.transcript()[-2].rstrip() == "earlier:"  # the new conversation holds nothing of the old


def test_a_new_session_on_the_folder_shows_its_conversation(workspace: Path, start_nvim) -> None:
    first = start_nvim(workspace, "a.txt")
    ask(first, "note from yesterday", 1)
    with pytest.raises(EOFError):  # Neovim exits, closing the channel the command came on
        first.command("qall!")

    nvim = start_nvim(workspace, "a.txt")
    yesterday = ["> note from yesterday", "note from yesterday", "-- done — scripted · 1 step"]
    nvim.wait("vim.api.nvim_buf_get_lines(require('elelem.transcript').bufnr(), 0, 1, false)[1] == ...",
              yesterday[0], what="the stored conversation in the transcript")
    assert nvim.transcript() == yesterday
    ask(nvim, "recall", 1)
    assert nvim.transcript() == [*yesterday, "", "> recall", "earlier: note from yesterday", "-- done — scripted · 1 step"]
    assert highlighted(nvim, "ElelemPrompt") == [yesterday[0], "> recall"]

    # a folder without a stored conversation starts with an empty transcript
    other = workspace.parent / "other"
    (other / ".agents").mkdir(parents=True)
    (other / "b.txt").write_text("b\n")
    fresh = start_nvim(other, "b.txt")
    fresh.wait("vim.lsp.get_clients({name='elelem'})[1]:request_sync('workspace/executeCommand',"
               " {command='elelem.transcript', arguments={vim.empty_dict()}}, 5000) ~= nil")
    assert fresh.transcript() == [""]


def test_a_stored_conversation_is_drawn_in_the_servers_words(workspace: Path, start_nvim) -> None:
    """Entries stored without words (a compaction, a reset, a rewind, tool rows stored before
    titles were kept) are drawn in the words the server serves with them, none made here."""
    store, conversation = ConversationStore(workspace.resolve()), new_id()
    for entry in STORED_WITHOUT_WORDS:
        store.append(conversation, entry)
    nvim = start_nvim(workspace, "a.txt")
    nvim.wait("vim.api.nvim_buf_get_lines(require('elelem.transcript').bufnr(), -2, -1, false)[1] == '-- done — scripted'",
              what="the stored conversation in the transcript")
    assert nvim.transcript() == SERVED_LINES
    assert highlighted(nvim, "ElelemNote") == SERVED_LINES[:3]


def test_resuming_while_a_turn_runs_is_refused_with_a_message(workspace: Path, start_nvim) -> None:
    nvim = start_nvim(workspace, "a.txt")
    nvim.lua(PICKER)
    ask(nvim, "note one", 1)
    nvim.command("ElelemNewConversation")
    nvim.wait("vim.deep_equal(vim.api.nvim_buf_get_lines(vim.fn.bufnr('elelem://transcript'), 0, -1, false),"
              " { '-- new conversation --' })", what="the transcript to start over")
    nvim.command("ElelemAsk wait for it")
    nvim.wait("vim.tbl_contains(vim.api.nvim_buf_get_lines(vim.fn.bufnr('elelem://transcript'), 0, -1, false),"
              " 'waiting')", what="the turn to start")
    before = nvim.transcript()

    nvim.lua("vim.g.pick = 'note one'")
    nvim.command("ElelemConversations")
    nvim.wait("#vim.g.notified > 0", what="the refusal")
    message, level = nvim.lua("return vim.g.notified")[0]
    assert message == "elelem: a turn is running in work; cancel it before resuming another conversation"
    assert level == nvim.lua("return vim.log.levels.ERROR")
    assert "traceback" not in messages(nvim) and "E5108" not in messages(nvim)
    assert nvim.transcript() == before  # nothing redrawn

    nvim.command("ElelemCancel")
    nvim.wait_turns(2, timeout=10)
    # the running conversation is still the current one: the next turn recalls nothing of "note one"
    ask(nvim, "recall", 3)
    assert nvim.transcript()[-2] == "earlier: wait for it"


def test_mcp_style_tool_names_render_like_built_in_ones(workspace: Path, start_nvim) -> None:
    (workspace / ".agents" / "plugins" / "mcpish.py").write_text(
        "import elelem_lsp\n\n"
        "class Caller:\n"
        "    def fetch(self, messages, tools, emit):\n"
        "        if messages[-1]['role'] == 'tool':\n"
        "            emit({'type': 'saying', 'text': 'after the call.'})\n"
        "        else:\n"
        "            emit({'type': 'doing', 'id': 'm1', 'name': 'github__search_issues',\n"
        "                  'arguments': {'query': 'bug', 'limit': 5}})\n\n"
        "@elelem_lsp.configure\n"
        "def setup(config):\n"
        "    config.provider('mcpish', lambda **_: Caller())\n"
    )
    nvim = start_nvim(workspace, "a.txt", settings={"provider": "mcpish"})
    ask(nvim, "search", 1)
    transcript = nvim.transcript()
    assert transcript[:2] == ["> search", '+ github: search_issues query="bug", limit=5']
    assert transcript[2].startswith('  failed: github: search_issues query="bug", limit=5: ')  # no such server here
    assert transcript[-2:] == ["after the call.", "-- done — mcpish · 2 steps"]
    assert highlighted(nvim, "ElelemTool") == ['+ github: search_issues query="bug", limit=5']


def test_turns_left_out_to_fit_the_budget_show_as_one_dim_line(workspace: Path, start_nvim) -> None:
    nvim = start_nvim(workspace, "a.txt", settings={"contextTokens": 1000})
    padding = " ".join(["filler"] * 300)  # a turn (prompt and reply) alone takes most of the budget
    ask(nvim, f"note one {padding}", 1)
    assert not highlighted(nvim, "ElelemNote")  # nothing earlier, nothing left out
    ask(nvim, f"note two {padding}", 2)
    ask(nvim, "recall", 3)
    transcript = nvim.transcript()
    notes = ["-- 1 earlier turn left out to fit 1,000 tokens", "-- 2 earlier turns left out to fit 1,000 tokens"]
    assert highlighted(nvim, "ElelemNote") == notes
    # each note comes first in its turn, right under the prompt
    assert transcript[transcript.index(notes[0]) - 1].startswith("> note two ")
    assert transcript[-4:] == ["> recall", notes[1], "earlier: ", "-- done — scripted · 1 step"]  # the model saw neither


# -- the plan and the host's usage (issue 23) ----------------------------------------------------

PLAN_USAGE = """
local events = ...
local t = require('elelem.transcript')
t.start_turn('p', 'fix it')
t.render_events('p', { events[1], { type = 'saying', text = 'On it.' } })
t.render_events('p', { events[2], { type = 'usage', inputTokens = 9, outputTokens = 1 }, events[3] })
t.finish_turn('p', nil, { reply = 'On it.', provider = 'scripted', steps = 1 })
"""


def plan(*statuses: str) -> dict:
    return {"type": "plan", "entries": [{"content": f"step {n}\nof it", "status": s} for n, s in enumerate(statuses, 1)]}


def test_the_plan_is_a_checklist_rewritten_in_place_and_the_usage_a_dim_line(workspace: Path, start_nvim) -> None:
    nvim = start_nvim(workspace)
    usage = {"type": "usage", "inputTokens": 1234, "outputTokens": 567, "conversationInputTokens": 1234,
             "conversationOutputTokens": 567, "contextTokens": 1800, "text": "1,234 in · 567 out · $0.01"}
    nvim.lua(PLAN_USAGE, [plan("in_progress", "pending"), plan("completed", "completed", "in_progress"), usage])
    assert nvim.transcript() == ["> fix it", "Plan:", "  [x] step 1 of it", "  [x] step 2 of it", "  [~] step 3 of it",
                                 "On it.", "-- 1,234 in · 567 out · $0.01", "-- scripted · 1 step"]
    assert highlighted(nvim, "ElelemToolOk") == ["  [x] step 1 of it", "  [x] step 2 of it"]
    assert highlighted(nvim, "ElelemTool") == ["Plan:", "  [~] step 3 of it"]
    assert highlighted(nvim, "ElelemNote") == ["-- 1,234 in · 567 out · $0.01"]


def test_elelem_usage_prints_the_conversations_figures_or_says_the_server_has_none(workspace: Path, start_nvim) -> None:
    nvim = start_nvim(workspace, "a.txt")
    nvim.command("ElelemUsage")
    # The server counts usage: a fresh conversation has its context and no tokens yet.
    nvim.wait("vim.api.nvim_exec2('messages', { output = true }).output:find('elelem: conversation: 0 in · 0 out · context ', 1, true)",
              what="the answer of elelem.context")
    words = nvim.lua("return require('elelem.usage').describe_context(...)",
                     {"usage": {"conversationInputTokens": 12345, "conversationOutputTokens": 2345, "contextTokens": 3000,
                                "contextWindow": 128000, "cost": 0.1234, "currency": "USD"}})
    assert words == "conversation: 12,345 in · 2,345 out · context 3,000 of 128,000 · $0.12"  # an older server's
    # the server's words, as they are (its figures worded here would not say what was cached)
    words = nvim.lua("return require('elelem.usage').describe_context(...)",
                     {"usage": {"conversationInputTokens": 12345, "conversationOutputTokens": 2345, "contextTokens": 3000,
                                "conversationText": "12,345 in (10,000 cached) · 2,345 out · context 3,000 · $0.12"}})
    assert words == "conversation: 12,345 in (10,000 cached) · 2,345 out · context 3,000 · $0.12"
    # inline completion's and next edit's figures in the server's words, each when it did anything
    words = nvim.lua("return require('elelem.usage').describe_context(...)", SUGGESTION_CONTEXT)
    assert words.splitlines() == ["conversation: 1 in · 2 out · context 3", "inline completion: 3 of 12 accepted, said by the server"]
    words = nvim.lua("return require('elelem.usage').describe_context(...)",
                     {**SUGGESTION_CONTEXT, "nextEdit": {"shown": 2, "requests": 2, "text": "1 of 2, said by the server"}})
    assert words.splitlines()[1:] == ["inline completion: 3 of 12 accepted, said by the server", "next edit: 1 of 2, said by the server"]


def test_a_planned_turn_against_the_server_rewrites_its_checklist_counts_and_redraws_the_plan(
    tmp_path: Path, start_nvim
) -> None:
    root = tmp_path / "planned"
    add_plugin(root, "scripted")
    write_script(root, PLANNED_SCRIPT)
    (root / "a.txt").write_text("x\n")
    nvim = start_nvim(root, "a.txt")
    nvim.lua(PICKER)
    ask(nvim, "do two things", 1)
    plan = ["Plan:", "  [x] step 1", "  [~] step 2"]
    # the second plan rewrote the first where it stood, under the call that sent it
    assert nvim.transcript() == ["> do two things", "+ Plan", "  ok: Updated the plan — 0 of 2 steps done", *plan,
                                 "+ Plan", "  ok: Updated the plan — 1 of 2 steps done", "Both done.",
                                 f"-- {PLANNED_USAGE}", "-- done — scripted · 3 steps"]
    assert highlighted(nvim, "ElelemNote") == [f"-- {PLANNED_USAGE}"]

    nvim.command("ElelemUsage")
    nvim.wait("#vim.g.notified > 0", what="the answer of elelem.context")
    [[said, _level]] = nvim.lua("return vim.g.notified")
    assert said.startswith(f"elelem: conversation: {PLANNED_USAGE} · context ")

    nvim.lua("vim.g.pick = 'do two things'")
    drawn = nvim.lua("return vim.b[vim.fn.bufnr('elelem://transcript')].changedtick")
    nvim.command("ElelemConversations")  # the stored conversation, drawn again (its footer as the live one's)
    nvim.wait("vim.b[vim.fn.bufnr('elelem://transcript')].changedtick ~= ...", drawn, what="the redrawn transcript")
    # the rows in the words they had live, the plan as the turn left it, the usage row
    assert nvim.transcript() == ["> do two things", "+ Plan", "  ok: Updated the plan — 0 of 2 steps done",
                                 "+ Plan", "  ok: Updated the plan — 1 of 2 steps done", *plan, "Both done.",
                                 f"-- {PLANNED_USAGE}", "-- done — scripted · 3 steps"]
    assert highlighted(nvim, "ElelemToolOk")[-1] == "  [x] step 1"
