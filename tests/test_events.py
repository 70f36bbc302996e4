"""The words the events carry, said once by the server for every client: a tool call's title, what
the history left out, what a compaction did; and the turn's stop reason, which no face reads from
words. The session emits them as a person would read them."""

from __future__ import annotations

import pytest

from elelem_lsp.agent.events import compaction, context_event
from elelem_lsp.agent.session import Session
from elelem_lsp.agent.toolbox import Toolbox
from elelem_lsp.agent.wording import call_title, shorten
from elelem_lsp.agent.workspace import Workspace


@pytest.mark.parametrize(
    ("tool", "arguments", "asked", "done"),
    [
        ("read", {"path": "src/app.py"}, "Read src/app.py", "Read src/app.py"),
        ("write", {"path": "new.txt", "content": "x" * 5000}, "Write new.txt", "Wrote new.txt"),
        ("edit", {"path": "a.py", "old": "a", "new": "b"}, "Edit a.py", "Edited a.py"),
        ("execute", {"command": "npm test"}, "Run npm test", "Ran npm test"),
        ("list", {}, "List .", "Listed ."),
        ("list", {"path": "src"}, "List src", "Listed src"),
        ("grep", {"pattern": "TODO", "path": "src"}, 'Search for "TODO" in src', 'Searched for "TODO" in src'),
        ("grep", {"pattern": "x y"}, 'Search for "x y"', 'Searched for "x y"'),
        # MCP tools (server__tool), unknown tools and a built-in called without what its sentence needs
        ("github__create_issue", {"title": "Bug"}, 'github: create_issue title="Bug"', 'github: create_issue title="Bug"'),
        ("docs__search", {}, "docs: search", "docs: search"),
        ("frobnicate", {"level": 3}, "frobnicate level=3", "frobnicate level=3"),
        ("read", {"file": "x"}, 'read file="x"', 'read file="x"'),
        ("read", {"path": 5}, "read path=5", "read path=5"),  # not shown as if it were a path
    ],
)
def test_a_call_reads_as_a_sentence_before_and_after_it_ran(tool, arguments, asked, done):
    assert call_title(tool, arguments) == asked
    assert call_title(tool, arguments, done=True) == done


def test_a_title_is_one_line_and_long_arguments_are_cut():
    title = call_title("execute", {"command": "make test\n  && " + "echo ok; " * 100})
    assert title.startswith("Run make test && echo ok;") and len(title) == 200 and title.endswith("…")
    row = call_title("srv__put", {"text": "a\nb" + "c" * 100})
    assert row == 'srv: put text="a⏎b' + "c" * 43 + '…'
    assert call_title("frob", {"at": {1, 2}}).startswith('frob at="{1, 2}"')  # a plugin's object that is not JSON


def test_shorten_puts_text_on_one_line_and_cuts_it_with_an_ellipsis():
    assert shorten("  a\n\tb   c ", 10) == "a b c"
    assert shorten("abcdefghij", 10) == "abcdefghij"
    assert shorten("abcd efghijk", 6) == "abcd…"  # no space left before the ellipsis


@pytest.mark.parametrize(
    ("left_out", "shortened", "budget", "text"),
    [
        (3, 0, 32000, "3 earlier turns left out to fit 32,000 tokens"),
        (1, 2, 8000, "1 earlier turn left out and 2 tool results shortened to fit 8,000 tokens"),
        (0, 1, 1234567, "1 tool result shortened to fit 1,234,567 tokens"),
    ],
)
def test_a_context_event_says_what_was_left_out(left_out, shortened, budget, text):
    event = context_event(budget - 1, budget, left_out, shortened)
    assert event == {"type": "context", "tokens": budget - 1, "budget": budget, "leftOut": left_out,
                     "shortened": shortened, "text": text}


def test_a_compaction_says_how_many_turns_and_tokens():
    assert compaction(12, 30000, 4000)["text"] == "12 turns compacted into a summary (30,000 → 4,000 tokens)"
    assert compaction(1, 900, 300)["text"] == "1 turn compacted into a summary (900 → 300 tokens)"
    assert compaction(0, 900, 900)["text"] == "nothing to compact: the last turns are always kept as they are"


class Scripted:
    """A provider that answers each fetch with the next list of events."""

    def __init__(self, *steps):
        self.steps = list(steps)

    async def fetch(self, messages, tools, emit):
        for event in self.steps.pop(0) if self.steps else [{"type": "doing", "id": "", "name": "list", "arguments": {}}]:
            emit(event)


async def test_the_session_titles_each_call_and_its_result(tmp_path):
    seen = []
    session = Session(Scripted(
        [{"type": "doing", "id": "c1", "name": "write", "arguments": '{"path": "b.txt", "content": "x"}'},
         {"type": "doing", "id": "c2", "name": "bash", "arguments": {"command": "echo hi"}}],  # nobody may approve it
        [{"type": "saying", "text": "done"}],
    ), Workspace(tmp_path))
    result = await session.turn("go", seen.append)
    titles = [(e["type"], e["title"], e.get("ok")) for e in seen if e["type"] in ("doing", "result")]
    assert titles == [("doing", "Write b.txt", None), ("doing", "Run echo hi", None),
                      ("result", "Wrote b.txt", True), ("result", "Run echo hi", False)]
    assert (result.reply, result.stop_reason) == ("done", "end")


async def test_a_turn_that_runs_out_of_steps_says_so_in_its_stop_reason(tmp_path):
    session = Session(Scripted(), Workspace(tmp_path), max_steps=2)
    result = await session.turn("loop")
    assert result.stop_reason == "max_steps" and result.error and result.reply.startswith("Error: stopped after 2 steps")


async def test_a_provider_failure_stops_the_turn_with_reason_error(tmp_path):
    class Failing:
        async def fetch(self, messages, tools, emit):
            raise RuntimeError("the model server went away (maxSteps)")  # words that once meant the step limit

    result = await Session(Failing(), Workspace(tmp_path)).turn("hi")
    assert result.stop_reason == "error" and result.error == "the model server went away (maxSteps)"
