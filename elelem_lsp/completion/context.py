"""What the model reads to fill the hole at the cursor.

Bridges an open document and the cursor's offset in it to a ``CompletionContext``: the prefix
and suffix around the cursor sized in tokens (whole lines, nearest first), the file's path and
language, and snippets of the other open documents, the most recently edited first (around
their last edit). Private files (``privacy``) give no snippet; the engine asks no model at all
inside one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from ..agent.budget import estimate_tokens

Count = Callable[[str], int]
LONG_LINE = 4  # characters a token: how much of one very long cursor line is kept


@dataclass(frozen=True)
class Snippet:
    path: str  # as the model names the file: relative to the folder
    text: str


@dataclass(frozen=True)
class OpenText:
    """An open document as the completion sees it: its name for the model, language and text."""

    name: str
    language: str
    text: str
    edited_line: int = 0  # the line of its last change, where a snippet of it is centred


@dataclass(frozen=True)
class CompletionContext:
    prefix: str
    suffix: str
    path: str
    language: str
    snippets: tuple[Snippet, ...] = field(default=())

    @property
    def line_before(self) -> str:
        """The cursor's line up to the cursor."""
        return self.prefix.rpartition("\n")[2]

    @property
    def line_after(self) -> str:
        """The cursor's line from the cursor on."""
        return self.suffix.partition("\n")[0]


def lines_within(lines: Iterable[str], budget: int, count: Count) -> list[str]:
    """The leading ``lines`` whose tokens fit ``budget``."""
    kept: list[str] = []
    used = 0
    for line in lines:
        used += count(line) + 1  # and its line break
        if used > budget:
            break
        kept.append(line)
    return kept


def around_cursor(
    text: str, offset: int, prefix_tokens: int, suffix_tokens: int, count: Count = estimate_tokens
) -> tuple[str, str]:
    """The prefix and suffix of ``text`` at ``offset``, each the whole lines nearest the cursor that fit."""
    before, after = text[:offset], text[offset:]
    head, _, current = before.rpartition("\n")
    tail_line, newline, rest = after.partition("\n")
    current, tail_line = current[-prefix_tokens * LONG_LINE :], tail_line[: suffix_tokens * LONG_LINE]  # a minified line
    prefix_lines = [current] + (
        lines_within(reversed(head.split("\n")), prefix_tokens - count(current), count) if "\n" in before else []
    )
    suffix_lines = [tail_line] + (lines_within(rest.split("\n"), suffix_tokens - count(tail_line), count) if newline else [])
    return "\n".join(reversed(prefix_lines)), "\n".join(suffix_lines)


def snippets_of(documents: Iterable[OpenText], budget: int, count: Count = estimate_tokens) -> tuple[Snippet, ...]:
    """Snippets of ``documents`` (most recently edited first), around each one's last edit, within ``budget``."""
    found: list[Snippet] = []
    for document in documents:
        if budget <= 0:
            break
        lines = document.text.split("\n")
        start = max(0, min(document.edited_line, len(lines) - 1) - 10)
        kept = lines_within(lines[start:], budget, count)
        text = "\n".join(kept).strip("\n")
        if text:
            found.append(Snippet(document.name, text))
            budget -= count(text)
    return tuple(found)


def build_context(
    active: OpenText,
    offset: int,
    others: Iterable[OpenText],
    *,
    prefix_tokens: int,
    suffix_tokens: int,
    snippet_tokens: int,
    count: Count = estimate_tokens,
) -> CompletionContext:
    prefix, suffix = around_cursor(active.text, offset, prefix_tokens, suffix_tokens, count)
    return CompletionContext(prefix, suffix, active.name, active.language, snippets_of(others, snippet_tokens, count))
