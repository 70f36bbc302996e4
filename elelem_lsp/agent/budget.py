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
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from .messages import Message, encode

Counter = Callable[[str], int]
DEFAULT_CONTEXT_TOKENS = 32_000  # the budget for a model whose window we do not know
# Characters per token of ASCII text. Measured with OpenAI's tokenizers (cl100k_base / o200k_base,
# through the bpe-openai package): this project's README and docs 3.8, its Python 3.8 to 4.3, its
# TypeScript 4.2, a read tool's JSON result 3.7. 3 is below them all, for the tokenizers we could
# not measure (Claude's, Llama's), which cut text finer: the estimate errs towards sending less.
CHARS_PER_TOKEN = 3.0
# Any other character counts a whole token: measured 0.55 to 1.12 tokens a character for Chinese,
# Japanese and Korean, 0.26 to 0.43 for Russian (emoji take 1.4 to 2.8, but are rare in code).
NON_ASCII_TOKENS = 1
REPLY_TOKENS = 4_096  # room kept for the reply in a known window, when the provider has no max_tokens
ESTIMATE_MARGIN = 10  # 1/ESTIMATE_MARGIN of a known window held back: an estimate is not the model's count
MESSAGE_OVERHEAD = 4  # the role and separators a chat template adds to each message
LARGEST_SHARE = 4  # a single tool result may take at most 1/LARGEST_SHARE of the budget
MAX_CUTS = 5  # tries at cutting a result to size, each in proportion to what is still over
MIN_RESULT = 100  # tokens a tool result may always take, however small the room left
KEPT_TURNS = 2  # the latest earlier turns a small window keeps before it offers anything optional

#: The tokens one tool result may take in the turn being run (its share of the budget): a tool
#: that can choose how much to return (``read``) returns what fits, and says how to read on.
result_room: ContextVar[int] = ContextVar("elelem_result_room", default=DEFAULT_CONTEXT_TOKENS // LARGEST_SHARE)


def estimate_tokens(text: str) -> int:
    if text.isascii():  # known without reading the text: no copy of it made each fetch
        return math.ceil(len(text) / CHARS_PER_TOKEN)
    ascii_characters = len(text.encode("ascii", "ignore"))
    return math.ceil(ascii_characters / CHARS_PER_TOKEN) + NON_ASCII_TOKENS * (len(text) - ascii_characters)


def window_budget(window: int, reply_tokens: Any) -> int:
    """What one fetch may send to a model of ``window`` tokens: the window less the reply's room
    (the provider's ``max_tokens``, else ``REPLY_TOKENS`` up to a quarter of the window) and a
    margin for the estimate."""
    given = isinstance(reply_tokens, int) and reply_tokens > 0
    reply = reply_tokens if given else min(REPLY_TOKENS, window // 4)
    return max(window - reply - window // ESTIMATE_MARGIN, 1)


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
    fixed: int = 0  # tokens of the fixed part: the system prompt (and the tools, once counted in)
    history: int = 0  # tokens of the earlier turns kept
    kept: int = 0  # earlier turns kept


def definitions_text(tools: list[Any]) -> str:
    """Tool definitions as a request carries them: JSON without spaces, as the APIs' clients send it."""
    return json.dumps(tools, ensure_ascii=False, separators=(",", ":"))


# Lists of definitions already counted, by identity and counter: the built-in tools are one list
# kept for the process (``Toolbox.definitions``, never changed), asked for twice a fetch.
_counted_tools: dict[tuple[int, Counter], tuple[list[Any], int]] = {}
COUNTED_TOOL_LISTS = 8


def tools_tokens(tools: list[Any], count: Counter) -> int:
    """The tokens the tool definitions take of each fetch's budget."""
    if not tools:
        return 0
    key = (id(tools), count)
    counted = _counted_tools.get(key)
    if counted is not None and counted[0] is tools:
        return counted[1]
    tokens = MESSAGE_OVERHEAD + count(definitions_text(tools))
    if len(_counted_tools) >= COUNTED_TOOL_LISTS:  # lists made for one fetch (an MCP server's tools added)
        _counted_tools.clear()
    _counted_tools[key] = (tools, tokens)
    return tokens


def result_share(budget: int, left: int) -> int:
    """What one tool result may take: a ``LARGEST_SHARE`` of the budget, and no more than half of
    what is ``left`` once the fixed part, the prompt and the latest turns are counted (a small
    window's results shrink with it), ``MIN_RESULT`` at least."""
    return max(min(budget // LARGEST_SHARE, left // 2), MIN_RESULT)


def shorten(message: Message, limit: int, count: Counter) -> Message | None:
    """A tool result cut to about ``limit`` tokens with a marker, or None when it fits.

    A result is the JSON of the tool's answer; its bulkiest part is what is cut, so it stays JSON
    a provider or plugin can parse: a text (a file's content, a command's output) keeps its start
    and ends with the marker, a list (grep's matches) keeps its first items and the object gains
    ``shortened`` saying how many went. A result that is not JSON, or whose other fields alone
    are over, is cut as plain text."""
    content = message.get("content") or ""
    tokens = count(content)
    if message["role"] != "tool" or tokens <= limit:
        return None
    try:
        value = json.loads(content)
    except ValueError:
        value = None
    field = bulkiest_part(value)
    cut = None if field is None else cut_to_fit(len(value[field]), part_cutter(value, field), tokens, limit, count)
    if cut is None:
        cut = cut_to_fit(len(content), text_cutter(content), tokens, limit, count)
    if cut is None or len(cut) >= len(content):
        return None  # so small a result would only grow by its marker
    return {**message, "content": cut}


def bulkiest_part(value: Any) -> str | None:
    """The key of a JSON object's longest text or list, None when it has neither."""
    if not isinstance(value, dict):
        return None
    parts = {key: len(encode(item)) for key, item in value.items() if isinstance(item, (str, list))}
    return max(parts, key=parts.__getitem__, default=None)


def part_cutter(value: dict[str, Any], field: str) -> Callable[[int], str]:
    """The object's JSON with the first ``keep`` of its text or list ``field`` and a marker."""
    part = value[field]

    def render(keep: int) -> str:
        marker = cut_marker(len(part) - keep, len(part), "characters" if isinstance(part, str) else field)
        if isinstance(part, str):
            return encode({**value, field: f"{part[:keep]}\n{marker}"})
        return encode({**value, field: part[:keep], "shortened": marker})

    return render


def text_cutter(text: str) -> Callable[[int], str]:
    """The first ``keep`` characters of ``text`` and a marker."""
    return lambda keep: f"{text[:keep]}\n{cut_marker(len(text) - keep, len(text), 'characters')}"


def cut_to_fit(size: int, render: Callable[[int], str], tokens: int, limit: int, count: Counter) -> str | None:
    """``render(keep)`` for the largest ``keep`` of ``size`` found that is within ``limit`` tokens
    (``tokens`` is what the whole came to); None when no cut fits."""
    keep = size
    for _ in range(MAX_CUTS):  # in proportion to what is over, until the count agrees
        keep = int(keep * limit / max(tokens, 1) * 0.9)
        rendered = render(keep)
        tokens = count(rendered)
        if tokens <= limit:
            return rendered
    return None


def cut_text(text: str, limit: int, count: Counter) -> str:
    """``text`` cut to about ``limit`` tokens with a marker; as it was when it fits."""
    tokens = count(text)
    if tokens <= limit:
        return text
    return cut_to_fit(len(text), text_cutter(text), tokens, limit, count) or text_cutter(text)(0)


def oldest_turns(turns: list[list[Message]], room: int, count: Counter) -> tuple[list[Message], int]:
    """The messages of as many of the oldest ``turns`` as fit ``room`` tokens, and how many turns
    that is: always one at least, its messages cut to equal shares of ``room`` when it alone is over."""
    kept: list[Message] = []
    taken = 0
    for turn in turns:
        size = total_tokens(turn, count)
        if taken and total_tokens(kept, count) + size > room:
            break
        if size > room:
            share = max(room // len(turn) - MESSAGE_OVERHEAD, 1)
            turn = [{**message, "content": cut_text(message.get("content") or "", share, count)} for message in turn]
        kept += turn
        taken += 1
    return kept, taken


def cut_marker(cut: int, whole: int, unit: str) -> str:
    return f"[… {cut:,} of {whole:,} {unit} cut to fit the context window]"


def fit(head: list[Message], history: list[Message], current: list[Message], budget: int, count: Counter) -> Fitted:
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
    history_tokens = sum(sizes[left_out:])
    fixed = total_tokens(head, count)
    return Fitted([*head, *kept, *kept_current], total, left_out, shortened, fixed, history_tokens, len(turns) - left_out)
