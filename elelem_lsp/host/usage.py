"""What a turn and a conversation cost: the providers' ``usage`` events summed, priced and said.

Bridges the per-fetch ``usage`` events of a turn (``providers/shaping.Usage``) to the one
``usage`` event the host sends as the turn ends (``docs/contract.md``), with the
conversation's totals so far, the context the next request will hold against its budget, and
the cost where the model's price is known (``providers/prices.py``, the ``prices`` setting
over its dated table; the prompt tokens read from and written to the provider's cache at their
own prices). Each stored turn keeps its own ``usage`` (tokens and cost), so a conversation's
totals are the sum of its entries when it is opened again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..agent.events import TurnUsage as UsageEvent
from ..providers.prices import PerMillion, cost


@dataclass
class Spent:
    """Tokens read and written, and what they cost in USD (None while no price was known);
    ``cache_read`` and ``cache_write`` are the part of ``input`` read from and written to the
    provider's prompt cache."""

    input: int = 0
    output: int = 0
    cost: float | None = None
    cache_read: int = 0
    cache_write: int = 0

    def add(self, other: Spent) -> None:
        self.input += other.input
        self.output += other.output
        self.cache_read += other.cache_read
        self.cache_write += other.cache_write
        if other.cost is not None:
            self.cost = (self.cost or 0.0) + other.cost

    def cache_counts(self) -> dict[str, int]:
        """The cache's part of the input under the events' names, when there was one."""
        counts = {"cachedInputTokens": self.cache_read, "cacheWriteInputTokens": self.cache_write}
        return {name: n for name, n in counts.items() if n}

    def stored(self) -> dict[str, Any]:
        """The ``usage`` of a stored turn entry."""
        priced = {"cost": self.cost} if self.cost is not None else {}
        return {"inputTokens": self.input, "outputTokens": self.output, **self.cache_counts(), **priced}


def count(value: Any) -> int:
    """A token count as an event or a hand-edited file gives it: anything else counts nothing."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


class TurnUsage:
    """A turn's fetches, summed from their ``usage`` events."""

    def __init__(self) -> None:
        self.input = self.output = self.fetches = self.cache_read = self.cache_write = 0
        self.context = 0  # what the last fetch read and wrote: what the next one reads at least

    def add(self, event: Mapping[str, Any]) -> None:
        read, written = count(event.get("inputTokens")), count(event.get("outputTokens"))
        self.input, self.output, self.fetches = self.input + read, self.output + written, self.fetches + 1
        self.cache_read += count(event.get("cachedInputTokens"))
        self.cache_write += count(event.get("cacheWriteInputTokens"))
        self.context = read + written

    def spent(self, model: str | None, prices: Mapping[str, PerMillion]) -> Spent:
        priced = None
        if model and self.fetches:
            priced = cost(model, self.input, self.output, prices, cache_read=self.cache_read, cache_write=self.cache_write)
        return Spent(self.input, self.output, priced, self.cache_read, self.cache_write)


def _turn_spent(entry: Mapping[str, Any]) -> Spent | None:
    """A stored turn's ``usage`` (None for another entry, or a turn stored without one)."""
    usage = entry.get("usage")
    if entry.get("kind") != "turn" or not isinstance(usage, Mapping):
        return None
    priced = usage.get("cost")
    known = priced if isinstance(priced, (int, float)) and not isinstance(priced, bool) else None
    cache = count(usage.get("cachedInputTokens")), count(usage.get("cacheWriteInputTokens"))
    return Spent(count(usage.get("inputTokens")), count(usage.get("outputTokens")), known, *cache)


def stored_spent(entries: Iterable[Mapping[str, Any]]) -> Spent:
    """A stored conversation's totals: the sum of its turns' ``usage``."""
    total = Spent()
    for entry in entries:
        spent = _turn_spent(entry)
        if spent is not None:
            total.add(spent)
    return total


def with_usage_text(entries: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Stored entries as a client draws them again: each turn's ``usage`` with the ``text`` its
    live ``usage`` event had (the turn's tokens, the conversation's cost up to it)."""
    total, shown = Spent(), []
    for entry in entries:
        spent = _turn_spent(entry)
        if spent is not None:
            total.add(spent)
            entry = entry | {"usage": entry["usage"] | {"text": usage_text(spent, total.cost)}}
        shown.append(entry)
    return shown


def usage_event(turn: Spent, conversation: Spent, context_tokens: int, context_window: int | None) -> UsageEvent:
    """The ``usage`` event a turn ends with (and ``elelem.context``'s ``usage``)."""
    event: UsageEvent = {
        "type": "usage",
        "inputTokens": turn.input,
        "outputTokens": turn.output,
        "conversationInputTokens": conversation.input,
        "conversationOutputTokens": conversation.output,
        "contextTokens": context_tokens,
        "text": usage_text(turn, conversation.cost),
        "conversationText": conversation_text(conversation, context_tokens, context_window),
    }
    if turn.cache_read:
        event["cachedInputTokens"] = turn.cache_read
    if turn.cache_write:
        event["cacheWriteInputTokens"] = turn.cache_write
    if conversation.cache_read:
        event["conversationCachedInputTokens"] = conversation.cache_read
    if conversation.cache_write:
        event["conversationCacheWriteInputTokens"] = conversation.cache_write
    if context_window:
        event["contextWindow"] = context_window
    if conversation.cost is not None:
        event["cost"] = round(conversation.cost, 6)
        event["currency"] = "USD"
    return event


def usage_text(turn: Spent, conversation_cost: float | None) -> str:
    """``1,234 in (1,000 cached) · 567 out · $0.01``: the turn's tokens, those of its input
    read from the cache, and the conversation's cost."""
    return " · ".join([*_tokens_words(turn), *_cost_words(conversation_cost)])


def conversation_text(conversation: Spent, context_tokens: int, context_window: int | None) -> str:
    """``12,345 in · 2,345 out · context 3,000 of 128,000 · $0.12``: the conversation's tokens so
    far, what the context holds (against its window, when known) and the cost."""
    context = f"context {context_tokens:,}" + (f" of {context_window:,}" if context_window else "")
    return " · ".join([*_tokens_words(conversation), context, *_cost_words(conversation.cost)])


def _tokens_words(spent: Spent) -> list[str]:
    return [f"{spent.input:,} in" + (f" ({spent.cache_read:,} cached)" if spent.cache_read else ""), f"{spent.output:,} out"]


def _cost_words(cost: float | None) -> list[str]:
    if cost is None:
        return []
    return [f"${cost:,.2f}" if cost >= 0.01 or not cost else f"${cost:.4f}"]
