"""Hand-written `elelem.transcript` results and `$/progress` events, with the transcript lines
every editor client draws from them (the Neovim and Emacs tests share them)."""

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
        {"id": "t2", "name": "files__stat", "arguments": {"deep": {"a": [1, 2]}, "path": "x"}, "ok": False,
         "summary": None, "error": "no such file"},
    ],
}

# a compaction, a turn with tool rows, a failed turn, a cancelled one
CONVERSATION = {"id": "c1", "title": "read the notes", "entries": [
    {"kind": "compaction", "turns": 12, "summary": "We read files.", "at": "2026-12-01T09:00:00Z"},
    TURN,
    {**TURN, "prompt": "break", "reply": "Error: boom", "error": "boom", "tools": [], "model": None},
    {**TURN, "prompt": "stop", "reply": "half", "cancelled": True, "tools": []},
]}
CONVERSATION_LINES = [
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
# drawn after CONVERSATION, it replaces it
SHORT = {"id": "c2", "title": "t", "entries": [{**TURN, "tools": []}]}
SHORT_LINES = ["> read the notes please", "They say hi.", "-- scripted · m1"]

# entry kinds of a newer server, fields missing, arguments that are not an object
ODD = {"id": "c1", "title": "t", "entries": [
    {"kind": "bookmark", "label": "from a newer server"},
    {"kind": "turn", "prompt": "bare"},
    {"kind": "turn", "prompt": "odd args", "reply": "ok", "provider": "p",
     "tools": [{"name": "srv__ping", "arguments": "raw", "ok": True},
               {"name": "srv__none", "arguments": {}, "ok": True, "summary": ""}]},
    {"kind": "compaction", "summary": "no count"},
]}
ODD_LINES = [
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

# one turn's events as an older server sent them (no title, no text): context notes, an event
# type of a newer server, MCP-style tool calls
EVENTS = [
    {"type": "context", "tokens": 31000, "budget": 32000, "leftOut": 3, "shortened": 0},
    {"type": "saying", "text": "Hel"},
    {"type": "sparkle", "text": "a newer event"},
    {"type": "saying", "text": "lo"},
    {"type": "context", "tokens": 900, "budget": 1000, "leftOut": 1, "shortened": 2},
    {"type": "context", "tokens": 10, "budget": 1234567, "leftOut": 0, "shortened": 1},
    {"type": "context", "tokens": 1, "budget": 9, "leftOut": 0, "shortened": 0},  # says nothing
    {"type": "compacted", "turns": 12, "tokensBefore": 40000, "tokensAfter": 3000},
    {"type": "compacted", "turns": 1, "tokensBefore": 4, "tokensAfter": 3},
    {"type": "doing", "id": "m1", "name": "github__search_issues", "arguments": {"limit": 5, "query": "bug"}},
    {"type": "result", "id": "m1", "name": "github__search_issues", "ok": True, "summary": "3 issues"},
    {"type": "doing", "id": "m2", "name": "github__get", "arguments": {}},
    {"type": "result", "id": "m2", "name": "github__get", "ok": False, "error": "denied"},
]
EVENTS_RESULT = {"reply": "Hello", "provider": "scripted", "steps": 2}
NOTES = [
    "-- 3 earlier turns left out to fit 32,000 tokens",
    "-- 1 earlier turn left out, 2 tool results shortened to fit 1,000 tokens",
    "-- 1 tool result shortened to fit 1,234,567 tokens",
    "-- 12 turns compacted into a summary",
    "-- 1 turn compacted into a summary",
]
EVENTS_LINES = [
    "> long one",
    NOTES[0],
    "Hello",
    *NOTES[1:],
    '+ github__search_issues(limit=5, query="bug")',
    "  ok: github__search_issues — 3 issues",
    "+ github__get()",
    "  failed: github__get: denied",
    "-- scripted · 2 steps",
]


# the same kinds of event with the words the server gives them, which the clients show as they are
WORDED_EVENTS = [
    {"type": "context", "tokens": 900, "budget": 1000, "leftOut": 1, "shortened": 2,
     "text": "1 earlier turn left out and 2 tool results shortened to fit 1,000 tokens"},
    {"type": "compacted", "turns": 12, "tokensBefore": 40000, "tokensAfter": 3000,
     "text": "12 turns compacted into a summary (40,000 → 3,000 tokens)"},
    {"type": "doing", "id": "c1", "name": "bash", "arguments": {"command": "npm test"}, "title": "Run npm test"},
    {"type": "result", "id": "c1", "name": "bash", "ok": True, "title": "Ran npm test", "summary": "exit 0, 1 line of output"},
    {"type": "doing", "id": "c2", "name": "edit", "arguments": {"path": "a.py"}, "title": "Edit a.py"},
    {"type": "result", "id": "c2", "name": "edit", "ok": False, "title": "Edit a.py", "error": "old text not found"},
]
# the answer of the turn WORDED_EVENTS come from, with its footer's words (steps in no other field)
WORDED_RESULT = {"reply": "Hello", "provider": "scripted", "text": "done — scripted · 2 steps"}
WORDED_NOTES = ["-- 1 earlier turn left out and 2 tool results shortened to fit 1,000 tokens",
                "-- 12 turns compacted into a summary (40,000 → 3,000 tokens)"]
WORDED_LINES = [
    "> long one",
    *WORDED_NOTES,
    "+ Run npm test",
    "  ok: Ran npm test — exit 0, 1 line of output",
    "+ Edit a.py",
    "  failed: Edit a.py: old text not found",
    "Hello",
    "-- done — scripted · 2 steps",
]


# a stored turn as the server serves it now: its tool calls with the titles their rows had live,
# its usage with the row's words; a turn no provider counted gets no usage row
WORDED_TURN = {
    **TURN,
    "prompt": "run the tests",
    "reply": "Passed.",
    "tools": [
        {"id": "c1", "name": "bash", "arguments": {"command": "npm test"}, "title": "Run npm test",
         "outcomeTitle": "Ran npm test", "ok": True, "summary": "exit 0, 1 line of output", "error": None},
        {"id": "c2", "name": "edit", "arguments": {"path": "a.py"}, "title": "Edit a.py", "outcomeTitle": "Edit a.py",
         "ok": False, "summary": None, "error": "old text not found"},
    ],
    "usage": {"inputTokens": 1234, "outputTokens": 567, "cost": 0.0123, "text": "1,234 in · 567 out · $0.01"},
    "text": "done — scripted · m1 · 4 steps",  # its footer, as the server serves it (its steps are in no other field)
}
WORDED_CONVERSATION = {"id": "c5", "title": "run the tests", "entries": [
    WORDED_TURN,
    {**TURN, "prompt": "uncounted", "reply": "ok", "tools": [], "usage": {"inputTokens": 0, "outputTokens": 0, "text": "0 in · 0 out"},
     "text": "done — scripted · m1"},
]}
WORDED_CONVERSATION_LINES = [
    "> run the tests",
    "+ Run npm test",
    "  ok: Ran npm test — exit 0, 1 line of output",
    "+ Edit a.py",
    "  failed: Edit a.py: old text not found",
    "Passed.",
    "-- 1,234 in · 567 out · $0.01",
    "-- done — scripted · m1 · 4 steps",
    "",
    "> uncounted",
    "ok",
    "-- done — scripted · m1",
]

# elelem.context's result once an editor showed ghost text (next edit asked nothing): each figure's text,
# as the server words it (docs/contract.md), shown as it is
SUGGESTION_CONTEXT = {
    "usage": {"conversationInputTokens": 1, "conversationOutputTokens": 2, "contextTokens": 3,
              "conversationText": "1 in · 2 out · context 3"},
    "completion": {"shown": 12, "accepted": 3, "charsAccepted": 141, "requests": 9,
                   "text": "3 of 12 accepted, said by the server"},
    "nextEdit": {"shown": 0, "accepted": 0, "charsAccepted": 0, "requests": 0, "text": "0 of 0 accepted"},
}

# a turn as stored before tool rows kept their titles: a read that worked, a command that failed,
# an MCP tool's call
UNTITLED_TURN = {
    "kind": "turn", "prompt": "look", "reply": "Looked.", "provider": "scripted", "model": None,
    "started": "2026-12-01T10:00:00.000Z", "ended": "2026-12-01T10:00:01.000Z", "cancelled": False, "error": None,
    "tools": [
        {"id": "t1", "name": "read", "arguments": {"path": "a.py"}, "ok": True, "summary": "3 lines", "error": None},
        {"id": "t2", "name": "bash", "arguments": {"command": "make"}, "ok": False, "summary": None, "error": "denied"},
        {"id": "t3", "name": "files__stat", "arguments": {"path": "x"}, "ok": True, "summary": "done", "error": None},
    ],
}
# a conversation's entries as the file holds them, without words (another session wrote them); the
# server serves them with their words, which a client draws as they are
STORED_WITHOUT_WORDS = [
    {"kind": "compaction", "turns": 12, "summary": "We read files.", "at": "2026-12-01T09:00:00.000Z"},
    {"kind": "reset", "at": "2026-12-01T09:05:00.000Z"},
    {"kind": "rewind", "checkpoint": 3, "at": "2026-12-01T09:10:00.000Z"},
    UNTITLED_TURN,
]
SERVED_LINES = [
    "-- 12 turns compacted into a summary",
    "-- the conversation started over here: the model no longer sees the turns above",
    "-- rewound to before turn 3: the model no longer sees it or the turns after it",
    "",
    "> look",
    "+ Read a.py",
    "  ok: Read a.py — 3 lines",
    "+ Run make",
    "  failed: Run make: denied",
    '+ files: stat path="x"',
    '  ok: files: stat path="x" — done',
    "Looked.",
    "-- done — scripted",  # the turn's footer in the server's words (stored without its steps)
]


def check_conversation_labels(labels: list[str], titles: list[str]) -> None:
    """The picker's labels: `title · 2026-12-01 21:45 · 1 turn · scripted`, titles starting as
    `titles` do, in their order."""
    assert len(labels) == len(titles), labels
    for label, title in zip(labels, titles):
        assert label.startswith(title + " "), (label, title)
    for label in labels:
        _, updated, turns, by = label.split(" · ")
        assert len(updated) == 16 and updated[10] == " " and updated[13] == ":", label
        assert (turns, by) == ("1 turn", "scripted"), label


def plan_call(call_id: str, *statuses: str) -> dict:
    """The model's call of the `plan` tool: "step 1", "step 2"... with these statuses."""
    entries = [{"content": f"step {n}", "status": status} for n, status in enumerate(statuses, 1)]
    return {"type": "doing", "id": call_id, "name": "plan", "arguments": {"entries": entries}}


def usage(read: int, written: int) -> dict:
    """A fetch's own count, as a provider reports it."""
    return {"type": "usage", "inputTokens": read, "outputTokens": written}


# A turn (of the `scripted` provider of tests/plugins) that plans, moves its plan on, and answers:
# each fetch counted. The transcript rewrites the checklist where it stands.
PLANNED_SCRIPT = [
    [plan_call("p1", "in_progress", "pending"), usage(1200, 30)],
    [plan_call("p2", "completed", "in_progress"), usage(1500, 40)],
    [{"type": "saying", "text": "Both done."}, usage(1800, 20)],
]
PLANNED_USAGE = "4,500 in · 90 out"  # the turn's row, and the conversation's figures
