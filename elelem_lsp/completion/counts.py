"""What inline completion did for a folder: suggestions shown and accepted, latency, cost.

Bridges each answered request and each acceptance (the ``elelem.completionAccepted`` command an
item carries) to the ``completion`` figures of ``elelem.context`` (docs/contract.md): shown,
accepted, characters accepted, model requests, the median time from request to answer, and the
cost of the model requests where the model's price is known (``providers/prices.py``, the
``prices`` setting over it).
"""

from __future__ import annotations

import statistics
from collections import OrderedDict, deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..providers.prices import PerMillion, cost

LATENCIES = 1000  # the last answers' latencies the median is taken over
PENDING = 1000  # items shown whose acceptance may still come


@dataclass
class Counts:
    shown: int = 0
    accepted: int = 0
    chars_accepted: int = 0
    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = None
    latencies: deque[float] = field(default_factory=lambda: deque(maxlen=LATENCIES))

    def model_request(self, model: str | None, input_tokens: int, output_tokens: int, prices: Mapping[str, PerMillion]) -> None:
        self.requests += 1
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens
        priced = cost(model, input_tokens, output_tokens, prices) if model else None
        if priced is not None:
            self.cost = (self.cost or 0.0) + priced

    def summary(self) -> dict[str, Any]:
        median = round(statistics.median(self.latencies)) if self.latencies else None
        figures: dict[str, Any] = {
            "shown": self.shown,
            "accepted": self.accepted,
            "charsAccepted": self.chars_accepted,
            "requests": self.requests,
            "medianLatencyMs": median,
        }
        if self.cost is not None:
            figures |= {"cost": round(self.cost, 6), "currency": "USD"}
        figures["text"] = summary_text(self, median)
        return figures


def summary_text(counts: Counts, median: int | None) -> str:
    """``3 of 12 suggestions accepted · 141 chars · 212 ms median · $0.0031``."""
    parts = [f"{counts.accepted} of {counts.shown} suggestions accepted", f"{counts.chars_accepted:,} chars"]
    if median is not None:
        parts.append(f"{median} ms median")
    if counts.cost is not None:
        parts.append(f"${counts.cost:,.2f}" if counts.cost >= 0.01 else f"${counts.cost:.4f}")
    return " · ".join(parts)


class Acceptances:
    """The items shown, by id, until accepted or forgotten (the oldest first)."""

    def __init__(self) -> None:
        self.pending: OrderedDict[str, tuple[Counts, int, str]] = OrderedDict()
        self.accepted: OrderedDict[str, None] = OrderedDict()  # suggestions accepted, in part or whole

    def shown(self, item: str, counts: Counts, chars: int, suggestion: str | None = None) -> None:
        """An item shown; ``suggestion`` is the id of the one it is the rest of (typed along), else its own."""
        self.pending[item] = (counts, chars, suggestion or item)
        while len(self.pending) > PENDING:
            self.pending.popitem(last=False)

    def accept(self, item: str, chars: int | None) -> bool:
        """Record an acceptance of ``chars`` characters (all the item's without); False for an unknown id.
        A suggestion accepted in parts (a word, then the rest) is one acceptance of all its characters."""
        entry = self.pending.pop(item, None)
        if entry is None:
            return False
        counts, length, suggestion = entry
        if suggestion not in self.accepted:
            counts.accepted += 1
            self.accepted[suggestion] = None
            while len(self.accepted) > PENDING:
                self.accepted.popitem(last=False)
        counts.chars_accepted += length if chars is None else max(0, min(chars, length))
        return True
