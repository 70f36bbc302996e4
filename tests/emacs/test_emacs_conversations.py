"""clients/emacs/elelem.el and stored conversations: the *elelem* transcript drawn from
`elelem.transcript`/`elelem.resume` entries, the dim line of `context`/`compacted` events, and
what a newer server may send (unknown events and entry kinds, MCP tool names). The JSON reaches
elelem.el decoded as eglot decodes it (plists, null as nil, false as :json-false)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from test_emacs_client import CLIENT, drive, elisp_string, emacs  # noqa: F401  (emacs is a fixture)

pytestmark = pytest.mark.slow

TURN = {
    "kind": "turn",
    "prompt": "read the notes\nplease",
    "reply": "They say hi.",
    "provider": "scripted",
    "model": "m1",
    "started": "2026-12-01T10:00:00Z",
    "ended": "2026-12-01T10:00:02Z",
    "cancelled": False,
    "error": None,
    "tools": [
        {"id": "t1", "name": "read", "arguments": {"path": "notes.txt"}, "ok": True, "summary": "2 lines", "error": None},
        {"id": "t2", "name": "files__stat", "arguments": {"path": "x", "deep": {"a": [1, 2]}}, "ok": False,
         "summary": None, "error": "no such file"},
    ],
}

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
    failed = {**TURN, "prompt": "break", "reply": "Error: boom", "error": "boom", "tools": [], "model": None}
    cancelled = {**TURN, "prompt": "stop", "reply": "half", "cancelled": True, "tools": []}
    conversation = {"id": "c1", "title": "read the notes", "entries": [
        {"kind": "compaction", "turns": 12, "summary": "We read files.", "at": "2026-12-01T09:00:00Z"},
        TURN, failed, cancelled,
    ]}
    seen = render(emacs, "(elelem-show-conversation (drive-json c))", c=conversation)
    assert seen["text"].splitlines() == [
        "-- 12 turns compacted into a summary",
        "",
        "> read the notes please",
        '+ read(path="notes.txt")',
        "  ok: read — 2 lines",
        '+ files__stat(path="x", deep={"a":[1,2]})',
        "  failed: files__stat: no such file",
        "They say hi.",
        "-- scripted · m1",
        "",
        "> break",
        "Error: boom",
        "-- scripted",
        "",
        "> stop",
        "half",
        "[cancelled]",
        "-- scripted · m1",
    ]
    assert seen["noted"] == ["-- 12 turns compacted into a summary"]

    # drawing another conversation replaces the first
    again = render(emacs, "(elelem-show-conversation (drive-json c)) (elelem-show-conversation (drive-json d))",
                   c=conversation, d={"id": "c2", "title": "t", "entries": [{**TURN, "tools": []}]})
    assert again["text"].splitlines() == ["> read the notes please", "They say hi.", "-- scripted · m1"]
    assert again["noted"] == []


def test_odd_or_newer_entries_are_skipped_not_fatal(emacs: str) -> None:
    conversation = {"id": "c1", "title": "t", "entries": [
        {"kind": "bookmark", "label": "from a newer server"},
        {"kind": "turn", "prompt": "bare"},
        {"kind": "turn", "prompt": "odd args", "reply": "ok", "provider": "p",
         "tools": [{"name": "srv__ping", "arguments": "raw", "ok": True},
                   {"name": "srv__none", "arguments": {}, "ok": True, "summary": ""}]},
        {"kind": "compaction", "summary": "no count"},
    ]}
    seen = render(emacs, "(elelem-show-conversation (drive-json c))", c=conversation)
    assert seen["text"].splitlines() == [
        "> bare",
        "",
        "> odd args",
        '+ srv__ping("raw")',
        "  ok: srv__ping",
        "+ srv__none()",
        "  ok: srv__none",
        "ok",
        "-- p",
    ]
    assert render(emacs, "(elelem-show-conversation (drive-json c))", c={"id": "c3", "entries": []})["text"] == ""


def test_context_and_compacted_events_are_one_dim_line(emacs: str) -> None:
    events = [
        {"type": "context", "tokens": 31000, "budget": 32000, "leftOut": 3, "shortened": 0},
        {"type": "saying", "text": "Hel"},
        {"type": "sparkle", "text": "a newer event"},
        {"type": "saying", "text": "lo"},
        {"type": "context", "tokens": 900, "budget": 1000, "leftOut": 1, "shortened": 2},
        {"type": "context", "tokens": 10, "budget": 1234567, "leftOut": 0, "shortened": 1},
        {"type": "context", "tokens": 1, "budget": 9, "leftOut": 0, "shortened": 0},  # says nothing
        {"type": "compacted", "turns": 12, "tokensBefore": 40000, "tokensAfter": 3000},
        {"type": "compacted", "turns": 1, "tokensBefore": 4, "tokensAfter": 3},
        {"type": "doing", "id": "m1", "name": "github__search_issues", "arguments": {"query": "bug", "limit": 5}},
        {"type": "result", "id": "m1", "name": "github__search_issues", "ok": True, "summary": "3 issues"},
        {"type": "doing", "id": "m2", "name": "github__get", "arguments": {}},
        {"type": "result", "id": "m2", "name": "github__get", "ok": False, "error": "denied"},
    ]
    seen = render(
        emacs,
        """(elelem--start-turn "k" "long one")
           (elelem--render-events "k" (drive-json events))
           (elelem--finish-turn "k" (drive-json result))""",
        events=events,
        result={"reply": "Hello", "provider": "scripted", "steps": 2},
    )
    assert seen["text"].splitlines() == [
        "> long one",
        "-- 3 earlier turns left out to fit 32,000 tokens",
        "Hello",
        "-- 1 earlier turn left out, 2 tool results shortened to fit 1,000 tokens",
        "-- 1 tool result shortened to fit 1,234,567 tokens",
        "-- 12 turns compacted into a summary",
        "-- 1 turn compacted into a summary",
        '+ github__search_issues(query="bug", limit=5)',
        "  ok: github__search_issues — 3 issues",
        "+ github__get()",
        "  failed: github__get: denied",
        "-- scripted · 2 steps",
    ]
    assert seen["noted"] == [line for line in seen["text"].splitlines() if line.startswith("-- ") and "step" not in line]


def test_conversations_are_listed_resumed_continued_and_refused_mid_turn(
    emacs: str, tmp_path: Path, home: Path
) -> None:
    _, seen = drive(emacs, tmp_path, "conversations")
    assert seen["three"]["transcript"].splitlines() == [
        "-- new conversation --", "", "> echo three", "echo three", "-- scripted · 1 step",
    ]
    offered = seen["offered"]["labels"]
    assert [label.split(" · ")[0] for label in offered] == ["echo three", "echo two", "echo one"]
    for label in offered:
        title, updated, turns, by = label.split(" · ")
        assert len(updated) == 16 and updated[10] == " ", label
        assert (turns, by) == ("1 turn", "scripted"), label
    assert seen["resumed"]["transcript"].splitlines() == ["> echo one", "echo one", "-- scripted"]
    # the next ask continues the resumed conversation: the provider is sent its earlier turn
    assert seen["continued"]["transcript"].splitlines() == [
        "> echo one", "echo one", "-- scripted", "", "> recall", "earlier: echo one", "-- scripted · 1 step",
    ]
    refused = seen["refused"]
    assert refused["message"].startswith("elelem: ") and refused["message"] != "elelem: no refusal"
    assert refused["unchanged"] is True
    # the transcript opened afresh shows the folder's current conversation: the resumed one, continued
    assert seen["reopened"]["transcript"].splitlines() == [
        "> echo one", "echo one", "-- scripted", "", "> recall", "earlier: echo one", "-- scripted",
        "", "> wait for it", "waiting", "[cancelled]", "-- scripted",
    ]
