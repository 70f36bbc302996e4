"""The model's stream cut short and its answer cleaned, before it becomes ghost text.

Bridges a route's stream of text pieces to the one suggestion an editor shows. The stream
transforms stop reading (which closes the model's stream) at a stop string, at the line's end
for a single line, at the block's end for several (a line indented back to the cursor's level,
or the line that closes the block), and at a length cap. ``clean`` then mends the whole answer:
what repeats the text after the cursor is cut (the closing bracket already there, the next
line), a line repeated over and over is kept once, brackets the answer would close beyond what
is open are cut, indentation the editor already has is not written twice, and a blank answer
is no answer.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterable
from contextlib import aclosing

from .context import CompletionContext

MAX_LINES = 40
CLOSERS = {")": "(", "]": "[", "}": "{"}
OPENERS = {opener: closer for closer, opener in CLOSERS.items()}
BLOCK_OPENERS = (":", "{", "(", "[", "=>", "->", " do", " then", "begin")


async def until_stop(pieces: AsyncGenerator[str, None], stops: Iterable[str]) -> AsyncGenerator[str, None]:
    """The text before the first of ``stops`` (a model's end tokens); a piece that may start one is held."""
    stops = tuple(stop for stop in stops if stop)
    held = ""
    async with aclosing(pieces):
        async for piece in pieces:
            held += piece
            cut = min((index for index in (held.find(stop) for stop in stops) if index >= 0), default=-1)
            if cut >= 0:
                if held[:cut]:
                    yield held[:cut]
                return
            keep = max((size for stop in stops for size in range(1, len(stop)) if held.endswith(stop[:size])), default=0)
            if len(held) > keep:
                yield held[: len(held) - keep]
                held = held[len(held) - keep :]
    if held:
        yield held


async def within_extent(
    pieces: AsyncGenerator[str, None], context: CompletionContext, multiline: bool, max_chars: int
) -> AsyncGenerator[str, None]:
    """The text up to the line's end (single line) or the block's end (several), at most ``max_chars``."""
    base = indentation(context.line_before)
    opened = context.line_before.rstrip().endswith(BLOCK_OPENERS)
    text = ""
    given = 0
    async with aclosing(pieces):
        async for piece in pieces:
            text += piece
            end = extent_end(text, context.line_before, base, opened, multiline)
            if end is None and len(text) < max_chars:
                complete = text.rfind("\n") + 1 if multiline else len(text)  # a block's last line may yet end it
                if complete > given:
                    yield text[given:complete]
                    given = complete
                continue
            end = min(len(text) if end is None else end, max_chars)
            if end > given:
                yield text[given:end]
            return
    if len(text) > given:
        yield text[given:]


def extent_end(text: str, line_before: str, base: int, opened: bool, multiline: bool) -> int | None:
    """Where the answer must end, if it is known yet: ``None`` to read on."""
    if not multiline:
        start = len(text) - len(text.lstrip("\n")) if not line_before.strip() else 0  # on an empty line, its first line
        newline = text.find("\n", start)
        return newline if newline >= 0 else None
    lines = text.split("\n")
    offset = len(lines[0]) + 1
    for number, line in enumerate(lines[1:-1], start=1):  # the last may be incomplete
        if line.strip():
            indent = indentation(line)
            if indent < base or (indent == base and opened):
                closes = line.strip()[:1] in CLOSERS or line.strip() in ("end", "fi", "done", "esac")
                return offset + len(line) if closes else offset - 1
        if number >= MAX_LINES:
            return offset - 1
        offset += len(line) + 1
    return None


def indentation(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


# -- the whole answer mended -------------------------------------------------------


def clean(answer: str, context: CompletionContext) -> str | None:
    """The answer as ghost text, or None when nothing of it is worth showing."""
    answer = answer.rstrip()
    if context.line_before.strip() == "" and context.line_before and answer.startswith(context.line_before):
        answer = answer[len(context.line_before) :]  # the indentation the line already has
    answer = drop_suffix_repeat(answer, context)
    answer = drop_repeated_lines(answer)
    answer = balanced(answer, context.prefix)
    answer = drop_closing_overlap(answer, context.line_after)
    return answer if answer.strip() else None


def drop_suffix_repeat(answer: str, context: CompletionContext) -> str:
    """The answer up to where it starts writing the lines that already follow the cursor."""
    following = [line.strip() for line in context.suffix.split("\n")[1:] if line.strip()]
    if not following:
        return answer
    lines = answer.split("\n")
    for number, line in enumerate(lines[1:], start=1):
        if line.strip() and line.strip() == following[0]:
            return "\n".join(lines[:number]).rstrip()
    return answer


def drop_repeated_lines(answer: str) -> str:
    """A non-blank line written again right after itself is kept once, and the answer ends there."""
    lines = answer.split("\n")
    for number in range(1, len(lines)):
        if lines[number].strip() and lines[number].strip() == lines[number - 1].strip():
            return "\n".join(lines[:number])
    return answer


def drop_closing_overlap(answer: str, line_after: str) -> str:
    """The answer without the closing brackets and punctuation it shares with the text after the
    cursor on its line (``foo(a``|``)`` answered ``b)`` gives ``b``)."""
    tail = line_after.strip()
    if not tail or "\n" in answer:
        return answer
    for size in range(min(len(tail), len(answer)), 0, -1):
        if answer.endswith(tail[:size]) and all(not c.isalnum() for c in tail[:size]):
            return answer[:-size]
    return answer


def open_brackets(text: str) -> list[str]:
    """The brackets ``text`` leaves open, outermost first (strings and comments are not told apart)."""
    stack: list[str] = []
    for character in text:
        if character in OPENERS:
            stack.append(character)
        elif character in CLOSERS and stack and stack[-1] == CLOSERS[character]:
            stack.pop()
    return stack


def balanced(answer: str, prefix: str) -> str:
    """The answer up to a closing bracket that closes nothing open before it."""
    stack = open_brackets(prefix[-4000:])
    for index, character in enumerate(answer):
        if character in OPENERS:
            stack.append(character)
        elif character in CLOSERS:
            if not stack or stack[-1] != CLOSERS[character]:
                return answer[:index].rstrip()
            stack.pop()
    return answer
