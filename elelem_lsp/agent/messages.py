"""The provider contract: messages, tool definitions and events, as plain dicts.

These are the shapes of the elelem seeds with string keys. A provider receives
``messages`` and ``tools`` and calls ``emit`` with events; nothing else of ours
crosses that boundary.
"""

from __future__ import annotations

from typing import Any, Callable, Literal, NotRequired, Protocol, TypedDict, Union


class ToolCall(TypedDict):
    id: str
    name: str
    arguments: dict[str, Any]


class Message(TypedDict):
    role: Literal["system", "user", "assistant", "tool"]
    content: str
    tool_calls: NotRequired[list[ToolCall]]
    tool_call_id: NotRequired[str]


class ToolFunction(TypedDict):
    name: str
    description: str
    parameters: dict[str, Any]


class ToolDefinition(TypedDict):
    type: Literal["function"]
    function: ToolFunction


class Saying(TypedDict):
    type: Literal["saying"]
    text: str


class Thinking(TypedDict):
    type: Literal["thinking"]
    text: str


class Doing(TypedDict):
    type: Literal["doing"]
    id: str
    name: str
    arguments: dict[str, Any]


Event = Union[Saying, Thinking, Doing]
Emit = Callable[[dict[str, Any]], None]
TEXT_EVENTS = ("saying", "thinking")


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
        arguments = event.get("arguments")
        if not isinstance(arguments, dict) or not all(isinstance(k, str) for k in arguments):
            raise ProviderError(
                "a doing event's arguments must be a dict with string keys (parse the JSON first), "
                f"got {type(arguments).__name__}"
            )
        name = event.get("name")
        if not isinstance(name, str) or not name:
            raise ProviderError("a doing event needs a tool name")
        return {"type": "doing", "id": str(event.get("id") or ""), "name": name, "arguments": arguments}
    return None


def system(content: str) -> Message:
    return {"role": "system", "content": content}


def user(content: str) -> Message:
    return {"role": "user", "content": content}


def assistant(content: str, tool_calls: list[ToolCall] | None = None) -> Message:
    message: Message = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return message


def tool_result(call_id: str, content: str) -> Message:
    return {"role": "tool", "tool_call_id": call_id, "content": content}
