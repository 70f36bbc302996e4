"""Session: one conversation with a provider, and the turn loop of the provider contract (docs/contract.md).

A turn calls ``fetch``, runs the tool calls it emitted in order, and calls it
again until a fetch asks for none. Afterwards the history keeps only the prompt
and the final reply (``exchange``: a cancelled turn marked so). Before each fetch
the messages are fitted to the context budget (``budget``), and observers get a
``context`` event when turns were left out or results shortened. Observers see every event as it happens, plus a ``result``
event after each tool call (``summary`` or ``error``). A call whose arguments are malformed is answered
with an ``ok: false`` result saying what was wrong, and the model tries again.
The emit a fetch is given stops working when that fetch ends: nothing a
provider left running can reach the observers after its turn.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .bridge import TurnAbandoned, run_in_thread
from .budget import (
    DEFAULT_CONTEXT_TOKENS,
    LARGEST_SHARE,
    Counter,
    Fitted,
    counter_of,
    cut_text,
    fit,
    oldest_turns,
    split_turns,
    total_tokens,
    window_budget,
)
from .messages import (
    Image,
    Message,
    Provider,
    ProviderError,
    ToolCall,
    ToolDefinition,
    assistant,
    check_event,
    system,
    tool_arguments,
    tool_result,
    user,
)
from .toolbox import Toolbox, encode, failure
from .workspace import Workspace, WorkspaceError, current_workspace

Observer = Callable[[dict[str, Any]], None]
DEFAULT_MAX_STEPS = 50
COUNTED_TEXTS = 4096  # message texts whose token count a session remembers
AGENTS_MD = "AGENTS.md"


@dataclass
class TurnResult:
    reply: str
    steps: int
    cancelled: bool = False
    error: str | None = None


@dataclass
class Fetched:
    """What one fetch produced: its text, its tool calls and what was wrong with each call's arguments."""

    parts: list[str] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    problems: list[str | None] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(self.parts)


async def system_prompt(workspace: Workspace) -> str:
    prompt = (
        "You are a coding agent working in a software project through the user's "
        f"{workspace.client}.\nWorkspace root: {workspace.root}\n"
        "Use the tools to read, change and run things in the workspace; paths are relative to the root. "
        "Your file changes reach the user as editor edits they can review and undo."
    )
    return prompt + await project_instructions(workspace)


async def project_instructions(workspace: Workspace) -> str:
    """AGENTS.md, read as the tools read a file: confined to the workspace, an unsaved buffer first.

    When it cannot be read (it leads outside, it is a folder, it is not text) the prompt
    says so and why, so neither the model nor the person takes its absence for silence.
    """
    try:
        text = await workspace.read_text(workspace.resolve(AGENTS_MD))
    except (WorkspaceError, OSError) as error:
        if not os.path.lexists(workspace.root / AGENTS_MD):
            return ""  # no AGENTS.md: nothing to say
        reason = workspace.describe(error) if isinstance(error, OSError) else str(error)
        return f"\n\n({AGENTS_MD} was skipped: {reason})"
    return f"\n\n# {AGENTS_MD}\n\n{text}"


CANCELLED_MARK = "[cancelled by the user before the reply was finished]"
CANCELLED_EMPTY_MARK = "[cancelled by the user before any reply]"


def exchange(prompt: str, reply: str, cancelled: bool = False, images: list[Image] | None = None) -> list[Message]:
    """What one turn leaves in the history: the prompt (with its images) and the final reply.

    A cancelled turn is marked so the model knows; one cancelled before any reply adds no
    empty assistant message, only the prompt with the mark."""
    if cancelled and not reply:
        return [asking(f"{prompt}\n\n{CANCELLED_EMPTY_MARK}", images)]
    if cancelled:
        return [asking(prompt, images), assistant(f"{reply}\n\n{CANCELLED_MARK}")]
    return [asking(prompt, images), assistant(reply)]


def asking(prompt: str, images: list[Image] | None) -> Message:
    """The person's message: the prompt, and the images sent with it."""
    message = user(prompt)
    if images:
        message["images"] = images
    return message


SUMMARY_MARK = "[A summary of the earlier turns of this conversation, which were compacted]"
SUMMARY_INSTRUCTIONS = (
    "You summarise a conversation between a person and a coding agent so that the agent can go on "
    "from the summary alone. Keep every file name, the decisions made and why, and the open tasks; "
    "leave out pleasantries and anything already undone. A summary of earlier turns at the start "
    "is part of the conversation: fold it into yours. Answer with the summary only."
)
SUMMARY_REQUEST = "Summarise the conversation above as instructed."


def summary_message(summary: str) -> Message:
    """The one message that stands for the compacted turns."""
    return user(f"{SUMMARY_MARK}\n\n{summary}")


def is_summary(turn: list[Message]) -> bool:
    return len(turn) == 1 and turn[0]["content"].startswith(SUMMARY_MARK)


def context_event(fitted: Fitted, budget: int) -> dict[str, Any]:
    """The ``context`` event: what was left out or cut to fit the budget."""
    return {
        "type": "context",
        "tokens": fitted.tokens,
        "budget": budget,
        "leftOut": fitted.left_out,
        "shortened": fitted.shortened,
    }


class Session:
    def __init__(
        self,
        provider: Provider,
        workspace: Workspace,
        *,
        toolbox: Toolbox | None = None,
        max_steps: int = DEFAULT_MAX_STEPS,
    ) -> None:
        self.provider = provider
        self.workspace = workspace
        self.toolbox = toolbox or Toolbox()
        self.max_steps = max_steps
        self.history: list[Message] = []
        self.cancelled_turn: TurnResult | None = None
        self._counted: tuple[tuple[Any, Any], Counter] | None = None
        self.context_setting: int | None = None  # the contextTokens setting, which wins
        self.model_window: int | None = None  # the model's known window, when the provider does not say

    @property
    def context_tokens(self) -> int:
        """The budget of one fetch (messages and tools): the setting as given, else what the provider
        says it takes (a local model once loaded: its context less its max_tokens), else the model's
        known window less room for the reply and a margin, else a safe default."""
        known = self.model_window and window_budget(self.model_window, getattr(self.provider, "max_tokens", None))
        return self.context_setting or getattr(self.provider, "context_tokens", None) or known or DEFAULT_CONTEXT_TOKENS

    async def messages(self) -> list[Message]:
        """The conversation as a provider sees it at the start of a turn."""
        return [system(await system_prompt(self.workspace)), *self.history]

    def fitted(self, messages: list[Message], history_length: int, tools: list[ToolDefinition]) -> Fitted:
        """``messages`` (the system prompt, ``history_length`` messages of history, then the
        current turn's) fitted to the budget, the tool definitions counted too."""
        count = self._counter()
        reserve = total_tokens([system(json.dumps(tools, ensure_ascii=False))], count) if tools else 0
        head, cut = messages[:1], 1 + history_length
        fitted = fit(head, messages[1:cut], messages[cut:], self.context_tokens - reserve, count)
        fitted.tokens += reserve
        return fitted

    def _counter(self) -> Counter:
        """The provider's count, remembered per text: the history is counted again before each fetch.

        Counted afresh when the provider changes, or says a new window (a local model, once loaded,
        counts with its own tokenizer instead of the estimate)."""
        key = (self.provider, getattr(self.provider, "context_tokens", None))
        if self._counted is None or self._counted[0] != key:
            self._counted = (key, functools.lru_cache(maxsize=COUNTED_TEXTS)(counter_of(self.provider)))
        return self._counted[1]

    async def estimate(self, prompt: str | None = None) -> Fitted:
        """What the next turn would send (before its prompt, or with ``prompt``) as it fits the
        budget, with the tools it would offer (outside tools too: their servers may start)."""
        asked = [user(prompt)] if prompt is not None else []
        return self.fitted([*await self.messages(), *asked], len(self.history), await self.toolbox.offered())

    async def summarise(self, messages: list[Message]) -> str:
        """The provider's summary of ``messages``, in fetches without tools that each fit the budget:
        the oldest turns that fit, then the next with the summary so far in their place, and so on."""
        count = self._counter()
        turns = split_turns(messages)
        summary = ""
        while turns:
            # the summary so far is kept to a quarter of the budget, so that turns always have room
            so_far = [summary_message(cut_text(summary, self.context_tokens // LARGEST_SHARE, count))] if summary else []
            head = [system(SUMMARY_INSTRUCTIONS), *so_far]
            room = self.context_tokens - total_tokens([*head, user(SUMMARY_REQUEST)], count)
            chunk, taken = oldest_turns(turns, room, count)
            turns = turns[taken:]
            summary = await self._summary_of([*head, *chunk, user(SUMMARY_REQUEST)])
        return summary

    async def _summary_of(self, request: list[Message]) -> str:
        fetched = Fetched()
        token = current_workspace.set(self.workspace)
        try:
            await self._fetch(request, [], fetched, lambda event: None)
        finally:
            current_workspace.reset(token)
        if not fetched.text.strip():
            raise ProviderError("the provider's summary was empty")
        return fetched.text.strip()

    async def turn(self, prompt: str, observer: Observer = lambda event: None, images: list[Image] | None = None) -> TurnResult:
        """Run one turn. Cancelling the task keeps the prompt and the reply so far."""
        messages = [*await self.messages(), asking(prompt, images)]
        history_length = len(self.history)
        fetched = Fetched()
        steps = 0
        told = (0, 0)  # the turns left out and results shortened the observers were told of
        token = current_workspace.set(self.workspace)
        self.cancelled_turn = None
        try:
            tools = await self.toolbox.offered()  # may start the servers of outside tools
            while True:
                if steps == self.max_steps:
                    raise ProviderError(f"stopped after {self.max_steps} steps: the provider kept asking for tools (maxSteps)")
                steps += 1
                fetched = Fetched()
                fitted = self.fitted(messages, history_length, tools)
                if fitted.left_out > told[0] or fitted.shortened > told[1]:
                    told = (fitted.left_out, fitted.shortened)
                    observer(context_event(fitted, self.context_tokens))
                await self._fetch(fitted.messages, tools, fetched, observer)
                if not fetched.calls:
                    break
                messages.append(assistant(fetched.text, fetched.calls))
                for call, problem in zip(fetched.calls, fetched.problems):
                    if problem:
                        result = failure(f"invalid arguments for {call['name']}: {problem}")
                    else:
                        self.workspace.tool_starting(call["id"], call["name"])
                        result = await self.toolbox.call(call["name"], call["arguments"], self.workspace)
                    observer(self.toolbox.event(call["id"], call["name"], result))
                    messages.append(tool_result(call["id"], encode(result)))
        except asyncio.CancelledError:
            self.history += exchange(prompt, fetched.text, cancelled=True, images=images)
            self.cancelled_turn = TurnResult(fetched.text, steps, cancelled=True)
            raise
        except Exception as error:
            reply = f"Error: {error}"
            self.history += exchange(prompt, reply, images=images)
            return TurnResult(reply, steps, error=str(error))
        finally:
            current_workspace.reset(token)
        self.history += exchange(prompt, fetched.text, images=images)
        return TurnResult(fetched.text, steps)

    async def _fetch(self, messages: list[Message], tools: list[ToolDefinition], fetched: Fetched, observer: Observer) -> None:
        def record(event: dict[str, Any]) -> None:
            if event["type"] == "saying":
                fetched.parts.append(event["text"])
            elif event["type"] == "doing":
                event["id"] = event["id"] or f"call_{len(fetched.calls) + 1}"
                # observers see what the call will run with: a malformed text is not echoed
                event["arguments"], problem = tool_arguments(event["arguments"])
                fetched.calls.append({"id": event["id"], "name": event["name"], "arguments": event["arguments"]})
                fetched.problems.append(problem)
            observer(event)

        if inspect.iscoroutinefunction(self.provider.fetch):
            emit = CheckedEmit(record)
            try:
                await self.provider.fetch(list(messages), tools, emit)
            finally:
                emit.closed = True
        else:
            conversation = list(messages)
            await run_in_thread(lambda send, _cancelled: self.provider.fetch(conversation, tools, checked(send)), record)


def checked(send: Callable[[dict[str, Any]], None]) -> Callable[[Any], None]:
    """The emit of a plain ``fetch``: each event checked on the provider's thread, then sent."""

    def emit(event: Any) -> None:
        event = check_event(event)
        if event is not None:
            send(dict(event))

    return emit


class CheckedEmit:
    """The emit of an ``async`` fetch: each event checked, and none taken once the fetch has ended."""

    def __init__(self, record: Callable[[dict[str, Any]], None]) -> None:
        self.record = record
        self.closed = False

    def __call__(self, event: Any) -> None:
        if self.closed:  # a task the provider left running; its turn is over
            raise TurnAbandoned("the fetch this emit belongs to has ended")
        event = check_event(event)
        if event is not None:
            self.record(dict(event))
