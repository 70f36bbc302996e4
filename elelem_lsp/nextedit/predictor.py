"""One next-edit suggestion: the prompt asked of a model, its answer turned into small edits.

Bridges a document, its cursor and the recent edits (``history``) to a model through ``ask``
(a prompt in, the model's text out; the caller picks a raw completion for a Zeta model or a chat
with ``zeta.CHAT_INSTRUCTION`` for any other) and back to edits of the document, or None when
nothing should be suggested: an answer out of form, one that changes nothing, or one that touches
the line the person is typing on.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from .zeta import RegionEdit, excerpt, prompt, region_edits, rewritten_region, without_context

Ask = Callable[[str], Awaitable[str]]


async def predict(lines: list[str], path: str, line: int, character: int, events: str, ask: Ask) -> list[RegionEdit] | None:
    """The edits that follow from the recent ones, or None. ``lines`` are the document's lines without
    their breaks; ``line``/``character`` the cursor in code points."""
    if not 0 <= line < len(lines):
        return None
    shown = excerpt(lines, path, line, min(character, len(lines[line])))
    answer = await ask(prompt(events, shown))
    region = rewritten_region(answer, shown.region)
    if region is not None:
        region = without_context(region, shown)
    if region is None or region == shown.region:
        return None
    edits = region_edits(shown.region, region, shown.first)
    if not edits or any(edit.start_line <= line <= edit.end_line for edit in edits):
        return None  # the person is still typing there: their line is theirs
    return edits
