"""One fetch of the provider contract (docs/contract.md): the provider called, what it emits checked and kept.

Bridges a provider's ``fetch`` (``async`` or plain, the plain one on a thread through
``bridge.run_in_thread``) to the observers of a turn: each event is checked (``check_event``),
a ``doing`` given an id, its arguments as the call will run with them and its ``title``, and the
reply's text and tool calls kept in a ``Fetched`` for the turn loop (``session.Session``). The emit
a fetch is given stops working when that fetch ends: nothing a provider left running can reach
the observers after its turn.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .bridge import TurnAbandoned, run_in_thread
from .messages import Message, Provider, ToolCall, ToolDefinition, check_event, tool_arguments

Observer = Callable[[dict[str, Any]], None]
Title = Callable[[str, dict[str, Any]], str]  # a call's title from its tool's name and arguments


@dataclass
class Fetched:
    """What one fetch produced: its text, its tool calls and what was wrong with each call's arguments."""

    parts: list[str] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    problems: list[str | None] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(self.parts)


async def fetch(
    provider: Provider, messages: list[Message], tools: list[ToolDefinition], fetched: Fetched, observer: Observer, title: Title
) -> None:
    """Call ``provider.fetch`` once, keeping what it emits in ``fetched`` and telling ``observer`` each event."""

    def record(event: dict[str, Any]) -> None:
        if event["type"] == "saying":
            fetched.parts.append(event["text"])
        elif event["type"] == "doing":
            event["id"] = event["id"] or f"call_{len(fetched.calls) + 1}"
            # observers see what the call will run with: a malformed text is not echoed
            event["arguments"], problem = tool_arguments(event["arguments"])
            event["title"] = title(event["name"], event["arguments"])
            fetched.calls.append({"id": event["id"], "name": event["name"], "arguments": event["arguments"]})
            fetched.problems.append(problem)
        observer(event)

    if inspect.iscoroutinefunction(provider.fetch):
        emit = CheckedEmit(record)
        try:
            await provider.fetch(list(messages), tools, emit)
        finally:
            emit.closed = True
    else:
        conversation = list(messages)
        await run_in_thread(lambda send, _cancelled: provider.fetch(conversation, tools, checked(send)), record)


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
