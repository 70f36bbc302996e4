"""The recent edits of each open document, kept for the next-edit prompt.

Bridges the editor's ``didChange`` stream (each change as the lines it replaced and the lines
that replaced them) to the unified diffs Zeta reads as "User edited" events. Keystrokes on the
same lines merge into one edit, as a person reads them; each document keeps at most
``per_document`` edits no older than ``max_age`` seconds, and at most ``documents`` documents are
remembered, so the memory stays bounded however long the editor runs.
"""

from __future__ import annotations

import copy
import difflib
import re
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

CONTEXT_LINES = 3  # unchanged lines shown around an edit, as `diff -u` does
EDIT_LINES = 50  # lines kept of each side of an edit: a reformatted or replaced file is shown by its start
HUNK_HEADER = re.compile(r"^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@")


@dataclass
class Edit:
    """Lines ``start``.. of a document, ``old`` before and ``new`` after, with a few unchanged lines around."""

    path: str
    start: int
    old: list[str]
    new: list[str]
    before: list[str]
    after: list[str]
    at: float
    cut: bool = False  # more lines changed than are kept: nothing merges into it

    def bounded(self) -> Edit:
        """The edit, cut to its first ``EDIT_LINES`` lines each side when it is longer."""
        if len(self.old) > EDIT_LINES or len(self.new) > EDIT_LINES:
            self.old, self.new, self.after, self.cut = self.old[:EDIT_LINES], self.new[:EDIT_LINES], [], True
        return self

    def diff(self) -> str:
        """The edit as a unified diff hunk, numbered as the document's lines (1-based)."""
        first = self.start - len(self.before)
        lines = difflib.unified_diff(
            self.before + self.old + self.after, self.before + self.new + self.after, n=CONTEXT_LINES, lineterm=""
        )
        body = [line for line in lines if not line.startswith(("---", "+++"))]
        return "\n".join(_shifted(line, first) for line in body)


def _shifted(line: str, first: int) -> str:
    """A hunk header renumbered from the excerpt's first line to the document's."""
    match = HUNK_HEADER.match(line)
    if not match:
        return line
    old, new = int(match.group(1)) + first, int(match.group(3)) + first
    return f"@@ -{old}{match.group(2) or ''} +{new}{match.group(4) or ''} @@{line[match.end() :]}"


def _bare(lines: Sequence[str]) -> list[str]:
    return [line.rstrip("\r\n") for line in lines]


def _common_ends(before: Sequence[str], after: Sequence[str], head: int = 0, tail: int = 0) -> tuple[int, int]:
    """How many lines the two texts share at their start, and then at their end, knowing that they
    share at least ``head`` and ``tail`` (the lines around a change's range): a change sent as a
    range and the same change sent as the whole text are told apart the same way."""
    shortest = min(len(before), len(after))
    head = min(head, shortest)
    while head < shortest and before[head] == after[head]:
        head += 1
    tail = min(tail, shortest - head)
    while tail < shortest - head and before[-1 - tail] == after[-1 - tail]:
        tail += 1
    return head, tail


class EditHistory:
    """Recent edits per document URI, merged, bounded in count and age."""

    def __init__(
        self, per_document: int = 16, max_age: float = 600.0, documents: int = 32, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.per_document, self.max_age, self.documents, self.clock = per_document, max_age, documents, clock
        self._edits: OrderedDict[str, deque[Edit]] = OrderedDict()

    def changed(
        self, uri: str, path: str, before: Sequence[str], after: Sequence[str], lines: tuple[int, int] | None = None
    ) -> None:
        """A change took the document from the lines ``before`` to ``after`` (each with its line
        break, as the editor's document keeps them); ``lines`` are the first and last it replaced
        (its range's lines), or None for a change of the whole text."""
        known_head, known_tail = (0, 0) if lines is None else (lines[0], max(0, len(before) - 1 - lines[1]))
        first, kept = _common_ends(before, after, known_head, known_tail)
        last, end = len(before) - kept - 1, len(after) - kept
        self.record(uri, path, first, _bare(before[first : last + 1]), _bare(after[first:end]), before)

    def record(self, uri: str, path: str, first: int, old: list[str], new: list[str], lines: Sequence[str]) -> None:
        """Lines ``first``.. of ``lines`` (the document before), ``old``, were replaced by ``new``.

        A change within the lines the previous edit of the document left merges into it; an edit
        that ends where it began is forgotten.
        """
        now = self.clock()
        edits = self._edits.pop(uri, None) or deque(maxlen=self.per_document)
        self._edits[uri] = edits  # most recently edited last
        previous = edits[-1] if edits else None
        last = first + len(old) - 1
        if previous is not None and not previous.cut and previous.start <= first and last < previous.start + len(previous.new):
            offset = first - previous.start
            previous.new = previous.new[:offset] + new + previous.new[last - previous.start + 1 :]
            previous.at = now
            if previous.new == previous.old:
                edits.pop()
            else:
                previous.bounded()
        elif old != new:
            before = _bare(lines[max(0, first - CONTEXT_LINES) : first])
            after = _bare(lines[last + 1 : last + 1 + CONTEXT_LINES])
            edits.append(Edit(path, first, old, new, before, after, now).bounded())
        self._prune(now)

    def forget(self, uri: str) -> None:
        self._edits.pop(uri, None)

    def recent(self, uri: str | None = None, among: Callable[[str], bool] | None = None) -> list[Edit]:
        """The edits still kept, oldest first: of one document, or of every document (whose URI
        ``among`` accepts, when given)."""
        self._prune(self.clock())
        if uri is not None:
            return list(self._edits.get(uri, ()))
        kept = (edits for key, edits in self._edits.items() if among is None or among(key))
        return sorted((edit for edits in kept for edit in edits), key=lambda edit: edit.at)

    def events(self, uri: str | None = None, limit: int = 8, among: Callable[[str], bool] | None = None) -> str:
        """The latest ``limit`` edits as Zeta's "User edited" events, oldest first."""
        return _events(self.recent(uri, among)[-limit:])

    def snapshot(self) -> list[tuple[str, Edit]]:
        """Every edit kept, with its document's URI, oldest first, as it is now: the keystrokes that
        follow merge into the history's own edits, not into these."""
        self._prune(self.clock())
        kept = [(key, copy.copy(edit)) for key, edits in self._edits.items() for edit in edits]
        return sorted(kept, key=lambda pair: pair[1].at)

    def _prune(self, now: float) -> None:
        for uri in list(self._edits):
            edits = self._edits[uri]
            while edits and now - edits[0].at > self.max_age:
                edits.popleft()
            if not edits:
                del self._edits[uri]
        while len(self._edits) > self.documents:
            self._edits.popitem(last=False)


def events_of(kept: list[tuple[str, Edit]], among: Callable[[str], bool] | None = None, limit: int = 8) -> str:
    """The latest ``limit`` edits of a ``snapshot`` (of the documents whose URI ``among`` accepts)
    as Zeta's "User edited" events, oldest first."""
    return _events([edit for key, edit in kept if among is None or among(key)][-limit:])


def _events(edits: list[Edit]) -> str:
    return "\n\n".join(f'User edited "{edit.path}":\n```diff\n{edit.diff()}\n```' for edit in edits)
