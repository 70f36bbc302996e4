"""Text changes in LSP coordinates: the smallest change between two texts, and applying changes.

Plain functions: the range is computed on the old text and expressed in the
position encoding the client negotiated (UTF-16 unless it chose otherwise).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Position:
    line: int
    character: int


@dataclass(frozen=True)
class Change:
    start: Position
    end: Position
    text: str


def units(text: str, encoding: str) -> int:
    """Length of ``text`` in the code units of a position encoding."""
    if encoding == "utf-8":
        return len(text.encode("utf-8"))
    if encoding == "utf-32":
        return len(text)
    return len(text.encode("utf-16-le")) // 2


def position_at(text: str, offset: int, encoding: str) -> Position:
    """The line and character of a code-point offset in ``text``."""
    line = text.count("\n", 0, offset)
    line_start = text.rfind("\n", 0, offset) + 1
    return Position(line, units(text[line_start:offset], encoding))


def minimal_change(old: str, new: str, encoding: str = "utf-16") -> Change | None:
    """The one range of ``old`` to replace to get ``new``; None when they are equal."""
    if old == new:
        return None
    limit = min(len(old), len(new))
    prefix = 0
    while prefix < limit and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and old[-1 - suffix] == new[-1 - suffix]:
        suffix += 1
    return Change(
        position_at(old, prefix, encoding),
        position_at(old, len(old) - suffix, encoding),
        new[prefix : len(new) - suffix],
    )


def offset_at(text: str, position: Position, encoding: str = "utf-16") -> int:
    """The code-point offset in ``text`` of an LSP position (clamped to the line's end)."""
    start = 0
    for _ in range(position.line):
        newline = text.find("\n", start)
        if newline < 0:
            return len(text)
        start = newline + 1
    end = text.find("\n", start)
    line = text[start : len(text) if end < 0 else end]
    column = 0
    for index, char in enumerate(line):
        if column >= position.character:
            return start + index
        column += units(char, encoding)
    return start + len(line)


def apply_changes(text: str, changes: list[Change], encoding: str = "utf-16") -> str:
    """``text`` with non-overlapping changes applied, as an editor applies a TextDocumentEdit."""
    located = sorted(
        ((offset_at(text, c.start, encoding), offset_at(text, c.end, encoding), c.text) for c in changes),
        reverse=True,
    )
    for start, end, new in located:
        text = text[:start] + new + text[end:]
    return text
