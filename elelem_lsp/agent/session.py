"""Session: one conversation with a provider, and the turn loop of the provider contract (docs/contract.md).

A turn calls ``fetch``, runs the tool calls it emitted in order, and calls it
again until a fetch asks for none. Afterwards the history keeps only the prompt
and the final reply. Observers see every event as it happens, plus a ``result``
event after each tool call (``summary`` or ``error``). A call whose arguments are malformed is answered
with an ``ok: false`` result saying what was wrong, and the model tries again.
The emit a fetch is given stops working when that fetch ends: nothing a
provider left running can reach the observers after its turn.
"""

from __future__ import annotations

import asyncio
import inspect
import os
from dataclasses import dataclass, field
from typing import Any, Callable

from .bridge import TurnAbandoned, run_in_thread
from .messages import (
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

    async def messages(self) -> list[Message]:
        """The conversation as a provider sees it at the start of a turn."""
        return [system(await system_prompt(self.workspace)), *self.history]

    async def turn(self, prompt: str, observer: Observer = lambda event: None) -> TurnResult:
        """Run one turn. Cancelling the task keeps the prompt and the reply so far."""
        messages = [*await self.messages(), user(prompt)]
        fetched = Fetched()
        steps = 0
        token = current_workspace.set(self.workspace)
        self.cancelled_turn = None
        try:
            tools = await self.toolbox.offered()  # may start the servers of outside tools
            while True:
                if steps == self.max_steps:
                    raise ProviderError(
                        f"stopped after {self.max_steps} steps: the provider kept asking for tools (maxSteps)"
                    )
                steps += 1
                fetched = Fetched()
                await self._fetch(messages, tools, fetched, observer)
                if not fetched.calls:
                    break
                messages.append(assistant(fetched.text, fetched.calls))
                for call, problem in zip(fetched.calls, fetched.problems):
                    if problem:
                        result = failure(f'invalid arguments for {call["name"]}: {problem}')
                    else:
                        result = await self.toolbox.call(call["name"], call["arguments"], self.workspace)
                    outcome = {"type": "result", "id": call["id"], "name": call["name"], "ok": result["ok"]}
                    if result["ok"]:
                        outcome["summary"] = self.toolbox.summary(call["name"], result)
                    else:
                        outcome["error"] = result["error"]
                    observer(outcome)
                    messages.append(tool_result(call["id"], encode(result)))
        except asyncio.CancelledError:
            self.history += [user(prompt), assistant(fetched.text)]
            self.cancelled_turn = TurnResult(fetched.text, steps, cancelled=True)
            raise
        except Exception as error:
            reply = f"Error: {error}"
            self.history += [user(prompt), assistant(reply)]
            return TurnResult(reply, steps, error=str(error))
        finally:
            current_workspace.reset(token)
        self.history += [user(prompt), assistant(fetched.text)]
        return TurnResult(fetched.text, steps)

    async def _fetch(
        self, messages: list[Message], tools: list[ToolDefinition], fetched: Fetched, observer: Observer
    ) -> None:
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
