"""Answers as models really write them, read back into edits: line breaks of another system, the
lines around the region written again."""

from __future__ import annotations

import pytest

from editor_edits import apply

from elelem_lsp.nextedit.predictor import predict
from elelem_lsp.nextedit.zeta import EDITABLE_END, EDITABLE_START, excerpt, region_edits, rewritten_region

LINES = ["def f(factor):", "    a = scale", "    return a * scale"]
RENAMED = [line.replace("scale", "factor") for line in LINES]


async def edits_for(answer: str):
    async def ask(prompt: str) -> str:
        return answer

    return await predict(LINES, "a.py", 0, 12, "", ask)


async def test_an_answer_with_crlf_line_breaks_gives_the_same_edits():
    plain = await edits_for(f"{EDITABLE_START}\n" + "\n".join(RENAMED) + f"\n{EDITABLE_END}")
    crlf = await edits_for(f"{EDITABLE_START}\r\n" + "\r\n".join(RENAMED) + f"\r\n{EDITABLE_END}")
    assert apply(LINES, plain) == RENAMED
    assert crlf == plain


DOCUMENT = [f"v{n} = {n}" for n in range(100)]
DOCUMENT[40] = "total = scale * 2"
DOCUMENT[50] = "def f(factor):"


async def edits_in_document(region_as_answered) -> list[str]:
    """The document with the edits of an answer made from (before, region, after) lines applied."""
    shown = excerpt(DOCUMENT, "a.py", 50, 5)
    before, after = DOCUMENT[shown.first - 12 : shown.first], DOCUMENT[shown.end : shown.end + 12]
    region = [line.replace("scale", "factor") for line in DOCUMENT[shown.first : shown.end]]

    async def ask(prompt: str) -> str:
        return region_as_answered(before, region, after)

    edits = await predict(DOCUMENT, "a.py", 50, 5, "", ask)
    return apply(DOCUMENT, edits)


@pytest.mark.parametrize(
    "answered",
    [
        lambda before, region, after: "\n".join([EDITABLE_START, *before, *region, *after, EDITABLE_END]),
        lambda before, region, after: "\n".join([*before, *region, *after]),
        lambda before, region, after: "\n".join([EDITABLE_START, *before[-3:], *region, *after[:2], EDITABLE_END]),
    ],
    ids=["context-inside-the-markers", "the-whole-excerpt-without-markers", "a-few-context-lines"],
)
async def test_an_answer_that_writes_the_lines_around_the_region_again_does_not_repeat_them(answered):
    expected = list(DOCUMENT)
    expected[40] = "total = factor * 2"
    assert await edits_in_document(answered) == expected


def test_a_long_line_rewritten_in_many_places_gives_edits_that_make_the_rewrite():
    """A minified line of 20,000 words with every hundredth changed (the word diff of the whole line
    was quadratic: seconds of a blocked server); the edits still make the rewrite exactly."""
    old = " ".join(f"w{n}" for n in range(20_000))
    new = " ".join(f"w{n}" if n % 100 else f"q{n}" for n in range(20_000))
    edits = region_edits(f"a = 1\n{old}\nb = 2", f"a = 1\n{new}\nb = 2", 10)
    assert apply(["x"] * 10 + ["a = 1", old, "b = 2"], edits) == ["x"] * 10 + ["a = 1", new, "b = 2"]
    assert all(edit.start_line == edit.end_line == 11 for edit in edits)
    assert sum(len(edit.text) for edit in edits) < len(new)  # not the whole line: from its first change to its last


def test_a_renamed_word_in_a_long_line_is_one_small_edit():
    old = " ".join(f"w{n}" for n in range(20_000))
    edits = region_edits(old, old.replace(" w5000 ", " renamed ", 1), 0)
    assert [(edit.text, edit.end_char - edit.start_char) for edit in edits] == [("renamed", len("w5000"))]


def test_a_long_answer_in_words_against_a_long_region_is_refused_at_once():
    """A chat model that answers a 5 KB region with 5 KB of prose, no markers (comparing them
    character by character took 27 s of a blocked server)."""
    region = "\n".join(f"value_{n} = compute(value_{n - 1}, factor={n})" for n in range(120))
    prose = "I would suggest renaming the values and computing them in a loop instead. " * 70
    assert rewritten_region(prose, region) is None
    rewrite = region.replace("factor", "scale")
    assert rewritten_region(rewrite, region) == rewrite  # a rewrite without markers is still taken
