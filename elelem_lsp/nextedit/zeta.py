"""Zeta's published prompt form for next-edit prediction, and its answer read back.

Bridges a document, a cursor and the recent edits (``history``) to the prompt Zed's open Zeta
model was trained on (the instruction, the "User edited" diffs, then an excerpt whose editable
region is marked and whose cursor is marked), and the model's rewritten region back to text.
A Zeta model served by Ollama or llama.cpp reads the prompt as it is; a chat model is told the
form in ``CHAT_INSTRUCTION``.
"""

from __future__ import annotations

import bisect
import difflib
import re
from dataclasses import dataclass

EDITABLE_START = "<|editable_region_start|>"
EDITABLE_END = "<|editable_region_end|>"
CURSOR = "<|user_cursor_is_here|>"
START_OF_FILE = "<|start_of_file|>"
INSTRUCTION = (
    "You are a code completion assistant and your task is to analyze user edits and then rewrite an "
    "excerpt that the user provides, suggesting the appropriate edits within the excerpt, taking into "
    "account the cursor location."
)
CHAT_INSTRUCTION = (
    "You predict the next edit a programmer makes. Read their recent edits and the excerpt of the file "
    f"they are in. Answer with the excerpt's editable region rewritten with the edits that follow from "
    f"theirs (the other uses of a renamed name, say), between {EDITABLE_START} and {EDITABLE_END} on "
    f"lines of their own, without {CURSOR} and without any other words. When nothing follows, give the "
    "region back unchanged."
)
EDITABLE_BEFORE, EDITABLE_AFTER = 12, 30  # lines of the editable region above and below the cursor's line
CONTEXT_AROUND = 12  # lines shown, not editable, beyond the region on each side
WORD = re.compile(r"\w+|\s+|[^\w\s]", re.DOTALL)  # a line read as words, spaces and single marks
TOKEN = re.compile(r"\w+|[^\w\s]")  # words and marks, without the spaces between (every other token of code)
WORDS_COMPARED = 400  # words of a changed line compared one by one; past them, its changed middle is one edit
SIMILAR_ENOUGH = 0.5  # an answer without markers is taken as the region only when this much alike


@dataclass(frozen=True)
class Excerpt:
    """The editable region, lines ``first`` up to (not including) ``end``, the prompt's excerpt, and
    the lines shown around the region (not editable)."""

    first: int
    end: int
    region: str
    text: str
    before: tuple[str, ...] = ()
    after: tuple[str, ...] = ()


def excerpt(lines: list[str], path: str, line: int, character: int) -> Excerpt:
    """The excerpt around the cursor at ``line``/``character`` (lines without their breaks)."""
    first, end = max(0, line - EDITABLE_BEFORE), min(len(lines), line + EDITABLE_AFTER + 1)
    region = lines[first:end]
    marked = list(region)
    at = line - first
    marked[at] = marked[at][:character] + CURSOR + marked[at][character:]
    before, after = lines[max(0, first - CONTEXT_AROUND) : first], lines[end : end + CONTEXT_AROUND]
    shown = [f"```{path}"]
    if first - CONTEXT_AROUND <= 0:
        shown.append(START_OF_FILE)
    shown += [*before, EDITABLE_START, *marked, EDITABLE_END, *after, "```"]
    return Excerpt(first, end, "\n".join(region), "\n".join(shown), tuple(before), tuple(after))


def prompt(events: str, shown: Excerpt) -> str:
    """Zeta's prompt: the instruction, the recent edits and the excerpt, ending where the answer begins."""
    return (
        f"### Instruction:\n{INSTRUCTION}\n\n### User Edits:\n\n{events}\n\n### User Excerpt:\n\n{shown.text}\n\n### Response:\n"
    )


def rewritten_region(answer: str, region: str) -> str | None:
    """The region as the answer rewrites it; None when the answer is not in the form.

    Zeta writes the region between its markers, inside a fence named by the path; the markers may
    be missing, in which case the answer must still look like the region (a chat model that
    answers in words is not taken as a rewrite).
    """
    text = _unfenced(answer.replace("\r\n", "\n").strip())  # a region is read with LF breaks, as it was shown
    if EDITABLE_START in text:
        text = text.split(EDITABLE_START, 1)[1]
        if EDITABLE_END not in text:
            return None  # cut off before the region ended
        text = text.split(EDITABLE_END, 1)[0]
        marked = True
    else:
        marked = False
    text = text.replace(CURSOR, "").replace(START_OF_FILE, "")
    text = text.removeprefix("\n").removesuffix("\n")
    if not marked and not _alike(region, text):
        return None
    return text


def _alike(region: str, text: str) -> bool:
    """Whether ``text`` is ``region`` rewritten: at least ``SIMILAR_ENOUGH`` of their words and marks
    the same. Counted, not compared in order: that takes time growing with the product of their
    lengths (seconds for a few KB of code), and prose shares too few words with code either way."""
    matcher = difflib.SequenceMatcher(a=TOKEN.findall(region), b=TOKEN.findall(text), autojunk=False)
    return matcher.real_quick_ratio() >= SIMILAR_ENOUGH and matcher.quick_ratio() >= SIMILAR_ENOUGH


def without_context(region: str, shown: Excerpt) -> str:
    """The rewritten ``region`` without the lines shown around the excerpt's region that the model
    wrote again at its start or end (they are not the region's: kept, they would be inserted twice)."""
    new, old = region.split("\n"), shown.region.split("\n")
    head = _repeated(new, old, list(shown.before))
    rest = new[head:]
    tail = _repeated(rest[::-1], old[::-1], list(shown.after)[::-1])
    return "\n".join(rest[: len(rest) - tail])


def _repeated(new: list[str], old: list[str], context: list[str]) -> int:
    """How many of ``new``'s first lines are the last lines of ``context`` (the lines before the
    region) rather than the region's own first lines; a repeat of blank lines alone is not one."""
    for count in range(min(len(context), len(new)), 0, -1):
        written = new[:count]
        if written == context[-count:] and written != old[:count] and any(line.strip() for line in written):
            return count
    return 0


def _unfenced(text: str) -> str:
    """The inside of a Markdown fence around the whole answer, else the answer."""
    if text.startswith("```") and text.endswith("```") and "\n" in text:
        return text.split("\n", 1)[1][:-3]
    return text


@dataclass(frozen=True)
class RegionEdit:
    """Replace the text from (``start_line``, ``start_char``) to (``end_line``, ``end_char``),
    document lines and characters (code points), with ``text``."""

    start_line: int
    start_char: int
    end_line: int
    end_char: int
    text: str


def region_edits(old: str, new: str, first_line: int) -> list[RegionEdit]:
    """The small edits that turn the region ``old`` (starting at document line ``first_line``) into
    ``new``: the lines that differ, each narrowed to its characters where lines pair up one to one."""
    old_lines, new_lines = [line + "\n" for line in old.split("\n")], [line + "\n" for line in new.split("\n")]
    starts = [0]
    for line in old_lines:
        starts.append(starts[-1] + len(line))
    spans: list[tuple[int, int, str]] = []  # offsets in ``old`` with a line break after it, as both texts are read
    matcher = difflib.SequenceMatcher(a=old_lines, b=new_lines, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "replace" and i2 - i1 == j2 - j1:
            for k in range(i2 - i1):
                spans += [
                    (starts[i1 + k] + a, starts[i1 + k] + b, text)
                    for a, b, text in _word_changes(old_lines[i1 + k], new_lines[j1 + k])
                ]
        elif op != "equal":
            spans.append((starts[i1], starts[i2], "".join(new_lines[j1:j2])))
    fitted = [_without_added_break(span, starts[-1]) for span in spans]
    return [_region_edit(*span, starts, first_line) for span in _joined(fitted)]


def _joined(spans: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """Spans that touch made one: an editor takes no two edits at one place."""
    joined: list[tuple[int, int, str]] = []
    for start, end, text in spans:
        if joined and joined[-1][1] == start:
            previous = joined.pop()
            start, text = previous[0], previous[2] + text
        joined.append((start, end, text))
    return joined


def _word_changes(old: str, new: str) -> list[tuple[int, int, str]]:
    """The spans of ``old`` that change, as whole words (a renamed name is one edit, not letters).

    The words both lines start and end with are set aside first; between them, more than
    ``WORDS_COMPARED`` words (a minified line rewritten here and there) are one span, as comparing
    them word by word takes time that grows with their square."""
    old_words, new_words = WORD.findall(old), WORD.findall(new)
    old_starts, new_starts = _offsets(old_words), _offsets(new_words)
    shortest = min(len(old_words), len(new_words))
    head = 0
    while head < shortest and old_words[head] == new_words[head]:
        head += 1
    tail = 0
    while tail < shortest - head and old_words[-1 - tail] == new_words[-1 - tail]:
        tail += 1
    old_end, new_end = len(old_words) - tail, len(new_words) - tail
    if (old_end - head) + (new_end - head) > WORDS_COMPARED:
        return [(old_starts[head], old_starts[old_end], new[new_starts[head] : new_starts[new_end]])]
    matcher = difflib.SequenceMatcher(a=old_words[head:old_end], b=new_words[head:new_end], autojunk=False)
    return [
        (old_starts[head + i1], old_starts[head + i2], new[new_starts[head + j1] : new_starts[head + j2]])
        for op, i1, i2, j1, j2 in matcher.get_opcodes()
        if op != "equal"
    ]


def _offsets(words: list[str]) -> list[int]:
    offsets = [0]
    for word in words:
        offsets.append(offsets[-1] + len(word))
    return offsets


def _without_added_break(span: tuple[int, int, str], total: int) -> tuple[int, int, str]:
    """A span in terms of the region itself, without the line break added after its last line."""
    start, end, text = span
    if end < total:
        return span
    if start == total:  # lines added after the last: they follow its end
        return total - 1, total - 1, "\n" + text[:-1]
    if text.endswith("\n"):  # reaches the end, and so does its replacement
        return start, end - 1, text[:-1]
    return max(start - 1, 0), end - 1, text  # lines removed up to the end: the break before them goes instead


def _region_edit(start: int, end: int, text: str, starts: list[int], first_line: int) -> RegionEdit:
    def place(offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(starts, offset) - 1
        return first_line + line, offset - starts[line]

    return RegionEdit(*place(start), *place(end), text)
