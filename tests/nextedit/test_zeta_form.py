"""The Zeta prompt as a Zeta model reads it, and its answers read back into small edits."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from editor_edits import apply

from elelem_lsp.nextedit.history import EditHistory
from elelem_lsp.nextedit.predictor import predict
from elelem_lsp.nextedit.zeta import (
    CURSOR,
    EDITABLE_END,
    EDITABLE_START,
    excerpt,
    prompt,
    region_edits,
    rewritten_region,
)

SOURCE = """def total(values, scale):
    result = 0
    for value in values:
        result += value * scale
    return result * scale
""".split("\n")


def renamed(history: EditHistory) -> list[str]:
    """The person renames ``scale`` to ``factor`` in the signature, one keystroke at a time."""
    lines = list(SOURCE)
    for typed in ["scal", "sca", "sc", "s", "", "f", "fa", "fac", "fact", "facto", "factor"]:
        before = [line + "\n" for line in lines]
        lines[0] = f"def total(values, {typed}):"
        history.changed("file:///w/app.py", "app.py", before, [line + "\n" for line in lines], (0, 0))
    return lines


def test_keystrokes_on_one_line_make_one_edit_shown_as_a_unified_diff():
    history = EditHistory()
    renamed(history)
    events = history.events("file:///w/app.py")
    assert events == (
        'User edited "app.py":\n```diff\n@@ -1,4 +1,4 @@\n'
        "-def total(values, scale):\n+def total(values, factor):\n"
        "     result = 0\n     for value in values:\n         result += value * scale\n```"
    )


def test_the_prompt_marks_the_region_and_the_cursor_where_the_person_is():
    lines = renamed(EditHistory())
    shown = excerpt(lines, "app.py", 0, len("def total(values, factor"))
    text = prompt("EVENTS", shown)
    assert text.startswith("### Instruction:\n")
    assert "### User Edits:\n\nEVENTS\n\n### User Excerpt:\n\n```app.py\n<|start_of_file|>\n" in text
    assert f"{EDITABLE_START}\ndef total(values, factor{CURSOR}):\n    result = 0\n" in text
    assert text.endswith(f"{EDITABLE_END}\n```\n\n### Response:\n")


async def test_a_rename_answered_in_zeta_form_gives_edits_for_the_remaining_uses_only():
    history = EditHistory()
    lines = renamed(history)
    asked: list[str] = []

    async def zeta(text: str) -> str:
        asked.append(text)
        region = text.split(EDITABLE_START + "\n", 1)[1].split("\n" + EDITABLE_END, 1)[0]
        return f"```app.py\n{EDITABLE_START}\n{region.replace('scale', 'factor')}\n{EDITABLE_END}\n```"

    edits = await predict(lines, "app.py", 0, 24, history.events(), zeta)
    assert "-def total(values, scale):" in asked[0]
    assert edits is not None
    assert [(e.start_line, e.text) for e in edits] == [(3, "factor"), (4, "factor")]
    assert apply(lines, edits) == [line.replace("scale", "factor") for line in SOURCE]


@pytest.mark.parametrize(
    "answer",
    [
        "I think you should rename the other uses too.",  # words, not the region
        f"{EDITABLE_START}\ndef total(values, factor):\n    result = 0",  # cut off before its end marker
        "",
    ],
)
async def test_an_answer_out_of_form_gives_nothing(answer):
    lines = renamed(EditHistory())

    async def model(text: str) -> str:
        return answer

    assert await predict(lines, "app.py", 0, 24, "", model) is None


async def test_an_answer_that_changes_the_line_being_typed_gives_nothing():
    lines = renamed(EditHistory())

    async def model(text: str) -> str:
        region = text.split(EDITABLE_START + "\n", 1)[1].split("\n" + EDITABLE_END, 1)[0].replace(CURSOR, "")
        return f"{EDITABLE_START}\n{region.replace('factor', 'factors').replace('scale', 'factors')}\n{EDITABLE_END}"

    assert await predict(lines, "app.py", 0, 24, "", model) is None


async def test_an_unchanged_answer_gives_nothing():
    lines = renamed(EditHistory())

    async def model(text: str) -> str:
        return text.split("### User Excerpt:\n\n", 1)[1].split("\n\n### Response:", 1)[0]

    assert await predict(lines, "app.py", 0, 24, "", model) is None


def test_an_answer_without_markers_is_taken_only_when_it_is_the_region_rewritten():
    region = "a = 1\nb = a + 1\nprint(b)"
    assert rewritten_region("a = 1\nb = a + 2\nprint(b)\n", region) == "a = 1\nb = a + 2\nprint(b)"
    assert rewritten_region("Sure! Here is the code you asked for, with comments.", region) is None


LINES = st.lists(st.sampled_from(["", "a", "x = 1", "def f(p):", "    return p", "é😀", "  "]), min_size=1, max_size=8)


@settings(max_examples=300, deadline=None)
@given(old=LINES, new=LINES, above=st.integers(0, 3))
def test_region_edits_applied_as_an_editor_does_give_the_rewrite_and_never_overlap(old, new, above):
    document = ["above"] * above + old + ["below"]
    edits = region_edits("\n".join(old), "\n".join(new), above)
    assert apply(document, edits) == ["above"] * above + new + ["below"]
    places = [((e.start_line, e.start_char), (e.end_line, e.end_char)) for e in edits]
    assert all(end < next_start for (_, end), (next_start, _) in zip(places, places[1:]))


def test_the_history_is_bounded_in_count_age_and_documents():
    now = [0.0]
    history = EditHistory(per_document=3, max_age=60, documents=2, clock=lambda: now[0])
    for n in range(10):  # edits far apart: none merges
        history.changed("file:///a", "a", [f"{i}\n" for i in range(100)], [f"{i}\n" for i in range(100)][: n * 10] + ["x\n"] + [f"{i}\n" for i in range(n * 10 + 1, 100)], (n * 10, n * 10))
    assert [edit.start for edit in history.recent("file:///a")] == [70, 80, 90]
    history.changed("file:///b", "b", ["b\n"], ["B\n"], (0, 0))
    history.changed("file:///c", "c", ["c\n"], ["C\n"], (0, 0))
    assert history.recent("file:///a") == []  # the least recently edited document went
    now[0] = 61
    assert history.recent() == []


def test_a_whole_text_change_is_recorded_as_the_lines_between_the_common_ends():
    history = EditHistory()
    history.changed("file:///a", "a", ["1\n", "2\n", "3\n"], ["1\n", "two\n", "2b\n", "3\n"])
    [edit] = history.recent()
    assert (edit.start, edit.old, edit.new) == (1, ["2"], ["two", "2b"])
