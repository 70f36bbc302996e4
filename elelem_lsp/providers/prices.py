"""What a model's tokens cost: one dated price table, overridable by the ``prices`` setting.

Bridges a ``usage`` event's token counts (``shaping.Usage``) to US dollars. The table holds
only the list prices the providers' own APIs published as of its date, for prompts of the
standard length (Anthropic's and Gemini's long-context rates are higher) and without batch
discounts: a cost here is an upper bound of what the API bills. Prompt tokens read from the
provider's cache cost its cache-read price, and those written to it (Anthropic's breakpoints) its
cache-write price, where the table or the setting knows them; a model without them is billed its
input price for both. A model that is not in the table, nor in the setting, has no cost (None),
never a guessed one. The setting (``prices``, checked in host/settings.py) is
``{"model-name": {"input": 3.0, "output": 15.0, "cacheRead": 0.3, "cacheWrite": 3.75}}`` in USD
per million tokens (the cache prices optional), and wins over the table.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

PRICES_AS_OF = "2026-03-21"  # checked against the providers' pricing pages as published then


class PerMillion(Protocol):
    """A price in USD per million tokens: a table entry, or one of the ``prices`` setting."""

    @property
    def input(self) -> float: ...

    @property
    def output(self) -> float: ...

    @property
    def cache_read(self) -> float | None: ...

    @property
    def cache_write(self) -> float | None: ...


@dataclass(frozen=True)
class Price:
    input: float
    output: float
    cache_read: float | None = None  # a prompt token read from the provider's cache
    cache_write: float | None = None  # one written to it, where that is billed apart


def claude(input: float, output: float) -> Price:
    """Anthropic's price: a cache read costs a tenth of an input token, a five-minute cache write
    a quarter more (their pricing page's multipliers, the same for every Claude model)."""
    return Price(input, output, cache_read=round(input * 0.1, 6), cache_write=round(input * 1.25, 6))


PRICES: dict[str, Price] = {
    # OpenAI (cached input: what the automatic prompt cache reads)
    "gpt-5.1": Price(1.25, 10.0, cache_read=0.125),
    "gpt-5": Price(1.25, 10.0, cache_read=0.125),
    "gpt-5-mini": Price(0.25, 2.0, cache_read=0.025),
    "gpt-5-nano": Price(0.05, 0.40, cache_read=0.005),
    "gpt-4.1": Price(2.0, 8.0, cache_read=0.5),
    "gpt-4.1-mini": Price(0.40, 1.60, cache_read=0.1),
    "gpt-4.1-nano": Price(0.10, 0.40, cache_read=0.025),
    "gpt-4o": Price(2.50, 10.0, cache_read=1.25),
    "gpt-4o-mini": Price(0.15, 0.60, cache_read=0.075),
    "o3": Price(2.0, 8.0, cache_read=0.5),
    "o4-mini": Price(1.10, 4.40, cache_read=0.275),
    # Anthropic (also on Vertex AI, where the model's name carries @<date>)
    "claude-opus-4-6": claude(5.0, 25.0),
    "claude-opus-4-5": claude(5.0, 25.0),
    "claude-opus-4-1": claude(15.0, 75.0),
    "claude-opus-4": claude(15.0, 75.0),
    "claude-sonnet-4-6": claude(3.0, 15.0),
    "claude-sonnet-4-5": claude(3.0, 15.0),
    "claude-sonnet-4": claude(3.0, 15.0),
    "claude-3-7-sonnet": claude(3.0, 15.0),
    "claude-haiku-4-5": claude(1.0, 5.0),
    "claude-3-5-haiku": claude(0.80, 4.0),
    # Google Gemini (the gemini preset; cached input: the implicit cache's reads)
    "gemini-2.5-pro": Price(1.25, 10.0, cache_read=0.125),
    "gemini-2.5-flash": Price(0.30, 2.50, cache_read=0.03),
    "gemini-2.5-flash-lite": Price(0.10, 0.40, cache_read=0.01),
    # Groq (the groq preset's default model)
    "llama-3.3-70b-versatile": Price(0.59, 0.79),
}

# Anthropic's dated snapshots (claude-sonnet-4-5-20250929, on Vertex claude-sonnet-4-5@20250929)
# cost what their alias costs; OpenAI's dated snapshots may not (gpt-4o-2024-05-13 did not), so
# only these two forms are taken back to the alias.
SNAPSHOT = re.compile(r"^(claude-.+?)(?:-\d{8}|@\d{8}|@latest)$")


def price_of(model: str, overrides: Mapping[str, PerMillion] | None = None) -> PerMillion | None:
    """The price of ``model``: the setting's, else the table's, else None."""
    for name in (model, *SNAPSHOT.findall(model)):
        if overrides and name in overrides:
            return overrides[name]
        if name in PRICES:
            return PRICES[name]
    return None


def cost(
    model: str,
    input_tokens: int,
    output_tokens: int,
    overrides: Mapping[str, PerMillion] | None = None,
    *,
    cache_read: int = 0,
    cache_write: int = 0,
) -> float | None:
    """What ``input_tokens`` read (the whole prompt: ``cache_read`` of them from the cache and
    ``cache_write`` written to it) and ``output_tokens`` written by ``model`` cost in USD; None
    when its price is not known."""
    price = price_of(model, overrides)
    if price is None:
        return None
    uncached = max(input_tokens - cache_read - cache_write, 0)
    read_price = price.input if price.cache_read is None else price.cache_read
    write_price = price.input if price.cache_write is None else price.cache_write
    spent = uncached * price.input + cache_read * read_price + cache_write * write_price + output_tokens * price.output
    return spent / 1_000_000
