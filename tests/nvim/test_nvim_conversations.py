"""clients/nvim and stored conversations: the transcript drawn from `elelem.transcript` /
`elelem.resume` entries (turns, tool rows, compactions), the dim line of `context`/`compacted`
events, and what a newer server may send (unknown events and entry kinds, MCP tool names)."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_nvim_client import highlighted

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


def show(nvim, conversation) -> list[str]:
    nvim.lua("require('elelem.transcript').show_conversation(...)", conversation)
    return nvim.transcript()


def test_a_stored_conversation_is_drawn_turn_by_turn(workspace: Path, start_nvim) -> None:
    nvim = start_nvim(workspace)
    failed = {**TURN, "prompt": "break", "reply": "Error: boom", "error": "boom", "tools": [], "model": None}
    cancelled = {**TURN, "prompt": "stop", "reply": "half", "cancelled": True, "tools": []}
    lines = show(nvim, {"id": "c1", "title": "read the notes", "entries": [
        {"kind": "compaction", "turns": 12, "summary": "We read files.", "at": "2026-12-01T09:00:00Z"},
        TURN, failed, cancelled,
    ]})
    assert lines == [
        "-- 12 turns compacted into a summary",
        "",
        "> read the notes please",
        '+ read(path="notes.txt")',
        "  ok: read — 2 lines",
        '+ files__stat(deep={"a":[1,2]}, path="x")',
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
    assert highlighted(nvim, "ElelemNote") == ["-- 12 turns compacted into a summary"]
    assert highlighted(nvim, "ElelemPrompt") == ["> read the notes please", "> break", "> stop"]
    assert highlighted(nvim, "ElelemTool") == ['+ read(path="notes.txt")', '+ files__stat(deep={"a":[1,2]}, path="x")']
    assert highlighted(nvim, "ElelemToolError") == ["  failed: files__stat: no such file"]
    assert highlighted(nvim, "ElelemError") == ["Error: boom", "[cancelled]"]

    # drawing another conversation replaces this one, highlights included
    assert show(nvim, {"id": "c2", "title": "t", "entries": [{**TURN, "tools": []}]}) == [
        "> read the notes please", "They say hi.", "-- scripted · m1",
    ]
    assert highlighted(nvim, "ElelemNote") == [] and highlighted(nvim, "ElelemToolError") == []


def test_odd_or_newer_entries_are_skipped_not_fatal(workspace: Path, start_nvim) -> None:
    nvim = start_nvim(workspace)
    lines = show(nvim, {"id": "c1", "title": "t", "entries": [
        {"kind": "bookmark", "label": "from a newer server"},
        {"kind": "turn", "prompt": "bare"},  # no reply, no tools, no provider
        {"kind": "turn", "prompt": "odd args", "reply": "ok", "provider": "p",
         "tools": [{"name": "srv__ping", "arguments": "raw", "ok": True},
                   {"name": "srv__none", "ok": True, "summary": ""}]},
        {"kind": "compaction", "summary": "no count"},
    ]})
    assert lines == [
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
    assert show(nvim, {"id": "c3", "title": "empty", "entries": []}) == [""]
    assert show(nvim, {"id": "c4"}) == [""]


def test_context_and_compacted_events_are_one_dim_line(workspace: Path, start_nvim) -> None:
    nvim = start_nvim(workspace)
    cases = [
        ({"type": "context", "tokens": 31000, "budget": 32000, "leftOut": 3, "shortened": 0},
         "-- 3 earlier turns left out to fit 32,000 tokens"),
        ({"type": "context", "tokens": 900, "budget": 1000, "leftOut": 1, "shortened": 2},
         "-- 1 earlier turn left out, 2 tool results shortened to fit 1,000 tokens"),
        ({"type": "context", "tokens": 10, "budget": 1234567, "leftOut": 0, "shortened": 1},
         "-- 1 tool result shortened to fit 1,234,567 tokens"),
        ({"type": "compacted", "turns": 12, "tokensBefore": 40000, "tokensAfter": 3000},
         "-- 12 turns compacted into a summary"),
        ({"type": "compacted", "turns": 1, "tokensBefore": 4, "tokensAfter": 3}, "-- 1 turn compacted into a summary"),
    ]
    for event, line in cases:
        assert nvim.lua("return require('elelem.transcript').note_text(...)", event) == line, event
    # one that says nothing shows nothing
    assert nvim.lua("return require('elelem.transcript').note_text(...)",
                    {"type": "context", "tokens": 1, "budget": 9, "leftOut": 0, "shortened": 0}) is None

    nvim.lua(
        """
        local t = require('elelem.transcript')
        t.start_turn('k', 'long one')
        t.render_events('k', {
          { type = 'context', tokens = 31000, budget = 32000, leftOut = 3, shortened = 0 },
          { type = 'saying', text = 'Hel' },
          { type = 'sparkle', text = 'a newer event' },
          { type = 'saying', text = 'lo' },
          { type = 'compacted', turns = 12, tokensBefore = 40000, tokensAfter = 3000 },
          { type = 'doing', id = 'm1', name = 'github__search_issues', arguments = { query = 'bug', limit = 5 } },
          { type = 'result', id = 'm1', name = 'github__search_issues', ok = true, summary = '3 issues' },
          { type = 'doing', id = 'm2', name = 'github__get', arguments = {} },
          { type = 'result', id = 'm2', name = 'github__get', ok = false, error = 'denied' },
        })
        t.finish_turn('k', nil, { reply = 'Hello', provider = 'scripted', steps = 2 })
        """
    )
    assert nvim.transcript() == [
        "> long one",
        "-- 3 earlier turns left out to fit 32,000 tokens",
        "Hello",
        "-- 12 turns compacted into a summary",
        '+ github__search_issues(limit=5, query="bug")',
        "  ok: github__search_issues — 3 issues",
        "+ github__get()",
        "  failed: github__get: denied",
        "-- scripted · 2 steps",
    ]
    assert highlighted(nvim, "ElelemNote") == [
        "-- 3 earlier turns left out to fit 32,000 tokens",
        "-- 12 turns compacted into a summary",
    ]
