"""The ``<tool_call>`` text protocol and ChatML prompts, for models that only write text.

Bridges the agent's messages and tool definitions to one ChatML prompt (the
tools described in the system turn, earlier calls and results written back the
way the model is asked to write them, Qwen and Hermes style), and the model's
streamed text back to events: plain text becomes ``saying`` as it arrives, and
each complete ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``
becomes one ``doing``. A tag or end marker split across tokens is held back
until it is whole, so no partial tag ever shows.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ...agent.messages import Emit, Message, ProviderError, ToolDefinition

log = logging.getLogger(__name__)

CALL_OPEN = "<tool_call>"
CALL_CLOSE = "</tool_call>"
TURN_START = "<|im_start|>"
TURN_END = "<|im_end|>"
CHATML_STOPS = (TURN_END, TURN_START, "<|endoftext|>")  # a new turn also ends the reply


def describe_tools(tools: Iterable[ToolDefinition]) -> str:
    """The system-prompt section that lists the tools and how to call them."""
    listed = "\n".join(json.dumps(tool, ensure_ascii=False) for tool in tools)  # as the templates' tojson writes them
    return (
        "# Tools\n\n"
        "You may call one or more functions. The functions are listed in <tools></tools>:\n"
        f"<tools>\n{listed}\n</tools>\n\n"
        "For each call, write a JSON object with the function name and its arguments within "
        f"{CALL_OPEN}{CALL_CLOSE} tags:\n"
        f'{CALL_OPEN}\n{{"name": <function-name>, "arguments": <args-json-object>}}\n{CALL_CLOSE}'
    )


def write_arguments(arguments: Any) -> str:
    """A call's arguments as the model is asked to write them, the text chat templates show."""
    return json.dumps(arguments, ensure_ascii=False)


def write_call(name: str, arguments: dict[str, Any]) -> str:
    """A call as the model is asked to write it."""
    body = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
    return f"{CALL_OPEN}\n{body}\n{CALL_CLOSE}"


def with_tools_described(messages: list[Message], tools: list[ToolDefinition]) -> list[Message]:
    """``messages`` with the tool description appended to the system prompt (one added if none)."""
    if not tools:
        return list(messages)
    section = describe_tools(tools)
    if messages and messages[0]["role"] == "system":
        first = messages[0]
        content = f"{first['content']}\n\n{section}" if first["content"] else section
        return [{**first, "content": content}, *messages[1:]]
    return [{"role": "system", "content": section}, *messages]


def _turns(messages: list[Message], tools: list[ToolDefinition]) -> list[tuple[str, str]]:
    """(role, text) per message, tools described, calls and results written as the model writes them."""
    turns: list[tuple[str, str]] = []
    for message in with_tools_described(messages, tools):
        role, content = message["role"], message.get("content") or ""
        if role == "assistant":
            calls = [write_call(c["name"], c["arguments"]) for c in message.get("tool_calls") or []]
            content = "\n".join(part for part in [content, *calls] if part)
        elif role == "tool":
            role, content = "user", f"<tool_response>\n{content}\n</tool_response>"
        turns.append((role, content))
    return turns


def chatml_prompt(messages: list[Message], tools: list[ToolDefinition]) -> str:
    """The whole conversation as ChatML, ending where the assistant's reply begins."""
    turns = "".join(f"{TURN_START}{role}\n{content}{TURN_END}\n" for role, content in _turns(messages, tools))
    return turns + f"{TURN_START}assistant\n"


def llama2_prompt(messages: list[Message], tools: list[ToolDefinition]) -> str:
    """The conversation in Llama 2 chat's ``[INST]`` format (the tokenizer adds the first ``<s>``)."""
    system = "\n".join(content for role, content in _turns(messages, tools) if role == "system")
    exchanges: list[str] = []
    asked: list[str] = [f"<<SYS>>\n{system}\n<</SYS>>\n\n"] if system else []
    for role, content in _turns(messages, tools):
        if role == "assistant":
            exchanges.append(f"[INST] {''.join(asked).strip()} [/INST] {content} </s>")
            asked = []
        elif role != "system":
            asked.append(content + "\n")
    return "<s>".join([*exchanges, f"[INST] {''.join(asked).strip()} [/INST]"])


@dataclass(frozen=True)
class Template:
    """How a prompt is written for one family of chat models, and the text that ends a reply."""

    render: Callable[[list[Message], list[ToolDefinition]], str]
    stops: tuple[str, ...]


TEMPLATES = {
    "chatml": Template(chatml_prompt, CHATML_STOPS),
    "llama2": Template(llama2_prompt, ("[INST]",)),
}


def template_named(name: str | None) -> Template:
    """The template called ``name`` (ChatML when not given)."""
    if not name:
        return TEMPLATES["chatml"]
    if name not in TEMPLATES:
        raise ProviderError(f"unknown chat template {name!r}; known: {', '.join(TEMPLATES)}")
    return TEMPLATES[name]


class ToolCallStream:
    """Turns streamed model text into ``saying`` and ``doing`` events.

    ``feed`` takes each piece of text as it is generated and returns True once an
    end marker (one of ``stops``) has ended the reply; ``close`` flushes what is
    held back when generation ends. A call that is not JSON, or that ends
    unfinished, is shown as text rather than dropped.
    """

    def __init__(self, emit: Emit, stops: Iterable[str] = CHATML_STOPS) -> None:
        self._emit = emit
        self._stops = tuple(stops)
        self._pending = ""
        self._in_call = False
        self.stopped = False
        self.calls = 0

    def feed(self, text: str) -> bool:
        if self.stopped:
            return True
        self._pending += text
        while not self.stopped:
            if self._in_call:
                if not self._take_call():
                    break
            elif not self._take_text():
                break
        return self.stopped

    def close(self) -> None:
        if self._in_call:
            self._say(CALL_OPEN + self._pending)
        else:
            self._say(self._pending)
        self._pending = ""
        self._in_call = False

    def _take_text(self) -> bool:
        """Emit plain text up to the next tag; True when a call began (more to parse)."""
        marker, at = _first(self._pending, (CALL_OPEN, *self._stops))
        if marker is None:
            held = _partial_marker_length(self._pending, (CALL_OPEN, *self._stops))
            self._say(self._pending[: len(self._pending) - held])
            self._pending = self._pending[len(self._pending) - held :]
            return False
        self._say(self._pending[:at])
        if marker == CALL_OPEN:
            self._pending = self._pending[at + len(marker) :]
            self._in_call = True
            return True
        self._pending = ""  # what follows the end of the reply is not part of it
        self.stopped = True
        return False

    def _take_call(self) -> bool:
        """Emit the call once its closing tag arrived; True when text follows to parse."""
        marker, at = _first(self._pending, (CALL_CLOSE, *self._stops))
        if marker is None:
            return False
        body = self._pending[:at]
        self._in_call = False
        if marker == CALL_CLOSE:
            self._pending = self._pending[at + len(marker) :]
            self._call(body)
            return True
        self._say(CALL_OPEN + body)  # the reply ended inside the call
        self._pending = ""
        self.stopped = True
        return False

    def _call(self, body: str) -> None:
        call = parse_call(body)
        if call is None:
            log.warning("the model wrote a tool call that is not a JSON name and arguments: %.200s", body)
            self._say(f"{CALL_OPEN}{body}{CALL_CLOSE}")
            return
        self.calls += 1
        name, arguments = call
        self._emit({"type": "doing", "id": f"call_{uuid.uuid4().hex[:12]}", "name": name, "arguments": arguments})

    def _say(self, text: str) -> None:
        if text:
            self._emit({"type": "saying", "text": text})


def parse_call(body: str) -> tuple[str, dict[str, Any]] | None:
    """``(name, arguments)`` of a call's JSON, None when it is not one.

    Arguments may also come as a JSON string or under ``parameters``, as some models write them.
    """
    try:
        data = json.loads(body)
    except json.JSONDecodeError:
        return None
    if not isinstance(data, dict):
        return None
    name = data.get("name")
    arguments = data.get("arguments", data.get("parameters", {}))
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            return None
    if not isinstance(name, str) or not name or not isinstance(arguments, dict):
        return None
    return name, arguments


def _first(text: str, markers: Iterable[str]) -> tuple[str | None, int]:
    """The marker found earliest in ``text`` and where, or ``(None, -1)``."""
    best: tuple[str | None, int] = (None, -1)
    for marker in markers:
        at = text.find(marker)
        if at != -1 and (best[0] is None or at < best[1]):
            best = (marker, at)
    return best


def _partial_marker_length(text: str, markers: Iterable[str]) -> int:
    """How many characters at the end of ``text`` could be the start of a marker."""
    longest = 0
    for marker in markers:
        for size in range(min(len(marker) - 1, len(text)), longest, -1):
            if text.endswith(marker[:size]):
                longest = size
                break
    return longest
