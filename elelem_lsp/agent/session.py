"""Session: one conversation with a provider, and the turn loop of the elelem seeds.

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
import contextvars
import inspect
import os
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable

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


class TurnAbandoned(Exception):
    """Raised by an emit called after its fetch ended (returned, failed or was cancelled)."""


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
        tools = self.toolbox.definitions()
        fetched = Fetched()
        steps = 0
        token = current_workspace.set(self.workspace)
        self.cancelled_turn = None
        try:
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
            await ThreadedFetch(record).run(self.provider, list(messages), tools)


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


class ThreadedFetch:
    """Runs a plain ``fetch`` on its own thread and hands its events to the loop in order.

    Events are batched: one loop wake-up drains every event emitted since the
    last. Once the fetch has ended (returned, raised, or its turn was cancelled)
    the emit is closed: later events, from the thread or any thread it started,
    are dropped for good and raise TurnAbandoned.
    """

    def __init__(self, record: Callable[[dict[str, Any]], None]) -> None:
        self.record = record
        self.pending: deque[dict[str, Any]] = deque()
        self.lock = threading.Lock()
        self.scheduled = False
        self.closed = False

    def emit(self, event: Any) -> None:
        event = check_event(event)
        if event is None:
            return
        with self.lock:
            if self.closed:
                raise TurnAbandoned("the fetch this emit belongs to has ended")
            self.pending.append(dict(event))
            wake = not self.scheduled
            self.scheduled = True
        if wake:
            self.loop.call_soon_threadsafe(self.drain)

    def drain(self) -> None:
        with self.lock:
            events = list(self.pending)
            self.pending.clear()
            self.scheduled = False
        for event in events:
            self.record(event)

    async def run(self, provider: Provider, messages: list[Message], tools: list[ToolDefinition]) -> None:
        self.loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = self.loop.create_future()

        def settle(error: BaseException | None) -> None:
            if done.done():
                return
            if error is None:
                done.set_result(None)
            else:
                done.set_exception(error)

        def work() -> None:
            try:
                provider.fetch(messages, tools, self.emit)
            except BaseException as error:  # reported on the loop, whatever it is
                self.close()
                self.loop.call_soon_threadsafe(settle, error)
            else:
                self.close()
                self.loop.call_soon_threadsafe(settle, None)

        # The thread sees the turn's context (current_workspace), as an async fetch would.
        context = contextvars.copy_context()
        threading.Thread(target=context.run, args=(work,), name="elelem-fetch", daemon=True).start()
        try:
            await done
        except asyncio.CancelledError:
            self.close(drop_pending=True)
            raise
        self.drain()

    def close(self, *, drop_pending: bool = False) -> None:
        """Take no more events; those not yet drained are kept unless the turn was cancelled."""
        with self.lock:
            self.closed = True
            if drop_pending:
                self.pending.clear()
