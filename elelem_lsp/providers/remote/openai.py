"""OpenAI chat completions, streamed: the ``openai`` provider and every compatible server.

Bridges the provider contract to ``POST <base>/chat/completions`` with
``stream: true``: messages in the chat shape of ``..shaping.chat_message`` (tool
calls with ``type: "function"`` and string arguments), ``content`` deltas as
``saying``, ``reasoning_content``/``reasoning`` deltas (DeepSeek, vLLM,
llama-server, OpenRouter) as ``thinking``, tool-call fragments gathered by index,
the ``usage`` of the last chunk (asked for with ``stream_options.include_usage``
where the server takes it) as one ``usage`` event. Images of user messages go as
``image_url`` content parts with ``data:`` URLs when the server is declared to take
them (``images``), else the fetch is refused before any request; those of tool
results in a user message after them. A server of one's own (``window_lookup``: a local preset, or
an ``OPENAI_BASE_URL`` of one's own) is asked the window it serves (``served_window``: vLLM's
``max_model_len``, llama.cpp's ``n_ctx``), which the session's budget then keeps to.
"""

from __future__ import annotations

from typing import Any

import httpx

from ...agent.messages import Emit, Message, ProviderError, ToolDefinition
from ..images import refuse_images
from ..shaping import ToolCalls, Usage, chat_message, tool_images_after_results
from .http import (
    EncodedMessages,
    Transport,
    env,
    open_response,
    origin,
    parse_json,
    request_json,
    sse_events,
    stream_failure,
)
from .served_window import openai_window
from .warm import PreparesHTTP

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_MODEL = "gpt-4.1"


class OpenAIProvider(PreparesHTTP):
    """A chat-completions server at ``base_url`` (or at the full ``endpoint`` URL)."""

    def __init__(
        self,
        model: str | None,
        *,
        base_url: str = DEFAULT_BASE_URL,
        endpoint: str | None = None,
        api_key: str | None = None,
        key_env: str = "OPENAI_API_KEY",
        key_required: bool = False,
        model_env: str = "OPENAI_MODEL",
        temperature: float | None = None,
        max_tokens: int | None = None,
        name: str = "openai",
        images: bool = True,
        images_hint: str = "set OPENAI_IMAGES=true if its model reads them",
        stream_usage: bool = True,
        window_lookup: bool = False,
        transport: Transport | None = None,
    ) -> None:
        self.name = name  # as the person chose it (-p), for the refusal of images
        self.images = images  # whether the server reads image content parts
        self.images_hint = images_hint  # how to declare that it does
        self.stream_usage = stream_usage  # whether the server takes stream_options.include_usage
        self.window_lookup = window_lookup  # whether to ask the server the window it serves
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.url = endpoint or f"{self.base_url}/chat/completions"
        self.api_key = api_key
        self.key_env = key_env
        self.key_required = key_required
        self.model_env = model_env
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.transport = transport
        self.encoded = EncodedMessages(chat_message)

    def headers(self) -> dict[str, str]:
        if self.key_required and not self.api_key:
            raise ProviderError(f"{self.key_env} is not set")
        return {"authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def request_body(self, model: str, messages: list[Message], tools: list[ToolDefinition]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": model, "messages": [chat_message(m) for m in messages]}
        if tools:
            body["tools"] = tools
        body["stream"] = True
        if self.stream_usage:
            body["stream_options"] = {"include_usage": True}
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        return body

    async def served_model(self) -> str:
        """The model to ask for: the configured one, else the first the server lists."""
        if self.model:
            return self.model
        listing = await request_json("GET", f"{self.base_url}/models", headers=self.headers(), transport=self.transport)
        models = listing.get("data") if isinstance(listing, dict) else None
        ids = [m["id"] for m in models or () if isinstance(m, dict) and isinstance(m.get("id"), str)]
        if not ids:
            raise ProviderError(f"no model set and {origin(self.base_url)} lists none: set {self.model_env} or pass --model")
        self.model = ids[0]
        return self.model

    async def context_window(self) -> int | None:
        """The window the server publishes for its model (looked up once), None when it says none
        or it is a service whose windows are the known ones."""
        if not self.window_lookup:
            return None
        return await openai_window(self.base_url, await self.served_model(), self.headers(), self.transport)

    async def fetch(self, messages: list[Message], tools: list[ToolDefinition], emit: Emit) -> None:
        if not self.images:
            refuse_images(self.name, messages, self.images_hint)
        messages = tool_images_after_results(messages)
        body = self.encoded.body(self.request_body(await self.served_model(), [], tools), "messages", messages)
        headers = {**self.headers(), "accept": "text/event-stream"}
        async with open_response("POST", self.url, body=body, headers=headers, transport=self.transport) as response:
            await read_chat_stream(response, emit, id_prefix=f"call-{len(messages)}")


async def read_chat_stream(response: httpx.Response, emit: Emit, *, id_prefix: str) -> None:
    """Events from a chat-completions SSE body; ``doing`` events once it is complete."""
    calls = ToolCalls(id_prefix)
    usage = Usage()
    finished = False
    async for _, data in sse_events(response):
        if data == "[DONE]":
            finished = True
            break
        chunk = parse_json(data, "chunk in the model's stream")
        if not isinstance(chunk, dict):
            raise ProviderError(f"malformed chunk in the model's stream: {data[:120]!r}")
        if "error" in chunk:
            raise stream_failure(chunk)
        read_usage(usage, chunk.get("usage") or (chunk.get("x_groq") or {}).get("usage"))
        for choice in chunk.get("choices") or ():
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if reasoning and isinstance(reasoning, str):
                emit({"type": "thinking", "text": reasoning})
            text = delta.get("content")
            if text and isinstance(text, str):
                emit({"type": "saying", "text": text})
            for part in delta.get("tool_calls") or ():
                add_fragment(calls, part)
            if choice.get("finish_reason"):
                finished = True
    if not finished:
        raise ProviderError(f"the stream from {origin(response.url)} ended before the model finished")
    usage.emit(emit)
    calls.emit(emit)


def read_usage(usage: Usage, counts: Any) -> None:
    """A chunk's ``usage`` (Groq's older servers put it in ``x_groq``); cached prompt tokens are in
    ``prompt_tokens_details``."""
    if isinstance(counts, dict):
        details = counts.get("prompt_tokens_details") or {}
        usage.report(
            inputTokens=counts.get("prompt_tokens"),
            outputTokens=counts.get("completion_tokens"),
            cachedInputTokens=details.get("cached_tokens") if isinstance(details, dict) else None,
        )


def add_fragment(calls: ToolCalls, part: dict[str, Any]) -> None:
    """One ``delta.tool_calls`` entry; servers that omit ``index`` are keyed by id, else by the last call."""
    key = part.get("index")
    if key is None:
        key = part.get("id") or calls.last_key() or 0
    function = part.get("function") or {}
    calls.add(key, id=part.get("id"), name=function.get("name"), arguments=function.get("arguments"))


def flag(name: str, default: bool) -> bool:
    """A true/false environment variable, ``default`` when unset."""
    raw = (env(name) or "").lower()
    if not raw:
        return default
    if raw not in ("true", "false"):
        raise ProviderError(f"{name} must be true or false, got {raw!r}")
    return raw == "true"


def factory(model: str | None = None, temperature: float | None = None, max_tokens: int | None = None, **_: Any):
    base_url = env("OPENAI_BASE_URL", DEFAULT_BASE_URL)
    return OpenAIProvider(
        model or env("OPENAI_MODEL", DEFAULT_MODEL),
        base_url=base_url,
        api_key=env("OPENAI_API_KEY"),
        key_required=base_url.rstrip("/") == DEFAULT_BASE_URL,
        window_lookup=base_url.rstrip("/") != DEFAULT_BASE_URL,
        temperature=temperature,
        max_tokens=max_tokens,
        images=flag("OPENAI_IMAGES", True),
    )
