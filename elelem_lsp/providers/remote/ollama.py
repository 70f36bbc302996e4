"""Ollama's chat API, streamed as NDJSON: the ``ollama`` provider.

Bridges the provider contract to ``POST <OLLAMA_HOST>/api/chat``: one JSON
object per line, ``message.content`` as ``saying``, ``message.thinking`` as
``thinking`` (``OLLAMA_THINK`` turns it on or off), tool calls as whole
objects (on any line, often the final one) with no id, so one is made from the
conversation's length and the call's position. Tool results go back with
``tool_name`` instead of ``tool_call_id``. Images of a user message or tool
result go as ``images`` (base64) on it; the final line's ``prompt_eval_count`` and
``eval_count`` are the ``usage`` event.

Ollama runs a model with its own default window unless a request sets ``options.num_ctx``, and
drops what does not fit without a word; so every request sets it: ``OLLAMA_NUM_CTX``, else the
model's own context from ``/api/show`` bounded by the machine's memory (``served_window``), else
the family's known window under the same bound. ``context_window()`` says it to the session, whose
budget then keeps every prompt within it.
"""

from __future__ import annotations

from typing import Any

import httpx

from ...agent.messages import Emit, Message, ProviderError, ToolDefinition
from ..environment import positive_number
from ..images import image_data
from ..shaping import ToolCalls, Usage
from ..windows import model_window
from .http import Transport, env, ndjson_lines, open_response, origin, stream_failure
from .served_window import memory_cap, ollama_window
from .warm import PreparesHTTP

DEFAULT_HOST = "localhost:11434"
DEFAULT_MODEL = "gpt-oss:latest"
UNKNOWN_WINDOW = 8_192  # num_ctx for a model neither the server nor the known windows say anything of


def host_url(host: str) -> str:
    """``OLLAMA_HOST`` as a base URL: a bare ``host[:port]`` gets http and port 11434, as ollama does."""
    host = host.strip().rstrip("/")
    scheme, sep, rest = host.partition("://")
    if not sep:
        scheme, rest = "http", host
    hostname, _, path = rest.partition("/")
    if ":" not in hostname.rsplit("]", 1)[-1]:
        hostname += ":443" if scheme == "https" else ":11434"
    return f"{scheme}://{hostname}" + (f"/{path}" if path else "")


def convert_messages(messages: list[Message]) -> list[dict[str, Any]]:
    names: dict[str, str] = {}  # tool call id -> tool name, for the results that follow
    out: list[dict[str, Any]] = []
    for message in messages:
        role, content = message["role"], message.get("content", "")
        if role == "tool":
            call_id = message.get("tool_call_id", "")
            out.append({"role": "tool", "content": content, "tool_name": names.get(call_id, call_id), **images_of(message)})
        elif message.get("tool_calls"):
            calls = message["tool_calls"]
            names.update((call["id"], call["name"]) for call in calls)
            out.append(
                {
                    "role": role,
                    "content": content,
                    "tool_calls": [{"function": {"name": c["name"], "arguments": c["arguments"]}} for c in calls],
                }
            )
        else:
            out.append({"role": role, "content": content, **images_of(message)})
    return out


def images_of(message: Message) -> dict[str, list[str]]:
    """The ``images`` field of a message that has images (base64 without a ``data:`` prefix)."""
    if not message.get("images"):
        return {}
    return {"images": [image_data(image)[1] for image in message["images"]]}


class OllamaProvider(PreparesHTTP):
    """A model served by Ollama at ``host``."""

    images = True  # Ollama itself refuses them for a model that has no vision

    def __init__(
        self,
        model: str,
        *,
        host: str = DEFAULT_HOST,
        temperature: float | None = None,
        max_tokens: int | None = None,
        think: bool | str | None = None,
        num_ctx: int | None = None,
        transport: Transport | None = None,
    ) -> None:
        self.model = model
        self.host = host_url(host)
        self.url = f"{self.host}/api/chat"
        self.num_ctx = num_ctx  # the window every request asks for: OLLAMA_NUM_CTX, else looked up once
        self.think = think
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.transport = transport

    def request_body(self, messages: list[Message], tools: list[ToolDefinition]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": convert_messages(messages)}
        if tools:
            body["tools"] = tools
        body["stream"] = True
        if self.think is not None:
            body["think"] = self.think
        options: dict[str, Any] = {}
        if self.temperature is not None:
            options["temperature"] = self.temperature
        if self.max_tokens is not None:
            options["num_predict"] = self.max_tokens
        if options:
            body["options"] = options
        return body

    async def context_window(self) -> int:
        """The window the model runs with, in tokens (``num_ctx``): the setting, else the model's own
        (``/api/show``) or its family's, bounded by what the machine's memory sensibly holds."""
        if self.num_ctx is None:
            own = await ollama_window(self.host, self.model, self.transport)
            self.num_ctx = min(own or model_window(self.model) or UNKNOWN_WINDOW, memory_cap())
        return self.num_ctx

    async def fetch(self, messages: list[Message], tools: list[ToolDefinition], emit: Emit) -> None:
        body = self.request_body(messages, tools)  # a bad image is refused here, before any request
        body.setdefault("options", {})["num_ctx"] = await self.context_window()  # every request says its window
        async with open_response(
            "POST", self.url, body=body, headers={"accept": "application/x-ndjson"}, transport=self.transport
        ) as response:
            await read_chat_lines(response, emit, id_prefix=f"ollama-{len(messages)}")


async def read_chat_lines(response: httpx.Response, emit: Emit, *, id_prefix: str) -> None:
    """Events from an ``/api/chat`` NDJSON body; ``doing`` events once ``done`` arrived."""
    calls = ToolCalls(id_prefix)
    usage = Usage()
    finished = False
    async for line in ndjson_lines(response):
        if not isinstance(line, dict):
            raise ProviderError(f"malformed line in the model's stream: {line!r:.120}")
        if "error" in line:
            raise stream_failure(line)
        message = line.get("message") or {}
        if message.get("thinking"):
            emit({"type": "thinking", "text": message["thinking"]})
        if message.get("content"):
            emit({"type": "saying", "text": message["content"]})
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            calls.add(len(calls.calls), id=call.get("id"), name=function.get("name"), arguments=function.get("arguments"))
        if line.get("done"):
            usage.report(inputTokens=line.get("prompt_eval_count"), outputTokens=line.get("eval_count"))
            finished = True
            break
    if not finished:
        raise ProviderError(f"the stream from {origin(response.url)} ended before the model finished")
    usage.emit(emit)
    calls.emit(emit)


def think_from_env() -> bool | str | None:
    """``OLLAMA_THINK``: true/false, or a level (low, medium, high) for models that take one."""
    raw = (env("OLLAMA_THINK") or "").lower()
    if not raw:
        return None
    if raw in ("true", "false"):
        return raw == "true"
    if raw in ("low", "medium", "high"):
        return raw
    raise ProviderError(f"OLLAMA_THINK must be true, false, low, medium or high, got {raw!r}")


def factory(model: str | None = None, temperature: float | None = None, max_tokens: int | None = None, **_: Any):
    return OllamaProvider(
        model or env("OLLAMA_MODEL", DEFAULT_MODEL),
        host=env("OLLAMA_HOST", DEFAULT_HOST),
        temperature=temperature,
        max_tokens=max_tokens,
        think=think_from_env(),
        num_ctx=positive_number("OLLAMA_NUM_CTX", 0, int, "a whole number") or None,
    )
