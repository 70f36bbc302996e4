"""What a model's tokens cost: one dated price table, overridable by the ``prices`` setting.

Bridges a ``usage`` event's token counts (``shaping.Usage``) to US dollars. The table holds
only the list prices the providers' own APIs published as of its date, for prompts of the
standard length (Anthropic's and Gemini's long-context rates are higher) and without batch or
cache discounts: a cost here is an upper bound of what the API bills. A model that is not in
the table, nor in the setting, has no cost (None), never a guessed one. The setting
(``prices``, checked in host/settings.py) is ``{"model-name": {"input": 3.0, "output": 15.0}}``
in USD per million tokens, and wins over the table.
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


@dataclass(frozen=True)
class Price:
    input: float
    output: float


PRICES: dict[str, Price] = {
    # OpenAI
    "gpt-5.1": Price(1.25, 10.0),
    "gpt-5": Price(1.25, 10.0),
    "gpt-5-mini": Price(0.25, 2.0),
    "gpt-5-nano": Price(0.05, 0.40),
    "gpt-4.1": Price(2.0, 8.0),
    "gpt-4.1-mini": Price(0.40, 1.60),
    "gpt-4.1-nano": Price(0.10, 0.40),
    "gpt-4o": Price(2.50, 10.0),
    "gpt-4o-mini": Price(0.15, 0.60),
    "o3": Price(2.0, 8.0),
    "o4-mini": Price(1.10, 4.40),
    # Anthropic (also on Vertex AI, where the model's name carries @<date>)
    "claude-opus-4-6": Price(5.0, 25.0),
    "claude-opus-4-5": Price(5.0, 25.0),
    "claude-opus-4-1": Price(15.0, 75.0),
    "claude-opus-4": Price(15.0, 75.0),
    "claude-sonnet-4-6": Price(3.0, 15.0),
    "claude-sonnet-4-5": Price(3.0, 15.0),
    "claude-sonnet-4": Price(3.0, 15.0),
    "claude-3-7-sonnet": Price(3.0, 15.0),
    "claude-haiku-4-5": Price(1.0, 5.0),
    "claude-3-5-haiku": Price(0.80, 4.0),
    # Google Gemini (the gemini preset)
    "gemini-2.5-pro": Price(1.25, 10.0),
    "gemini-2.5-flash": Price(0.30, 2.50),
    "gemini-2.5-flash-lite": Price(0.10, 0.40),
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


def cost(model: str, input_tokens: int, output_tokens: int, overrides: Mapping[str, PerMillion] | None = None) -> float | None:
    """What ``input_tokens`` read and ``output_tokens`` written by ``model`` cost in USD; None
    when its price is not known."""
    price = price_of(model, overrides)
    if price is None:
        return None
    return (input_tokens * price.input + output_tokens * price.output) / 1_000_000
