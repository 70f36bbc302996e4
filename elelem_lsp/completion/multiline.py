"""Whether a suggestion may span several lines (the ``multiline`` setting's ``auto``).

Bridges the cursor's place to one yes or no: a block is wanted on an empty line, or at the
end of a line that opens one (``def f():``, ``if (x) {``, ``=> ``) with nothing but closing
brackets after the cursor; elsewhere one line, which is what a person typing mid-line expects.
"""

from __future__ import annotations

from typing import Literal

from .context import CompletionContext
from .filters import BLOCK_OPENERS, CLOSERS


def wants_block(context: CompletionContext, setting: Literal["auto", "never", "always"]) -> bool:
    if setting != "auto":
        return setting == "always"
    after = context.line_after.strip()
    if after and not all(character in CLOSERS or character in ";," for character in after):
        return False
    before = context.line_before.rstrip()
    return not before.strip() or before.endswith(BLOCK_OPENERS)
