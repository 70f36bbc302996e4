"""Edits in big files: the smallest change found at C speed, and `edit` sending the span it knows."""

from __future__ import annotations

import random
import time

import pytest
from lsprotocol import types as lsp

from elelem_lsp.agent.textfile import ModelView, breaks_as_lf, difference, for_model
from elelem_lsp.textedits import Change, Position, apply_changes, change_at
from scaffold import add_plugin, write_script


def minimal_change(old: str, new: str, encoding: str = "utf-16") -> Change | None:
    """What the editor sends when the agent turns ``old`` into ``new``: the smallest replacement
    (``difference``) as a range in the client's position encoding (``change_at``)."""
    replacement = difference(old, new)
    return None if replacement is None else change_at(old, replacement, encoding)


def reference_difference(old: str, new: str) -> tuple[int, int]:
    """Common prefix and suffix lengths, one character at a time: slow, plainly right."""
    limit = min(len(old), len(new))
    prefix = 0
    while prefix < limit and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and old[-1 - suffix] == new[-1 - suffix]:
        suffix += 1
    return prefix, suffix


def splits_a_pair(text: str, offset: int) -> bool:
    return 0 < offset < len(text) and text[offset - 1 : offset + 1] == "\r\n"


ALPHABET = ["a", "b", "\n", "\r\n", "\r", "é", "😀", "𝄞"]


@pytest.mark.parametrize("seed", range(40))
def test_minimal_change_turns_old_into_new_without_splitting_pairs(seed):
    rng = random.Random(seed)
    old = "".join(rng.choice(ALPHABET) for _ in range(rng.randrange(0, 40)))
    new = list(old)
    for _ in range(rng.randrange(1, 4)):
        at = rng.randrange(0, len(new) + 1)
        new[at : at + rng.randrange(0, 3)] = [rng.choice(ALPHABET) for _ in range(rng.randrange(0, 3))]
    new = "".join(new)
    for encoding in ("utf-16", "utf-8", "utf-32"):
        change = minimal_change(old, new, encoding)
        if old == new:
            assert change is None
            continue
        assert apply_changes(old, [change], encoding) == new
    found = difference(old, new)
    if found is not None:
        prefix, suffix = reference_difference(old, new)
        # As small as the character-by-character answer, less at most the half of a pair at each end.
        assert prefix - 1 <= found.start <= prefix and len(old) - suffix <= found.end <= len(old) - suffix + 1
        for text, start, end in ((old, found.start, found.end),
                                 (new, found.start, found.start + len(found.text))):
            assert not splits_a_pair(text, start) and not splits_a_pair(text, end)


@pytest.mark.parametrize("old, new, start, end, text", [
    ("x\r\n", "x\r\r\n", Position(0, 1), Position(0, 1), "\r"),  # not between the \r and \n of old
    ("a\rb", "a\r\nb", Position(0, 1), Position(1, 0), "\r\n"),  # not between the \r and \n of new
    ("a\nb", "a\r\nb", Position(0, 1), Position(1, 0), "\r\n"),
    ("😀 a\r\n", "😀 b\r\n", Position(0, 3), Position(0, 4), "b"),  # the emoji is two UTF-16 units
    ("a\r\nb", "a\r\nb\r\n", Position(1, 1), Position(1, 1), "\r\n"),
])
def test_minimal_change_ranges(old, new, start, end, text):
    assert minimal_change(old, new) == Change(start, end, text)


def test_positions_in_each_encoding():
    old = "é😀x\r\ny\r\n"
    new = "é😀X\r\ny\r\n"
    assert minimal_change(old, new, "utf-16") == Change(Position(0, 3), Position(0, 4), "X")
    assert minimal_change(old, new, "utf-8") == Change(Position(0, 6), Position(0, 7), "X")
    assert minimal_change(old, new, "utf-32") == Change(Position(0, 2), Position(0, 3), "X")


def test_a_lone_cr_ends_a_line_for_positions():
    assert minimal_change("one\rtwo\rthree", "one\rTWO\rthree") == Change(Position(1, 0), Position(1, 3), "TWO")
    assert apply_changes("one\rtwo\r", [Change(Position(1, 0), Position(1, 3), "2")]) == "one\r2\r"


def test_difference_of_big_texts_is_found_at_c_speed():
    # A character loop takes about a second on these 8 MB; slice comparisons take milliseconds.
    old = "".join(f"line {n}: the quick brown fox 😀\n" for n in range(250_000))
    middle = len(old) // 2
    new = old[:middle] + "CHANGED" + old[middle + 3 :]
    started = time.perf_counter()
    found = difference(old, new)
    elapsed = time.perf_counter() - started
    assert (found.start, found.end, found.text) == (middle, middle + 3, "CHANGED")
    assert elapsed < 0.25, f"{elapsed:.3f} s"


def big_document(lines: int) -> str:
    return "".join(f"line {n}: the quick brown fox jumps over the lazy dog 😀\n" for n in range(lines))


@pytest.mark.parametrize("tool", ["edit", "write"])
async def test_a_one_line_change_in_a_big_open_document_sends_a_one_line_range(project, start_editor, tool):
    add_plugin(project, "scripted")
    text = big_document(50_000)
    (project / "big.txt").write_text(text)
    old, new = "line 25000: the quick", "line 25000: a quick"
    arguments = {"old": old, "new": new} if tool == "edit" else {"content": text.replace(old, new)}
    write_script(project, [[{"type": "doing", "id": "x", "name": tool, "arguments": {"path": "big.txt", **arguments}}]])
    editor = await start_editor(project, settings={"provider": "scripted"})
    editor.open("big.txt", text=text)

    await editor.ask("change line 25001")

    [params] = editor.edits
    [change] = params.edit.document_changes
    assert change.text_document.version == 1
    [edit] = change.edits
    # "the" becomes "a": what the two texts share at either end is not sent.
    assert edit.range == lsp.Range(start=lsp.Position(line=25_000, character=12),
                                   end=lsp.Position(line=25_000, character=15))
    assert edit.new_text == "a"


def test_a_big_buffers_model_view_is_made_once_per_text():
    stored = "".join(f"line {n}\r\n" for n in range(20_000))
    view = ModelView.of(stored)
    assert view.text == stored.replace("\r\n", "\n") and view.newline == "\r\n" and not view.mixed
    assert ModelView.of(stored) is view and for_model(stored) is view.text  # the same text: kept
    changed = stored.replace("line 7\r\n", "line seven\r\n")  # the editor's next version: a new text
    assert ModelView.of(changed) is not view and ModelView.of(changed).text.startswith("line 0\nline 1\n")
    mixed = stored + "last\rone"  # a lone \r: its view says so, and positions count it as a break
    assert ModelView.of(mixed).lone_cr and breaks_as_lf(mixed).endswith("last\none")
    assert breaks_as_lf(stored) is stored
    small = "a\r\nb"
    assert ModelView.of(small) is not ModelView.of(small)  # a short text is not worth keeping
