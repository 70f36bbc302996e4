"""What an editor does with next edit's edits, for the tests: applies a TextEdit list."""

from __future__ import annotations

from elelem_lsp.nextedit.zeta import RegionEdit


def apply(lines: list[str], edits: list[RegionEdit]) -> list[str]:
    """``lines`` with ``edits`` applied (none overlapping), as an editor applies a TextEdit list: the
tests' own reading of an edit, independent of the code that makes them."""
    text = "\n".join(lines)
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)

    def offset(line: int, char: int) -> int:
        return starts[line] + char

    for edit in sorted(edits, key=lambda e: (e.start_line, e.start_char), reverse=True):
        text = text[: offset(edit.start_line, edit.start_char)] + edit.text + text[offset(edit.end_line, edit.end_char) :]
    return text.split("\n")
