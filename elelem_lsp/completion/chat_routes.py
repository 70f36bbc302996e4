"""Routes for any provider: the hole-filling chat prompt through its ``fetch``, and its own ``complete``.

Bridges the provider contract (``fetch(messages, tools, emit)``, plain or async) to a stream of
the answer's pieces: the prompt of ``templates.chat_messages``, the ``saying`` events cut to
what lies between the completion tags (``templates.AnswerOf``), a restatement of the cursor's
line dropped. A provider that offers ``complete(request)`` (a plugin's own completion method,
docs/contract.md) is asked that instead. A plain method runs on a worker thread; closing the
stream cancels the fetch.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing
from typing import Any

from ..agent.bridge import run_in_thread
from ..agent.messages import Message
from .routes import Fill, Route
from .templates import AnswerOf, chat_messages

Event = dict[str, Any]
REPLY_CHARS = 12  # characters of a whole reply read per token of the answer asked for: room for talk around it
_END = object()


async def events_of(start: Callable[[Callable[[Event], None]], Awaitable[None]]) -> AsyncGenerator[Event, None]:
    """The events ``start(emit)`` emits, as a stream; closing the stream cancels it, and its error is raised."""
    queue: asyncio.Queue[Any] = asyncio.Queue()

    async def run() -> None:
        try:
            await start(queue.put_nowait)
        finally:
            queue.put_nowait(_END)

    task = asyncio.ensure_future(run())
    try:
        while (event := await queue.get()) is not _END:
            yield event
        await task
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


async def fetch_once(provider: Any, messages: list[Message], emit: Callable[[Event], None]) -> None:
    """One ``fetch`` without tools, awaited or on a thread as the provider is written."""
    if inspect.iscoroutinefunction(provider.fetch):
        await provider.fetch(messages, [], emit)
    else:
        await run_in_thread(lambda send, _cancelled: provider.fetch(messages, [], send), emit, name="elelem-complete")


class ChatFill(Route):
    """The hole-filling prompt sent as a conversation; the answer cut out of the reply."""

    name = "chat"
    stops = ()  # the answer is cut out between its tags

    def __init__(self, provider: Any) -> None:
        self.provider = provider

    async def stream(self, fill: Fill) -> AsyncGenerator[str, None]:
        messages = chat_messages(fill.context, fill.multiline)
        answer = AnswerOf()
        unstated = Unrestated(fill.context.line_before.strip())
        async with aclosing(events_of(lambda emit: fetch_once(self.provider, messages, emit))) as events:
            async for event in events:
                if event.get("type") == "usage":
                    fill.count(event.get("inputTokens"), event.get("outputTokens"))
                if event.get("type") == "saying" and isinstance(event.get("text"), str):
                    if piece := unstated.feed(answer.feed(event["text"])):
                        yield piece
                    if answer.done or len(answer.reply) > fill.max_tokens * REPLY_CHARS:  # a reply that rambles is cut
                        break
        if piece := unstated.feed(answer.finish()) + unstated.finish():
            yield piece


class Unrestated:
    """A chat answer without the cursor's line written again at its start (models often restate
    the line they complete): the answer's start is held until it is clear whether it does."""

    def __init__(self, line: str) -> None:
        self.line = line
        self.held = ""
        self.decided = not line

    def feed(self, piece: str) -> str:
        if self.decided:
            return piece
        self.held += piece
        lead = self.held.lstrip()
        if len(lead) < len(self.line) and self.line.startswith(lead):
            return ""
        self.decided = True
        return lead[len(self.line) :] if lead.startswith(self.line) else self.held

    def finish(self) -> str:
        """What is still held at the end: an answer shorter than the line it might restate."""
        held, self.held, self.decided = ("" if self.decided else self.held), "", True
        return held


class PluginComplete(Route):
    """A provider's own ``complete(request)``: text, or pieces of it, plain or async."""

    name = "plugin"

    def __init__(self, provider: Any) -> None:
        self.provider = provider

    async def stream(self, fill: Fill) -> AsyncGenerator[str, None]:
        context = fill.context
        request = {
            "prefix": context.prefix,
            "suffix": context.suffix,
            "path": context.path,
            "language": context.language,
            "snippets": [{"path": snippet.path, "text": snippet.text} for snippet in context.snippets],
            "maxTokens": fill.max_tokens,
            "stop": fill.line_stops(),
            "multiline": fill.multiline,
        }
        complete = self.provider.complete
        if inspect.iscoroutinefunction(complete) or inspect.isasyncgenfunction(complete):
            result = complete(request)
            if inspect.isawaitable(result):
                result = await result
        else:
            result = await asyncio.to_thread(lambda: materialised(complete(request)))
        if isinstance(result, str):
            yield result
        elif hasattr(result, "__aiter__"):
            async for piece in result:
                if isinstance(piece, str):
                    yield piece
        elif result is not None:
            for piece in result:
                if isinstance(piece, str):
                    yield piece


def materialised(result: Any) -> Any:
    """A plain ``complete``'s answer, its pieces read on the worker thread."""
    return result if result is None or isinstance(result, str) else list(result)
