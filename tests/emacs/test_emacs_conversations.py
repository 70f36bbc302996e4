"""clients/emacs/elelem.el and stored conversations: the *elelem* transcript drawn from
`elelem.transcript`/`elelem.resume` entries, the dim line of `context`/`compacted` events, and
what a newer server may send (unknown events and entry kinds, MCP tool names). The JSON reaches
elelem.el decoded as eglot decodes it (plists, null as nil, false as :json-false)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from stored_transcripts import (CONVERSATION, CONVERSATION_LINES, EVENTS, EVENTS_LINES, EVENTS_RESULT, NOTES,
                                ODD, ODD_LINES, PLANNED_SCRIPT, PLANNED_USAGE, SERVED_LINES, SHORT, SHORT_LINES,
                                STORED_WITHOUT_WORDS, WORDED_EVENTS,
                                WORDED_CONVERSATION, WORDED_CONVERSATION_LINES, SUGGESTION_CONTEXT, WORDED_LINES, WORDED_NOTES, WORDED_RESULT,
                                check_conversation_labels)
from test_emacs_client import CLIENT, drive, elisp_string

from elelem_lsp.host.conversations import ConversationStore, new_id

pytestmark = pytest.mark.slow

RENDER = """
(progn
  (add-to-list 'load-path %(client)s)
  (require 'elelem)
  (defun drive-json (text) (json-parse-string text :object-type 'plist :null-object nil :false-object :json-false))
  %(body)s
  (with-current-buffer "*elelem*"
    (let (noted)
      (goto-char (point-min))
      (while (not (eobp))
        (let ((next (next-single-property-change (point) 'face nil (point-max))))
          (when (eq (get-text-property (point) 'face) 'elelem-note-face)
            (push (buffer-substring-no-properties (point) next) noted))
          (goto-char next)))
      (princ (json-encode (list :text (buffer-substring-no-properties (point-min) (point-max))
                                :noted (vconcat (nreverse noted))))))))
"""


def render(emacs: str, body: str, **values) -> dict:
    """Runs `body` (elisp; `(drive-json NAME)` reads `values[NAME]`) in a batch Emacs with
    elelem.el loaded; returns the transcript's text and its lines in `elelem-note-face`."""
    for name, value in values.items():
        body = body.replace(f"(drive-json {name})", f"(drive-json {elisp_string(json.dumps(value))})")
    run = subprocess.run(
        [emacs, "--batch", "--eval", RENDER % {"client": elisp_string(str(CLIENT)), "body": body}],
        capture_output=True, text=True, timeout=60,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout)


def test_a_stored_conversation_is_drawn_turn_by_turn(emacs: str) -> None:
    seen = render(emacs, "(elelem-show-conversation (drive-json c))", c=CONVERSATION)
    assert seen["text"].splitlines() == CONVERSATION_LINES
    assert seen["noted"] == ["-- 12 turns compacted into a summary"]

    # drawing another conversation replaces the first
    again = render(emacs, "(elelem-show-conversation (drive-json c)) (elelem-show-conversation (drive-json d))",
                   c=CONVERSATION, d=SHORT)
    assert again["text"].splitlines() == SHORT_LINES
    assert again["noted"] == []


def test_a_stored_turn_is_drawn_in_the_servers_words_as_it_was_live(emacs: str) -> None:
    seen = render(emacs, "(elelem-show-conversation (drive-json c))", c=WORDED_CONVERSATION)
    assert seen["text"].splitlines() == WORDED_CONVERSATION_LINES
    assert seen["noted"] == ["-- 1,234 in · 567 out · $0.01"]  # the usage row, dim as live


def test_odd_or_newer_entries_are_skipped_not_fatal(emacs: str) -> None:
    assert render(emacs, "(elelem-show-conversation (drive-json c))", c=ODD)["text"].splitlines() == ODD_LINES
    assert render(emacs, "(elelem-show-conversation (drive-json c))", c={"id": "c3", "entries": []})["text"] == ""


@pytest.mark.parametrize(("events", "result", "lines", "notes"), [(EVENTS, EVENTS_RESULT, EVENTS_LINES, NOTES),
                                                                (WORDED_EVENTS, WORDED_RESULT, WORDED_LINES, WORDED_NOTES)],
                         ids=["an older server's, worded here", "the server's words, as they are"])
def test_a_turns_events_and_its_context_and_compacted_notes_are_drawn(emacs: str, events, result, lines, notes) -> None:
    seen = render(
        emacs,
        """(elelem--start-turn "k" "long one")
           (elelem--render-events "k" (drive-json events))
           (elelem--finish-turn "k" (drive-json result))""",
        events=events,
        result=result,
    )
    assert seen["text"].splitlines() == lines
    assert seen["noted"] == notes


def test_a_stored_conversation_is_drawn_in_the_servers_words(emacs: str, tmp_path: Path, home: Path) -> None:
    """Entries stored without words (a compaction, a reset, a rewind, tool rows stored before
    titles were kept) are drawn in the words the server serves with them, none made here."""
    store, conversation = ConversationStore((tmp_path / "work").resolve()), new_id()  # the folder drive() makes
    for entry in STORED_WITHOUT_WORDS:
        store.append(conversation, entry)
    _, seen = drive(emacs, tmp_path, "stored")
    assert seen["drawn"]["transcript"].splitlines() == SERVED_LINES


def test_conversations_are_listed_resumed_continued_and_refused_mid_turn(
    emacs: str, tmp_path: Path, home: Path
) -> None:
    _, seen = drive(emacs, tmp_path, "conversations")
    assert seen["three"]["transcript"].splitlines() == [
        "-- new conversation --", "", "> note three", "note three", "-- done — scripted · 1 step",
    ]
    check_conversation_labels(seen["offered"]["labels"], ["note three", "note two", "note one"])
    assert seen["resumed"]["transcript"].splitlines() == ["> note one", "note one", "-- done — scripted · 1 step"]  # stored with its steps
    # the next ask continues the resumed conversation: the provider is sent its earlier turn
    assert seen["continued"]["transcript"].splitlines() == [
        "> note one", "note one", "-- done — scripted · 1 step", "", "> recall", "earlier: note one", "-- done — scripted · 1 step",
    ]
    # the transcript opened afresh shows the folder's current conversation: the resumed one, continued
    assert seen["reopened"]["transcript"].splitlines() == [
        "> note one", "note one", "-- done — scripted · 1 step", "", "> recall", "earlier: note one", "-- done — scripted · 1 step",
    ]
    refused = seen["refused"]
    assert refused["message"] == "elelem: a turn is running in work; cancel it before resuming another conversation"
    assert refused["unchanged"] is True
    assert [title.split()[:2] for title in seen["deleted"]["titles"]] == [["note", "one"], ["note", "three"]]


# -- the plan and the host's usage (issue 23) ----------------------------------------------------

def plan(*statuses: str) -> dict:
    return {"type": "plan", "entries": [{"content": f"step {n}\nof it", "status": s} for n, s in enumerate(statuses, 1)]}


def test_the_plan_is_a_checklist_rewritten_in_place_and_the_usage_a_dim_line(emacs: str) -> None:
    usage = {"type": "usage", "inputTokens": 1234, "outputTokens": 567, "conversationInputTokens": 1234,
             "conversationOutputTokens": 567, "contextTokens": 1800, "text": "1,234 in · 567 out · $0.01"}
    seen = render(
        emacs,
        """(elelem--start-turn "p" "fix it")
           (elelem--render-events "p" (drive-json first))
           (elelem--render-events "p" (drive-json second))
           (elelem--finish-turn "p" (drive-json result))""",
        first=[plan("in_progress", "pending"), {"type": "saying", "text": "On it."}],
        second=[plan("completed", "completed", "in_progress"), {"type": "usage", "inputTokens": 9, "outputTokens": 1},
                usage],
        result={"reply": "On it.", "provider": "scripted", "steps": 1},
    )
    assert seen["text"].splitlines() == ["> fix it", "Plan:", "  [x] step 1 of it", "  [x] step 2 of it",
                                         "  [~] step 3 of it", "On it.", "-- 1,234 in · 567 out · $0.01",
                                         "-- scripted · 1 step"]
    assert seen["noted"] == ["-- 1,234 in · 567 out · $0.01"]


def test_the_conversations_usage_is_worded_for_elelem_usage(emacs: str) -> None:
    seen = render(emacs, "(elelem--write (elelem-conversation-usage (drive-json u)) 'elelem-note-face)",
                  u={"conversationInputTokens": 12345, "conversationOutputTokens": 2345, "contextTokens": 3000,
                     "contextWindow": 128000, "cost": 0.1234, "currency": "USD"})
    assert seen["noted"] == ["12,345 in · 2,345 out · context 3,000 of 128,000 · $0.12"]  # an older server's
    # the server's words, as they are (its figures worded here would not say what was cached)
    served = render(emacs, "(elelem--write (elelem-conversation-usage (drive-json u)) 'elelem-note-face)",
                    u={"conversationInputTokens": 12345, "conversationOutputTokens": 2345, "contextTokens": 3000,
                       "conversationText": "12,345 in (10,000 cached) · 2,345 out · context 3,000 · $0.12"})
    assert served["noted"] == ["12,345 in (10,000 cached) · 2,345 out · context 3,000 · $0.12"]
    # inline completion's and next edit's figures in the server's words, each when it did anything
    said = render(emacs, "(elelem--write (elelem-describe-context (drive-json c)) 'elelem-note-face)", c=SUGGESTION_CONTEXT)
    assert said["text"].splitlines() == ["conversation: 1 in · 2 out · context 3", "inline completion: 3 of 12 accepted, said by the server"]
    both = {**SUGGESTION_CONTEXT, "nextEdit": {"shown": 2, "requests": 2, "text": "1 of 2, said by the server"}}
    said = render(emacs, "(elelem--write (elelem-describe-context (drive-json c)) 'elelem-note-face)", c=both)
    assert said["text"].splitlines()[1:] == ["inline completion: 3 of 12 accepted, said by the server", "next edit: 1 of 2, said by the server"]


def test_a_planned_turn_against_the_server_rewrites_its_checklist_counts_and_reopens_with_the_plan(
    emacs: str, tmp_path: Path, home: Path
) -> None:
    _, seen = drive(emacs, tmp_path, "planned", script=PLANNED_SCRIPT)
    plan = ["Plan:", "  [x] step 1", "  [~] step 2"]
    assert seen["asked"]["transcript"].splitlines() == [
        "> do two things", "+ Plan", "  ok: Updated the plan — 0 of 2 steps done", *plan,
        "+ Plan", "  ok: Updated the plan — 1 of 2 steps done", "Both done.", f"-- {PLANNED_USAGE}",
        "-- done — scripted · 3 steps"]
    assert seen["usage"]["message"].startswith(f"elelem: conversation: {PLANNED_USAGE} · context ")
    # the rows in the words they had live, the plan as the turn left it, the usage row
    assert seen["reopened"]["transcript"].splitlines() == [
        "> do two things", "+ Plan", "  ok: Updated the plan — 0 of 2 steps done",
        "+ Plan", "  ok: Updated the plan — 1 of 2 steps done", *plan, "Both done.", f"-- {PLANNED_USAGE}",
        "-- done — scripted · 3 steps"]
