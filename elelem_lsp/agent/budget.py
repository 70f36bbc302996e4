"""The context budget: a conversation's messages counted in tokens and fitted to the model's window.

Bridges the session's growing history to what one fetch may send. Tokens are counted by the
provider's own tokenizer when it has one (an optional ``count_tokens(text)``), else estimated
from characters. When the messages are over budget the oldest turns are left out first; the
system prompt and the current turn always stay, and a tool result larger than a quarter of the
budget is shortened with a marker saying how much was cut.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Callable

from .messages import Message

Counter = Callable[[str], int]
DEFAULT_CONTEXT_TOKENS = 32_000
# Characters per token: GPT and Claude tokenizers give about 4 for English prose and about 3
# for code and JSON; the lower figure errs on the side of sending less.
CHARS_PER_TOKEN = 3.0
MESSAGE_OVERHEAD = 4  # the role and separators a chat template adds to each message
LARGEST_SHARE = 4  # a single tool result may take at most 1/LARGEST_SHARE of the budget


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def counter_of(provider: Any) -> Counter:
    """The provider's tokenizer when it has one, else the estimate."""
    count = getattr(provider, "count_tokens", None)
    return count if callable(count) else estimate_tokens


def message_tokens(message: Message, count: Counter) -> int:
    calls = message.get("tool_calls")
    extra = count(json.dumps(calls, ensure_ascii=False)) if calls else 0
    return MESSAGE_OVERHEAD + count(message.get("content") or "") + extra


def total_tokens(messages: list[Message], count: Counter) -> int:
    return sum(message_tokens(message, count) for message in messages)


def split_turns(history: list[Message]) -> list[list[Message]]:
    """The history as turns: each begins with its user message (a summary is one of its own)."""
    turns: list[list[Message]] = []
    for message in history:
        if message["role"] == "user" or not turns:
            turns.append([])
        turns[-1].append(message)
    return turns


@dataclass
class Fitted:
    """What one fetch sends, and what was left out or cut to fit."""

    messages: list[Message]
    tokens: int
    left_out: int  # earlier turns left out
    shortened: int  # tool results shortened


def shorten(message: Message, limit: int, count: Counter) -> Message | None:
    """A tool result cut to about ``limit`` tokens with a marker, or None when it fits."""
    content = message.get("content") or ""
    if message["role"] != "tool":
        return None
    tokens = count(content)
    if tokens <= limit:
        return None
    keep = int(len(content) * limit / tokens * 0.9)  # room for the marker
    marker = f"\n[… {len(content) - keep:,} of {len(content):,} characters cut to fit the context window]"
    return {**message, "content": content[:keep] + marker}


def fit(
    head: list[Message], history: list[Message], current: list[Message], budget: int, count: Counter
) -> Fitted:
    """``head`` (the system prompt), as much of ``history`` as fits (newest kept), and ``current``."""
    shortened = 0
    kept_current = []
    for message in current:
        cut = shorten(message, budget // LARGEST_SHARE, count)
        shortened += cut is not None
        kept_current.append(cut or message)
    turns = split_turns(history)
    sizes = [total_tokens(turn, count) for turn in turns]
    total = total_tokens(head, count) + total_tokens(kept_current, count) + sum(sizes)
    left_out = 0
    while left_out < len(turns) and total > budget:
        total -= sizes[left_out]
        left_out += 1
    kept = [message for turn in turns[left_out:] for message in turn]
    return Fitted([*head, *kept, *kept_current], total, left_out, shortened)
