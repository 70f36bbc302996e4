"""The provider contract: messages, tool definitions and the checking of events, as plain dicts.

These are the shapes of docs/contract.md, with string keys. A provider receives
``messages`` and ``tools`` and calls ``emit`` with events (their shapes are ``events``');
nothing else of ours crosses that boundary.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, Literal, NotRequired, Protocol, TypedDict

from .events import TEXT_EVENTS, Event


class ToolCall(TypedDict):
    id: str
    name: str
    arguments: dict[str, Any]


class Image(TypedDict):
    """An image of a user or tool message: ``data`` (base64) or ``path`` (a file read when the message is
    sent, so a stored conversation keeps the path, not the bytes); see providers/images.py."""

    mimeType: str
    data: NotRequired[str]
    path: NotRequired[str]


class Message(TypedDict):
    role: Literal["system", "user", "assistant", "tool"]
    content: str  # always the text, images or not
    tool_calls: NotRequired[list[ToolCall]]
    tool_call_id: NotRequired[str]
    images: NotRequired[list[Image]]  # a prompt's, or a tool result's (a read image file)


class ToolFunction(TypedDict):
    name: str
    description: str
    parameters: dict[str, Any]


class ToolDefinition(TypedDict):
    type: Literal["function"]
    function: ToolFunction


Emit = Callable[[dict[str, Any]], None]


class Provider(Protocol):
    """Anything with ``fetch``; it may be ``async def`` or a plain function."""

    def fetch(self, messages: list[Message], tools: list[ToolDefinition], emit: Emit) -> Any: ...


class ProviderError(Exception):
    """A provider broke the contract or failed; ends the turn with ``Error: <message>``."""


def check_event(event: Any) -> Event | None:
    """The event as the agent will use it, None for a type the agent ignores.

    Raises ProviderError for a known type with the wrong fields, so a provider
    bug ends the turn with a message that says what was wrong.
    """
    if not isinstance(event, dict):
        raise ProviderError(f"an event must be a dict, got {type(event).__name__}")
    kind = event.get("type")
    if kind in TEXT_EVENTS:
        text = event.get("text")
        if not isinstance(text, str):
            raise ProviderError(f"a {kind} event needs a string text, got {type(text).__name__}")
        return event  # type: ignore[return-value]
    if kind == "doing":
        name = event.get("name")
        if not isinstance(name, str) or not name:
            raise ProviderError("a doing event needs a tool name")
        # arguments are the model's words, checked per call by tool_arguments: a bad one is the
        # model's mistake to correct, not a provider bug that ends the turn
        return {"type": "doing", "id": str(event.get("id") or ""), "name": name, "arguments": event.get("arguments")}
    if kind == "usage":  # one fetch's tokens, summed by the host (host/usage.py)
        return event  # type: ignore[return-value]
    return None


JSON_KINDS = {list: "an array", str: "a string", int: "a number", float: "a number", bool: "true or false"}


def tool_arguments(value: Any) -> tuple[dict[str, Any], str | None]:
    """A call's arguments as a dict, and what was wrong with them (None when nothing was).

    Takes what a provider emitted: a dict, or the JSON text the model wrote
    (blank text is no arguments). Anything else gives ``{}`` and a problem
    written for the model to correct on its next try.
    """
    if isinstance(value, str):
        if not value.strip():
            return {}, None
        try:
            value = json.loads(value)
        except json.JSONDecodeError as error:
            if error.msg.startswith("Invalid control character"):
                return {}, (
                    f"a raw control character (U+{ord(error.doc[error.pos]):04X}) inside a string at "
                    f"character {error.pos}; escape it (\\n for a newline, \\t for a tab)"
                )
            return {}, f"not valid JSON ({error.msg} at character {error.pos})"
        except RecursionError:
            return {}, "JSON nested too deeply"
    if not isinstance(value, dict):
        kind = "null" if value is None else JSON_KINDS.get(type(value), type(value).__name__)
        return {}, f"expected a JSON object of named arguments, got {kind}"
    if not all(isinstance(key, str) for key in value):
        return {}, "argument names must be strings"
    return value, None


def system(content: str) -> Message:
    return {"role": "system", "content": content}


def user(content: str, images: Sequence[Image] = ()) -> Message:
    message: Message = {"role": "user", "content": content}
    if images:
        message["images"] = list(images)
    return message


def assistant(content: str, tool_calls: list[ToolCall] | None = None) -> Message:
    message: Message = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return message


def tool_result(call_id: str, content: str) -> Message:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def encode(result: Any) -> str:
    """A tool's result as the text of its ``tool`` message: compact JSON, non-ASCII kept."""
    return json.dumps(result, ensure_ascii=False, separators=(",", ":"))
