"""Session: one conversation with a provider, and the turn loop of the provider contract (docs/contract.md).

Bridges a face's prompt to the provider's fetches and the tools they ask for. A turn calls
``fetch`` (``fetching``), runs the tool calls it emitted in order, and calls it again until a
fetch asks for none. Afterwards the history keeps only the prompt and the final reply
(``history.exchange``: a cancelled turn marked so). Each turn starts from the system prompt
(``instructions.system_prompt``), in the mode and with the tools the budget allows
(``prompt_size``); before each fetch the messages are fitted to the context budget (``budget``),
and observers get a ``context`` event when turns were left out or results shortened. Observers
see every event as it happens (a ``doing`` with its ``title`` added), plus a ``result`` event
after each tool call (``summary`` or ``error``); the turn's result says why it stopped
(``TurnResult.stop_reason``). A call whose arguments are malformed is answered with an
``ok: false`` result saying what was wrong, and the model tries again. No exception of a tool or
of the steps around one (telling the face it starts, the check after a change, its result's
message) ends the turn: it is logged and becomes what the model reads (``Toolbox.call``,
``StepCheck``).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .budget import (
    DEFAULT_CONTEXT_TOKENS,
    LARGEST_SHARE,
    Counter,
    Fitted,
    counter_of,
    cut_text,
    fit,
    oldest_turns,
    result_room,
    split_turns,
    tools_tokens,
    total_tokens,
    window_budget,
)
from .check import CheckSettings, StepCheck
from .events import StopReason, context_event
from .fetching import Fetched, Observer, fetch
from .history import SUMMARY_INSTRUCTIONS, SUMMARY_REQUEST, exchange, summary_message, without_images
from .images import takes_images, turn_takes_images
from .instructions import system_prompt
from .messages import (
    Image,
    Message,
    Provider,
    ProviderError,
    ToolCall,
    ToolDefinition,
    assistant,
    system,
    tool_result,
    user,
)
from .prompt_size import PromptParts, SizedTools, chosen_mode, sized_tools
from .redaction import redact_error
from .toolbox import Toolbox, encode, failure
from .workspace import Workspace, current_workspace

log = logging.getLogger(__name__)

DEFAULT_MAX_STEPS = 50
COUNTED_TEXTS = 4096  # message texts whose token count a session remembers


class StepLimit(ProviderError):
    """The provider kept asking for tools until the turn's ``maxSteps``."""


@dataclass
class TurnResult:
    reply: str
    steps: int
    cancelled: bool = False
    error: str | None = None
    step_limit: bool = False  # the error is that the turn ran out of steps

    @property
    def stop_reason(self) -> StopReason:
        """Why the turn ended, for a face that says it in its protocol's terms."""
        if self.cancelled:
            return "cancelled"
        if self.error is not None:
            return "max_steps" if self.step_limit else "error"
        return "end"


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
        self.check = CheckSettings()  # what is checked after a step that changed files (agent/check.py)
        self.history: list[Message] = []
        self.cancelled_turn: TurnResult | None = None
        self.secrets: set[str] = set()  # the settings' keys, kept out of error texts with the environment's
        self._counted: tuple[tuple[Any, Any], Counter] | None = None
        self.context_setting: int | None = None  # the contextTokens setting, which wins
        self.model_window: int | None = None  # the model's known window, when the provider does not say
        self.served_window: int | None = None  # the window the provider looked up (its ``context_window()``)
        self.prompt_setting = "auto"  # the ``prompt`` setting: full, compact, or auto by the budget
        self.tools_left_out: list[str] = []  # the optional tools the last fixed part had no room for

    @property
    def context_tokens(self) -> int:
        """The budget of one fetch (messages and tools): the setting as given, else what the provider
        says it takes (a local model once loaded: its context less its max_tokens), else the model's
        known window less room for the reply and a margin, else a safe default."""
        window = self.served_window or self.model_window
        known = window and window_budget(window, getattr(self.provider, "max_tokens", None))
        return self.context_setting or getattr(self.provider, "context_tokens", None) or known or DEFAULT_CONTEXT_TOKENS

    @property
    def prompt_mode(self) -> str:
        """``full`` or ``compact``: the prompt this budget gets (``prompt_size``)."""
        return chosen_mode(self.prompt_setting, self.context_tokens)

    async def learn_window(self) -> None:
        """The provider's true window, when it can look it up (its optional ``context_window()``: a
        server's own context, a local model's file); a failed lookup leaves the known windows."""
        look_up = getattr(self.provider, "context_window", None)
        if not callable(look_up):
            return
        try:
            self.served_window = await look_up()
        except Exception as error:  # the turn goes on with the known windows; a fetch says what is wrong
            log.info("could not learn the model's window: %s", error)

    async def messages(self) -> list[Message]:
        """The conversation as a provider sees it at the start of a turn (the earlier images left out
        when it cannot take them: only the turn's own are refused)."""
        history = self.history if takes_images(self.provider) else [without_images(message) for message in self.history]
        # however long AGENTS.md is, the fixed part leaves the window to the conversation
        room = self.context_tokens // LARGEST_SHARE
        prompt = await system_prompt(self.workspace, self.prompt_mode == "compact", room, self._counter())
        return [system(prompt), *history]

    def sized(self, messages: list[Message], definitions: list[ToolDefinition]) -> SizedTools:
        """The tools a turn of ``messages`` (the system prompt, the history, the prompt) offers of
        ``definitions`` in this budget's mode (``prompt_size.sized_tools``)."""
        compact = self.prompt_mode == "compact"
        parts = PromptParts(messages, len(self.history), self.context_tokens, self._counter())
        sized = sized_tools(definitions, self.toolbox.is_core, parts) if compact else SizedTools(definitions)
        self.tools_left_out = sized.left_out
        return sized

    def fitted(self, messages: list[Message], history_length: int, tools: list[ToolDefinition]) -> Fitted:
        """``messages`` (the system prompt, ``history_length`` messages of history, then the
        current turn's) fitted to the budget, the tool definitions counted too."""
        reserve = self._reserve(tools)
        head, cut = messages[:1], 1 + history_length
        fitted = fit(head, messages[1:cut], messages[cut:], self.context_tokens - reserve, self._counter())
        fitted.tokens += reserve
        fitted.fixed += reserve
        return fitted

    def _reserve(self, tools: list[ToolDefinition]) -> int:
        """The tokens the tool definitions take of each fetch's budget."""
        return tools_tokens(tools, self._counter())

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
        budget, with the tools it would offer (outside tools too: a server not started yet starts)."""
        await self.learn_window()
        messages = [*await self.messages(), *([user(prompt)] if prompt is not None else [])]
        tools = self.sized(messages, await self.toolbox.counted(self.prompt_mode == "compact")).offered
        return self.fitted(messages, len(self.history), tools)

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
            await fetch(self.provider, request, [], fetched, lambda event: None, self.toolbox.title)
        finally:
            current_workspace.reset(token)
        if not fetched.text.strip():
            raise ProviderError("the provider's summary was empty")
        return fetched.text.strip()

    async def turn(self, prompt: str, observer: Observer = lambda event: None, images: Sequence[Image] = ()) -> TurnResult:
        """Run one turn (``images`` go with the prompt). Cancelling the task keeps the prompt and the reply so far."""
        history_length = len(self.history)
        fetched = Fetched()
        steps = 0
        told = (0, 0)  # the turns left out and results shortened the observers were told of
        token = current_workspace.set(self.workspace)
        seeing = turn_takes_images.set(takes_images(self.provider))
        room = None
        self.cancelled_turn = None
        messages: list[Message] = []
        try:
            await self.learn_window()
            messages = [*await self.messages(), user(prompt, images)]
            # may start the servers of outside tools
            tools = self.sized(messages, await self.toolbox.offered(self.prompt_mode == "compact")).offered
            parts = PromptParts(messages, history_length, self.context_tokens, self._counter())
            room = result_room.set(parts.room_for_results(tools))
            while True:
                if steps == self.max_steps:
                    raise StepLimit(f"stopped after {self.max_steps} steps: the provider kept asking for tools (maxSteps)")
                steps += 1
                fetched = Fetched()
                fitted = self.fitted(messages, history_length, tools)
                if fitted.left_out > told[0] or fitted.shortened > told[1]:
                    told = (fitted.left_out, fitted.shortened)
                    observer(dict(context_event(fitted.tokens, self.context_tokens, fitted.left_out, fitted.shortened)))
                await fetch(self.provider, fitted.messages, tools, fetched, observer, self.toolbox.title)
                if not fetched.calls:
                    break
                messages.append(assistant(fetched.text, fetched.calls))
                check = await StepCheck.start(self.check, self.workspace, self.toolbox, fetched.calls)
                results = []
                for call, problem in zip(fetched.calls, fetched.problems):
                    if problem:
                        result = failure(f"invalid arguments for {call['name']}: {problem}")
                    else:
                        self.tool_starting(call)
                        result = await self.toolbox.call(call["name"], call["arguments"], self.workspace)
                    observer(self.toolbox.event(call["id"], call["name"], call["arguments"], result))
                    results.append(result)
                await check.finish(fetched.calls, results, observer)  # may add ``checked`` to a result
                messages += [tool_message(call["id"], result) for call, result in zip(fetched.calls, results)]
        except asyncio.CancelledError:
            self.history += exchange(prompt, fetched.text, cancelled=True, images=images)
            self.cancelled_turn = TurnResult(fetched.text, steps, cancelled=True)
            raise
        except Exception as error:
            said = redact_error(str(error), self.secrets)  # a provider's error may quote a key
            reply = f"Error: {said}"
            self.history += exchange(prompt, reply, images=images)
            return TurnResult(reply, steps, error=said, step_limit=isinstance(error, StepLimit))
        finally:
            current_workspace.reset(token)
            turn_takes_images.reset(seeing)
            if room is not None:
                result_room.reset(room)
        self.history += exchange(prompt, fetched.text, images=images)
        return TurnResult(fetched.text, steps)

    def tool_starting(self, call: ToolCall) -> None:
        """Tell the face a call starts; its failure to show it is logged, and the call runs all the same."""
        try:
            self.workspace.tool_starting(call["id"], call["name"])
        except Exception:
            log.exception("could not tell the face that %s starts", call["name"])


def tool_message(call_id: str, result: dict[str, Any]) -> Message:
    """A tool result as its message: the result as JSON, and the images it gave (a read image file) beside it."""
    images = result.pop("images", None)
    try:
        content = encode(result)
    except (TypeError, ValueError) as error:  # a source's result that is not JSON: the model is told, the turn goes on
        log.exception("the result of call %s is not JSON", call_id)
        content = encode(failure(f"the tool's result could not be read: {error}"))
    message = tool_result(call_id, content)
    if images:
        message["images"] = images
    return message
