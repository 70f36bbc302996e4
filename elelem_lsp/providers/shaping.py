"""Message and tool-call shaping shared by the remote and the local providers.

Bridges the agent's messages (``agent.messages``) to the OpenAI chat shape that
chat-completions servers and llama.cpp's chat templates both read, and
streamed tool-call fragments, whichever side they come from, back to ``doing``
events. Written once here so that an HTTP adapter and an in-process model
shape a conversation the same way. The ``usage`` event every provider emits
once per fetch is written here too, from the counts each wire names its own way.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ..agent.messages import Emit, Image, Message, ProviderError, tool_arguments
from .images import image_data


def compact_json(value: Any) -> str:
    """JSON as the APIs' own clients send it: no spaces, non-ASCII as is."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def chat_message(message: Message, encode_arguments: Callable[[Any], str] = compact_json) -> dict[str, Any]:
    """One agent message in the chat-completions shape: tool calls typed ``function``, their
    arguments a JSON text written by ``encode_arguments``."""
    if message["role"] == "tool":
        return {"role": "tool", "tool_call_id": message.get("tool_call_id", ""), "content": message.get("content", "")}
    out: dict[str, Any] = {"role": message["role"], "content": message.get("content", "")}
    if message.get("images"):
        out["content"] = chat_content(message)
    if message.get("tool_calls"):
        out["tool_calls"] = [
            {
                "id": call["id"],
                "type": "function",
                "function": {"name": call["name"], "arguments": encode_arguments(call["arguments"])},
            }
            for call in message["tool_calls"]
        ]
    return out


TOOL_IMAGES = "The images of the tool results above."


def tool_images_after_results(messages: list[Message]) -> list[Message]:
    """The conversation as chat-completions servers take it: a tool message holds text only, so
    the images of a run of tool results follow the run in one user message."""
    if not any(message["role"] == "tool" and message.get("images") for message in messages):
        return messages
    out: list[Message] = []
    pending: list[Image] = []
    for message in messages:
        if pending and message["role"] != "tool":
            out.append({"role": "user", "content": TOOL_IMAGES, "images": pending})
            pending = []
        if message["role"] == "tool":
            pending += message.get("images") or ()
        out.append(message)
    if pending:
        out.append({"role": "user", "content": TOOL_IMAGES, "images": pending})
    return out


def chat_content(message: Message) -> list[dict[str, Any]]:
    """A user message with images as chat-completions content parts: the text, then each image
    as a ``data:`` URL."""
    text = message.get("content", "")
    parts: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    for image in message.get("images") or ():
        media_type, data = image_data(image)
        parts.append({"type": "image_url", "image_url": {"url": f"data:{media_type};base64,{data}"}})
    return parts


class Usage:
    """The tokens of one fetch, as the wire reports them, emitted once as a ``usage`` event:
    ``inputTokens`` all the prompt tokens the model read (cached ones included),
    ``outputTokens`` the tokens it wrote, ``cachedInputTokens`` those of the prompt read from the
    provider's cache, when the wire says. A later report of a count replaces an earlier one
    (Anthropic's counts grow as the answer streams)."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def report(self, **counts: Any) -> None:
        """Counts under the event's names; anything that is not a whole number is left out."""
        for name, value in counts.items():
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                self.counts[name] = value

    def emit(self, emit: Emit) -> None:
        """The ``usage`` event, when the wire gave any count."""
        if "inputTokens" in self.counts or "outputTokens" in self.counts:
            emit({"type": "usage", "inputTokens": 0, "outputTokens": 0, **self.counts})


class ToolCalls:
    """Tool calls gathered from streamed fragments, each emitted once the stream is complete.

    ``add`` is called with whatever a chunk carries for one call (its key is the
    wire's index or content-block number); argument text is joined and parsed
    only in ``emit``, so a fragment may end anywhere, even mid-escape. Arguments
    that are not a JSON object are handed on as the model sent them: the session
    answers them with an ``ok: false`` result the model can act on. A call
    without an id gets ``<id_prefix>-<position>``: stable for the conversation
    and unique within a turn when the prefix names the conversation's length.
    """

    def __init__(self, id_prefix: str) -> None:
        self.calls: dict[Any, dict[str, Any]] = {}
        self.id_prefix = id_prefix  # for calls the wire sends without an id (Ollama, some servers)

    def __bool__(self) -> bool:
        return bool(self.calls)

    def add(self, key: Any, *, id: str | None = None, name: str | None = None, arguments: Any = None) -> None:
        """Merge what one chunk carries for call ``key``: a JSON text fragment or a whole object."""
        call = self.calls.setdefault(key, {"id": "", "name": "", "parts": [], "whole": None})
        if id:
            call["id"] = id
        if name and name != call["name"]:
            call["name"] += name  # a few servers stream the name in pieces, others repeat it whole
        if isinstance(arguments, str):
            call["parts"].append(arguments)
        elif arguments is not None:
            call["whole"] = arguments

    def last_key(self) -> Any:
        return next(reversed(self.calls)) if self.calls else None

    def emit(self, emit: Emit) -> None:
        """One ``doing`` per call, in the order the calls began."""
        for position, call in enumerate(self.calls.values(), 1):
            name = call["name"]
            if not name:
                raise ProviderError("the model sent a tool call without a name")
            text = "".join(call["parts"])
            arguments: str | dict[str, Any]
            if text.strip():
                arguments = text
            else:
                arguments = {} if call["whole"] is None else call["whole"]
            parsed, problem = tool_arguments(arguments)
            if problem is None:
                arguments = parsed
            emit({"type": "doing", "id": call["id"] or f"{self.id_prefix}-{position}", "name": name, "arguments": arguments})
