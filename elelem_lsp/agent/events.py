"""The events of a turn, one vocabulary for every layer (docs/contract.md, "Events").

A provider emits ``saying``, ``thinking`` and ``doing`` (and, once per fetch, ``usage``);
the agent adds ``result`` after each tool call, ``context`` when the history was fitted to
the budget and ``checked`` after a step that changed files; the host adds ``compacted``, and
the shapes of ``plan`` and the host's ``usage`` are here too, so that they land in one place. Every event
a client shows as words carries them: a ``title`` for a tool call and its result, a ``text``
for the others; the sentences themselves are ``wording``'s. Clients render these words
instead of deriving their own. Shapes are plain dicts with string keys, as on the wire.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

from . import wording

# -- what a provider emits -------------------------------------------------------------------


class Saying(TypedDict):
    """A piece of the reply."""

    type: Literal["saying"]
    text: str


class Thinking(TypedDict):
    """A piece of the model's reasoning, shown dimmed."""

    type: Literal["thinking"]
    text: str


class Doing(TypedDict):
    """A tool call the model asked for. The agent adds ``title`` before anyone sees it."""

    type: Literal["doing"]
    id: str
    name: str
    arguments: Any  # a dict, or the JSON text of one as the model sent it; see messages.tool_arguments
    title: NotRequired[str]  # "Read src/app.py", "Run npm test": the call as a person reads it


class FetchUsage(TypedDict):
    """What one fetch cost, as the model server counted it (emitted once per fetch)."""

    type: Literal["usage"]
    inputTokens: int  # the whole prompt, cached tokens included
    outputTokens: int
    cachedInputTokens: NotRequired[int]  # of the prompt, read from the provider's cache
    cacheWriteInputTokens: NotRequired[int]  # of the prompt, written to it (Anthropic bills them apart)


Event = Saying | Thinking | Doing
TEXT_EVENTS = ("saying", "thinking")

# -- what the agent and the host add ---------------------------------------------------------


class PlanEntry(TypedDict):
    content: str
    status: Literal["pending", "in_progress", "completed"]
    priority: NotRequired[Literal["high", "medium", "low"]]


class Result(TypedDict):
    """How a tool call ended: ``summary`` ("132 lines") when it worked, ``error`` when not."""

    type: Literal["result"]
    id: str
    name: str
    ok: bool
    title: str  # "Ran npm test" when it worked, "Run npm test" when it failed
    summary: NotRequired[str]
    error: NotRequired[str]
    output: NotRequired[str]  # a command's: the end of what it printed, at most 2,000 characters
    plan: NotRequired[list[PlanEntry]]  # the plan tool's, which the host sends on as a ``plan`` event


class Context(TypedDict):
    """Earlier turns were left out, or tool results shortened, to fit the budget."""

    type: Literal["context"]
    tokens: int
    budget: int
    leftOut: int
    shortened: int
    text: str  # "3 earlier turns left out to fit 32,000 tokens"


class Compaction(TypedDict):
    """What a compaction did, in figures and words: the answer of ``elelem.compact``."""

    turns: int  # 0: nothing was compacted
    tokensBefore: int
    tokensAfter: int
    text: str  # "12 turns compacted into a summary (30,000 → 4,000 tokens)"


class Compacted(Compaction):
    """Older turns were replaced by a summary before the turn: a ``Compaction`` as the turn's event."""

    type: Literal["compacted"]


class Plan(TypedDict):
    """The agent's plan for the turn, the whole of it each time it changes."""

    type: Literal["plan"]
    entries: list[PlanEntry]


class TurnUsage(TypedDict):
    """The host's figures after a turn: its tokens, the conversation's so far, and the context."""

    type: Literal["usage"]
    inputTokens: int
    outputTokens: int
    conversationInputTokens: int
    conversationOutputTokens: int
    cachedInputTokens: NotRequired[int]  # of the turn's input, read from the cache (when any was)
    cacheWriteInputTokens: NotRequired[int]  # of the turn's input, written to it
    conversationCachedInputTokens: NotRequired[int]
    conversationCacheWriteInputTokens: NotRequired[int]
    contextTokens: int
    contextWindow: NotRequired[int]
    cost: NotRequired[float]
    currency: NotRequired[str]
    text: str  # the figures in one line, as a status line shows them
    conversationText: str  # the conversation's figures and the context in one line, as a header shows them


Severity = Literal["error", "warning", "info", "hint"]  # as agent/insight.py's SEVERITIES name them


class NewProblem(TypedDict):
    """One diagnostic a change brought: where, how bad, what it says."""

    path: str
    line: int  # 1-based
    column: int  # 1-based
    severity: Severity
    message: str
    source: NotRequired[str]


class Checked(TypedDict):
    """The check after a step that changed files (``agent/check.py``): the editor's new problems
    of those files, or what ``checkCommand`` printed."""

    type: Literal["checked"]
    files: list[str]
    newProblems: list[NewProblem]
    text: str  # "checked app.ts: 2 new errors", or the command and its exit
    command: NotRequired[str]
    exitCode: NotRequired[int | None]
    output: NotRequired[str]


TurnEvent = Saying | Thinking | Doing | Result | Context | Compacted | Plan | TurnUsage | Checked
StopReason = Literal["end", "cancelled", "max_steps", "error"]

# -- building the events that carry words ----------------------------------------------------


def context_event(tokens: int, budget: int, left_out: int, shortened: int) -> Context:
    return {
        "type": "context",
        "tokens": tokens,
        "budget": budget,
        "leftOut": left_out,
        "shortened": shortened,
        "text": wording.context_text(left_out, shortened, budget),
    }


def result_event(
    call_id: str,
    name: str,
    title: str,
    *,
    error: str | None = None,
    summary: str = "",
    output: str = "",
    plan: list[PlanEntry] | None = None,
) -> Result:
    """How a tool call ended: failed with ``error``, or worked, with its ``summary`` (and a command's
    ``output``, the plan tool's ``plan``)."""
    if error is not None:
        return {"type": "result", "id": call_id, "name": name, "ok": False, "title": title, "error": error}
    event: Result = {"type": "result", "id": call_id, "name": name, "ok": True, "title": title, "summary": summary}
    if output:
        event["output"] = output
    if plan is not None:
        event["plan"] = plan
    return event


def checked_event(
    files: list[str],
    text: str,
    new_problems: list[NewProblem] | None = None,
    *,
    command: str | None = None,
    exit_code: int | None = None,
    output: str | None = None,
) -> Checked:
    """The check after a step: the editor's ``new_problems`` of ``files``, or the ``command`` run
    (with its ``exit_code`` and ``output`` once it ran; neither when it was refused)."""
    event: Checked = {"type": "checked", "files": files, "newProblems": new_problems or [], "text": text}
    if command is not None:
        event["command"] = command
    if output is not None:
        event["exitCode"] = exit_code
        event["output"] = output
    return event


def plan_event(entries: list[PlanEntry]) -> Plan:
    """The agent's plan, whole, as the model last sent it."""
    return {"type": "plan", "entries": entries}


def compaction(turns: int, tokens_before: int, tokens_after: int) -> Compaction:
    """What a compaction did, in figures and words."""
    return {
        "turns": turns,
        "tokensBefore": tokens_before,
        "tokensAfter": tokens_after,
        "text": wording.compaction_text(turns, tokens_before, tokens_after),
    }


def compacted_event(report: Compaction) -> Compacted:
    """A compaction ahead of a turn, as the turn's event."""
    return {
        "type": "compacted",
        "turns": report["turns"],
        "tokensBefore": report["tokensBefore"],
        "tokensAfter": report["tokensAfter"],
        "text": report["text"],
    }
