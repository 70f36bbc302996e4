"""TextBatch: what a face has yet to send of a turn, with streamed text coalesced.

Both faces send a turn as it happens (``$/progress`` reports, ACP ``session/update``s), and
every message costs the client more to build, send and parse than one token of text. So
adjacent text of one kind (``saying``, ``thinking``) waits as one piece, joined when it
goes; the first text after a quiet spell may go at once, the text after it waits up to
``interval``; anything else goes in its place, in order, and nothing is dropped.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

# Seconds streamed text may wait to go out with the text after it, in every face: a message per
# token would cost the client more than the text, and 50 ms still reads as live.
TEXT_BATCH_SECONDS = 0.05


@dataclass
class Text:
    """Adjacent pieces of one kind of text, joined when they go."""

    kind: str
    parts: list[str] = field(default_factory=list)
    id: str | None = None  # the message it belongs to, where the face numbers messages (ACP)

    @property
    def text(self) -> str:
        return "".join(self.parts)  # joined once: no quadratic concatenation while it streams


class TextBatch:
    """One turn's waiting items, in order; the face takes them when ``text_wait`` says text is due,
    or at once when something other than text waits."""

    def __init__(self, interval: float = TEXT_BATCH_SECONDS) -> None:
        self.interval = interval
        self.waiting: deque[Any] = deque()  # items, and Text for runs of text
        self.last_text = float("-inf")  # when text last went out

    def __bool__(self) -> bool:
        return bool(self.waiting)

    def add(self, item: Any) -> None:
        self.waiting.append(item)

    def add_text(self, kind: str, text: str, message_id: str | None = None) -> None:
        last = self.waiting[-1] if self.waiting else None
        if isinstance(last, Text) and last.kind == kind and last.id == message_id:
            last.parts.append(text)
        else:
            self.waiting.append(Text(kind, [text], message_id))

    def only_text(self) -> bool:
        """Whether all that waits is one run of text, which more text may still join."""
        return len(self.waiting) == 1 and isinstance(self.waiting[0], Text)

    def text_wait(self, now: float) -> float:
        """How much longer text may wait at ``now`` (zero or less: it is due)."""
        return self.last_text + self.interval - now

    def take(self, now: float) -> Any:
        """The first thing waiting (a ``Text`` for text), taken off at ``now``."""
        item = self.waiting.popleft()
        if isinstance(item, Text):
            self.last_text = now
        return item

    def take_all(self, now: float) -> list[Any]:
        return [self.take(now) for _ in range(len(self.waiting))]

    def clear(self) -> None:
        self.waiting.clear()
