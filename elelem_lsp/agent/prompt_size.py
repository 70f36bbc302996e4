"""The fixed part of a request sized to the window: a ``full`` or a ``compact`` prompt, and which tools.

Bridges the ``prompt`` setting and a session's budget to the system prompt and the tool definitions
a turn sends. ``full`` is the prompt of a large window: the whole system prompt and every tool with
its full description. ``compact`` is a small window's: the short system prompt
(``instructions.compact_instructions``), the core tools (read, write, edit, execute, list, grep)
with one-line descriptions, and the optional ones (plan, the editor's diagnostics and navigation,
MCP tools) offered one by one only while the fixed part stays within ``OPTIONAL_SHARE`` of the
budget and the latest earlier turns (``budget.KEPT_TURNS``) and the prompt still fit beside it.
``auto`` chooses compact below ``COMPACT_BELOW`` tokens of budget.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from .budget import KEPT_TURNS, Counter, Fitted, estimate_tokens, result_share, split_turns, tools_tokens, total_tokens
from .messages import Message, ToolDefinition

PromptSetting = Literal["auto", "full", "compact"]
COMPACT_BELOW = 8192  # tokens of budget under which ``auto`` chooses the compact prompt
OPTIONAL_SHARE = 4  # optional tools are offered while the fixed part is within a quarter of the budget


def chosen_mode(setting: str, budget: int) -> Literal["full", "compact"]:
    """The prompt a budget gets: the setting's when it names one, else compact for a small window."""
    if setting in ("full", "compact"):
        return setting  # type: ignore[return-value]
    return "compact" if budget < COMPACT_BELOW else "full"


@dataclass
class SizedTools:
    """The tools a turn offers, and the optional ones left out for want of room."""

    offered: list[ToolDefinition]
    left_out: list[str] = field(default_factory=list)


@dataclass
class PromptParts:
    """A turn's messages (the system prompt, ``history_length`` earlier messages, then the turn's
    own) as the budget sees them, counted by ``count``."""

    messages: list[Message]
    history_length: int
    budget: int
    count: Counter

    @property
    def system(self) -> int:
        return total_tokens(self.messages[:1], self.count)

    @property
    def current(self) -> int:
        return total_tokens(self.messages[1 + self.history_length :], self.count)

    @property
    def latest_turns(self) -> int:
        """The tokens of the latest ``KEPT_TURNS`` earlier turns, which keep their share."""
        history = self.messages[1 : 1 + self.history_length]
        return sum(total_tokens(turn, self.count) for turn in split_turns(history)[-KEPT_TURNS:])

    def room_for_results(self, tools: list[ToolDefinition]) -> int:
        """What one tool result may take (``budget.result_share``) once the fixed part, the turn and
        the latest turns are counted, in the estimate's tokens: read sizes its window by the
        estimate, so a tokenizer that cuts finer than it gets fewer lines."""
        budget = self.budget - tools_tokens(tools, self.count)  # as fit() is given it
        share = result_share(budget, budget - self.system - self.current - self.latest_turns)
        text = self.messages[0]["content"]
        counted = self.count(text)
        return max(share * estimate_tokens(text) // counted, 1) if counted else share


def sized_tools(definitions: list[ToolDefinition], is_core: Callable[[str], bool], parts: PromptParts) -> SizedTools:
    """The core ``definitions``, then each optional one in order while the fixed part (the system
    prompt and the tools) stays within ``OPTIONAL_SHARE`` of the budget and leaves room for the
    latest turns and the turn's own messages."""
    sized = SizedTools([d for d in definitions if is_core(d["function"]["name"])])
    kept = parts.latest_turns + parts.current
    for definition in definitions:
        if is_core(definition["function"]["name"]):
            continue
        trying = [*sized.offered, definition]
        fixed = parts.system + tools_tokens(trying, parts.count)
        if fixed <= parts.budget // OPTIONAL_SHARE and fixed + kept <= parts.budget:
            sized.offered = trying
        else:
            sized.left_out.append(definition["function"]["name"])
    return sized


def fitted_window(session: Any, fitted: Fitted) -> dict[str, Any]:
    """How the next request uses the window, in tokens, for a person (``/context``, ``elelem.context``):
    the prompt's mode, its fixed part, the earlier turns kept and left out, the room left, and the
    optional tools left out for want of room. ``session``: the ``Session`` that fitted it."""
    return {
        "mode": session.prompt_mode,
        "fixedTokens": fitted.fixed,
        "historyTokens": fitted.history,
        "turnsKept": fitted.kept,
        "turnsLeftOut": fitted.left_out,
        "roomTokens": max(session.context_tokens - fitted.tokens, 0),
        "budgetTokens": session.context_tokens,
        "toolsLeftOut": list(session.tools_left_out),
    }


def window_text(window: dict[str, Any]) -> str:
    """``fitted_window`` in a line: ``compact prompt: fixed part 640 tokens, 4 earlier turns 900 ...``."""
    left = f" ({window['turnsLeftOut']} left out)" if window["turnsLeftOut"] else ""
    tools = f"; tools left out for room: {', '.join(window['toolsLeftOut'])}" if window["toolsLeftOut"] else ""
    return (
        f"{window['mode']} prompt: fixed part {window['fixedTokens']:,} tokens, {window['turnsKept']} earlier turns "
        f"{window['historyTokens']:,} tokens{left}, room left {window['roomTokens']:,} of {window['budgetTokens']:,}{tools}"
    )
