"""The recent edits as an editor's changes make them: the same "User edited" diffs whether the
editor sends each change as a range (incremental sync) or the whole text (full sync), and a
bounded history however big a change is."""

from __future__ import annotations

import random

import pytest
from lsprotocol import types as lsp
from pygls.workspace import TextDocument

from elelem_lsp.nextedit.history import EditHistory

URI = "file:///w/a.py"
Change = tuple[int, int, int, int, str]  # start line, start character, end line, end character, text


def both_ways(text: str, changes: list[Change]) -> tuple[str, str]:
    """The events after ``changes``, as an incremental client sends them and as a full-sync one does."""
    incremental, full = EditHistory(), EditHistory()
    document = TextDocument(URI, text, sync_kind=lsp.TextDocumentSyncKind.Incremental)
    for start_line, start_char, end_line, end_char, new in changes:
        before = document.lines
        start, end = lsp.Position(line=start_line, character=start_char), lsp.Position(line=end_line, character=end_char)
        document.apply_change(lsp.TextDocumentContentChangePartial(range=lsp.Range(start=start, end=end), text=new))
        incremental.changed(URI, "a.py", before, document.lines, (start_line, end_line))
        full.changed(URI, "a.py", before, document.lines, None)
    return incremental.events(), full.events()


@pytest.mark.parametrize(
    ("text", "changes"),
    [
        ("a\nb\nc\nd\ne\n", [(2, 0, 3, 0, ""), (2, 0, 2, 0, "X")]),  # a line deleted, then typed on the next
        ("d\na\na\nc\ne\n", [(0, 1, 0, 1, "\n\n"), (2, 0, 3, 0, "")]),  # two lines opened, one deleted again
        ("b\nf\ne\na\n", [(0, 0, 2, 0, "\n"), (1, 1, 3, 0, "a")]),  # lines joined over a range
    ],
)
def test_a_range_and_the_whole_text_make_the_same_diffs(text, changes):
    incremental, full = both_ways(text, changes)
    assert incremental == full


def test_random_changes_make_the_same_diffs_either_way():
    chooser = random.Random(31)
    for _ in range(400):
        text = "".join(chooser.choice(["a\n", "b\n", "c\n", "\n", "def f():\n"]) for _ in range(chooser.randint(0, 8)))
        document = TextDocument(URI, text, sync_kind=lsp.TextDocumentSyncKind.Incremental)
        changes: list[Change] = []
        for _ in range(chooser.randint(1, 4)):
            lines = document.source.split("\n")
            start_line = chooser.randint(0, len(lines) - 1)
            end_line = chooser.randint(start_line, min(start_line + 2, len(lines) - 1))
            start_char = chooser.randint(0, len(lines[start_line]))
            end_char = chooser.randint(start_char if end_line == start_line else 0, len(lines[end_line]))
            new = "".join(chooser.choice(["x", "\n", " ", "b"]) for _ in range(chooser.randint(0, 2)))
            changes.append((start_line, start_char, end_line, end_char, new))
            start, end = lsp.Position(line=start_line, character=start_char), lsp.Position(line=end_line, character=end_char)
            document.apply_change(lsp.TextDocumentContentChangePartial(range=lsp.Range(start=start, end=end), text=new))
        incremental, full = both_ways(text, changes)
        assert incremental == full, (text, changes)


def test_a_huge_change_is_kept_and_shown_in_part():
    history = EditHistory()
    before = [f"line {i}\n" for i in range(50_000)]
    for version in range(20):  # the whole file reformatted, again and again
        after = [f"LINE {i} {version}\n" for i in range(50_000)]
        history.changed(URI, "a.py", before, after, None)
        before = after
    kept = sum(len(edit.old) + len(edit.new) for edit in history.recent())
    assert kept <= 2_000  # not the 2 million lines it replaced
    events = history.events()
    assert "\n-LINE 0 18\n" in events and "\n+LINE 0 19\n" in events  # the start of the last change is shown
    assert len(events) < 100_000  # and the prompt is not megabytes of it
