"""Text changes in LSP coordinates: a replacement as a range, and applying changes.

Plain functions: the range is computed on the old text and expressed in the
position encoding the client negotiated (UTF-16 unless it chose otherwise). Lines
end at ``\r\n``, ``\n`` or a lone ``\r``, as the protocol counts them.
"""

from __future__ import annotations

from dataclasses import dataclass

from .agent.textfile import Replacement, breaks_as_lf, line_start


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


def change_at(text: str, replacement: Replacement, encoding: str = "utf-16") -> Change:
    """``replacement`` (code-point offsets in ``text``) as a range in LSP coordinates."""
    start, end = replacement.start, replacement.end
    marked = breaks_as_lf(text)
    first_line = marked.count("\n", 0, start)
    first_line_begins = marked.rfind("\n", 0, start) + 1
    # The end is counted from the start, so a one-line change scans the text once.
    last_line = first_line + marked.count("\n", start, end)
    last_line_begins = max(first_line_begins, marked.rfind("\n", start, end) + 1)
    return Change(
        Position(first_line, units(text[first_line_begins:start], encoding)),
        Position(last_line, units(text[last_line_begins:end], encoding)),
        replacement.text,
    )


def offset_at(text: str, position: Position, encoding: str = "utf-16") -> int:
    """The code-point offset in ``text`` of an LSP position (clamped to the line's end)."""
    start = line_start(text, position.line)
    if start is None:
        return len(text)
    end = breaks_as_lf(text).find("\n", start)
    if end < 0:
        end = len(text)
    elif end > start and text[end] == "\n" and text[end - 1] == "\r":
        end -= 1  # the line's content stops before its \r\n
    line = text[start:end]
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
