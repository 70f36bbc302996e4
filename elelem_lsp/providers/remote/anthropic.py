"""Anthropic's Messages API, streamed: the ``anthropic`` provider, and the shape ``vertex`` reuses.

Bridges the provider contract to ``POST <base>/v1/messages`` with ``stream:
true``: the system message moves to ``system``, tools become ``{name,
description, input_schema}``, assistant tool calls ``tool_use`` blocks and tool
results ``tool_result`` blocks (consecutive results in one user message). In
the stream, ``text_delta`` is ``saying``, ``thinking_delta`` is ``thinking``,
``input_json_delta`` fragments are gathered per content block; ``ping`` is
ignored and an ``error`` event (or a typeless ``{"error": ...}``) raises. With extended thinking on, the signed
thinking blocks of an answer that called tools are sent back with those calls,
as the API requires. Images of a user message or tool result go as base64
``image`` blocks before its text. The counts of ``message_start`` and ``message_delta`` become one
``usage`` event (prompt tokens read from or written to the cache counted in, and each counted apart).

Prompt caching: each request marks ``cache_control`` breakpoints (at most four, as the API
allows) on the last tool definition and the system prompt, which stay the same all along, and on
the last block of the last two user messages: the end of this request and of the one before it
(the previous step's tool results, or the turn before's prompt), so each fetch reads the
conversation so far from the cache and writes only what it adds.
"""

from __future__ import annotations

from typing import Any

import httpx

from ...agent.messages import Emit, Message, ProviderError, ToolDefinition
from ..images import image_data
from ..shaping import ToolCalls, Usage
from .http import Transport, env, open_response, origin, parse_json, sse_events, stream_failure
from .warm import PreparesHTTP

DEFAULT_BASE_URL = "https://api.anthropic.com"
DEFAULT_MODEL = "claude-sonnet-4-5"
API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 8192
CACHE_BREAKPOINT = {"type": "ephemeral"}  # five minutes, renewed by every read


def convert_tools(tools: list[ToolDefinition]) -> list[dict[str, Any]]:
    return [
        {
            "name": tool["function"]["name"],
            "description": tool["function"].get("description", ""),
            "input_schema": tool["function"].get("parameters") or {"type": "object", "properties": {}},
        }
        for tool in tools
    ]


def with_images(message: Message) -> str | list[dict[str, Any]]:
    """A user message's or tool result's content: its text, or image blocks then the text."""
    text = message.get("content", "")
    if not message.get("images"):
        return text
    blocks: list[dict[str, Any]] = []
    for image in message["images"]:
        media_type, data = image_data(image)
        blocks.append({"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}})
    if text:
        blocks.append({"type": "text", "text": text})
    return blocks


def cached(block: dict[str, Any]) -> dict[str, Any]:
    """``block`` as a cache breakpoint: the prompt up to its end is cached."""
    return {**block, "cache_control": CACHE_BREAKPOINT}


def mark_conversation(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The last block of the last two user messages made breakpoints (the two last ends of the
    conversation a request was sent with); an empty text, which cannot be one, is left as it is."""
    users = [index for index, message in enumerate(messages) if message["role"] == "user"][-2:]
    marked = list(messages)
    for index in users:
        content = messages[index]["content"]
        if isinstance(content, str) and content:
            marked[index] = {**messages[index], "content": [cached({"type": "text", "text": content})]}
        elif isinstance(content, list) and content:
            marked[index] = {**messages[index], "content": [*content[:-1], cached(content[-1])]}
    return marked


class AnthropicProvider(PreparesHTTP):
    """Claude through the Messages API at ``base_url``."""

    images = True

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str = DEFAULT_BASE_URL,
        temperature: float | None = None,
        max_tokens: int | None = None,
        thinking_budget: int | None = None,
        cache_prompts: bool = True,
        transport: Transport | None = None,
    ) -> None:
        if thinking_budget is not None and max_tokens is not None and max_tokens <= thinking_budget:
            raise ProviderError(f"max_tokens ({max_tokens}) must be larger than the thinking budget ({thinking_budget})")
        self.model = model
        self.api_key = api_key
        self.base_url = base_url.rstrip("/")
        self.temperature = temperature
        self.max_tokens = max_tokens or DEFAULT_MAX_TOKENS + (thinking_budget or 0)
        self.thinking_budget = thinking_budget
        self.cache_prompts = cache_prompts
        self.transport = transport
        # first tool_use id of an answer -> the signed thinking blocks that preceded its calls
        self.signed_thinking: dict[str, list[dict[str, Any]]] = {}

    @property
    def url(self) -> str:
        return f"{self.base_url}/v1/messages"

    async def headers(self) -> dict[str, str]:
        if not self.api_key:
            raise ProviderError("ANTHROPIC_API_KEY is not set")
        return {"x-api-key": self.api_key, "anthropic-version": API_VERSION}

    def request_body(self, messages: list[Message], tools: list[ToolDefinition]) -> dict[str, Any]:
        system, converted = self.convert_messages(messages)
        body: dict[str, Any] = {"model": self.model, "max_tokens": self.max_tokens}
        if system:
            body["system"] = [cached({"type": "text", "text": system})] if self.cache_prompts else system
        body["messages"] = mark_conversation(converted) if self.cache_prompts else converted
        if tools:
            body["tools"] = convert_tools(tools)
            if self.cache_prompts:
                body["tools"][-1] = cached(body["tools"][-1])
        body["stream"] = True
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.thinking_budget is not None:
            body["thinking"] = {"type": "enabled", "budget_tokens": self.thinking_budget}
        return body

    def convert_messages(self, messages: list[Message]) -> tuple[str, list[dict[str, Any]]]:
        # thinking of answers no longer in the conversation (finished turns) is dropped
        current = {m["tool_calls"][0]["id"] for m in messages if m.get("tool_calls")}
        self.signed_thinking = {k: v for k, v in self.signed_thinking.items() if k in current}
        system: list[str] = []
        out: list[dict[str, Any]] = []
        results: list[dict[str, Any]] | None = None  # the user message collecting tool results
        for message in messages:
            role, content = message["role"], message.get("content", "")
            if role == "tool":
                block = {"type": "tool_result", "tool_use_id": message.get("tool_call_id", ""), "content": with_images(message)}
                if results is None:
                    results = []
                    out.append({"role": "user", "content": results})
                results.append(block)
                continue
            results = None
            if role == "system":
                system.append(content)
            elif role == "assistant" and message.get("tool_calls"):
                calls = message["tool_calls"]
                blocks = list(self.signed_thinking.get(calls[0]["id"], ()))
                if content:
                    blocks.append({"type": "text", "text": content})
                blocks += [
                    {"type": "tool_use", "id": call["id"], "name": call["name"], "input": call["arguments"]} for call in calls
                ]
                out.append({"role": "assistant", "content": blocks})
            elif role == "assistant":
                if content:  # the API refuses an empty assistant message before the last
                    out.append({"role": "assistant", "content": content})
            else:
                out.append({"role": "user", "content": with_images(message)})
        return "\n\n".join(system), out

    async def fetch(self, messages: list[Message], tools: list[ToolDefinition], emit: Emit) -> None:
        body = self.request_body(messages, tools)
        headers = {**await self.headers(), "accept": "text/event-stream"}
        async with open_response("POST", self.url, body=body, headers=headers, transport=self.transport) as response:
            await self.read_stream(response, emit, id_prefix=f"toolu-{len(messages)}")

    async def read_stream(self, response: httpx.Response, emit: Emit, *, id_prefix: str) -> None:
        """Events from a Messages SSE body; ``doing`` events once ``message_stop`` arrived."""
        calls = ToolCalls(id_prefix)
        counts: dict[str, Any] = {}  # the usage of message_start, updated by message_delta's
        thinking: dict[int, dict[str, Any]] = {}  # content block index -> thinking block being gathered
        finished = False
        async for _, data in sse_events(response):
            event = parse_json(data, "event in the model's stream")
            kind = event.get("type") if isinstance(event, dict) else None
            if kind == "content_block_delta":
                index, delta = event.get("index"), event.get("delta") or {}
                part = delta.get("type")
                if part == "text_delta":
                    if delta.get("text"):
                        emit({"type": "saying", "text": delta["text"]})
                elif part == "thinking_delta":
                    if delta.get("thinking"):
                        emit({"type": "thinking", "text": delta["thinking"]})
                        gathering(thinking, index)["parts"].append(delta["thinking"])
                elif part == "signature_delta":
                    gathering(thinking, index)["signature"].append(delta.get("signature") or "")
                elif part == "input_json_delta":
                    calls.add(index, arguments=delta.get("partial_json"))
            elif kind == "content_block_start":
                index, block = event.get("index"), event.get("content_block") or {}
                if block.get("type") == "tool_use":
                    calls.add(index, id=block.get("id"), name=block.get("name"), arguments=block.get("input"))
                elif block.get("type") == "thinking":
                    gathering(thinking, index)["parts"].append(block.get("thinking") or "")
                elif block.get("type") == "redacted_thinking":
                    thinking[index] = dict(block)
                elif block.get("type") == "text" and block.get("text"):
                    emit({"type": "saying", "text": block["text"]})
            elif kind == "message_start":
                add_counts(counts, (event.get("message") or {}).get("usage"))
            elif kind == "message_delta":
                add_counts(counts, event.get("usage"))
            elif kind == "message_stop":
                finished = True
                break
            elif kind == "error" or (kind is None and isinstance(event, dict) and "error" in event):
                raise stream_failure(event)  # typeless: some gateways send {"error": {...}} alone
            elif kind is None:
                raise ProviderError(f"malformed event in the model's stream: {data[:120]!r}")
        if not finished:
            raise ProviderError(f"the stream from {origin(response.url)} ended before the model finished")
        if calls and thinking:
            first = next(iter(calls.calls.values()))["id"]
            self.signed_thinking[first] = [finish_block(thinking[i]) for i in sorted(thinking)]
        usage_of(counts).emit(emit)
        calls.emit(emit)


def add_counts(counts: dict[str, Any], usage: Any) -> None:
    if isinstance(usage, dict):
        counts.update((name, value) for name, value in usage.items() if value is not None)


def usage_of(counts: dict[str, Any]) -> Usage:
    """``input_tokens`` leaves out the prompt tokens read from and written to the cache: they are
    added back, so that ``inputTokens`` is the whole prompt as on the other wires, and also
    counted apart (``cachedInputTokens`` read, ``cacheWriteInputTokens`` written), which cost
    what reads and writes of the cache cost."""
    usage = Usage()
    usage.report(
        outputTokens=counts.get("output_tokens"),
        cachedInputTokens=counts.get("cache_read_input_tokens"),
        cacheWriteInputTokens=counts.get("cache_creation_input_tokens"),
    )
    if isinstance(counts.get("input_tokens"), int):
        parts = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        usage.report(inputTokens=sum(counts.get(part) or 0 for part in parts))
    return usage


def gathering(thinking: dict[int, dict[str, Any]], index: int) -> dict[str, Any]:
    """The thinking block at ``index`` whose text and signature are still arriving."""
    return thinking.setdefault(index, {"type": "thinking", "parts": [], "signature": []})


def finish_block(block: dict[str, Any]) -> dict[str, Any]:
    if block["type"] != "thinking":
        return block
    return {"type": "thinking", "thinking": "".join(block["parts"]), "signature": "".join(block["signature"])}


def thinking_budget_from_env(value: int | None) -> int | None:
    """``thinking_budget`` as given, else ``ANTHROPIC_THINKING_BUDGET``; extended thinking stays off without one."""
    if value is not None:
        return int(value)
    raw = env("ANTHROPIC_THINKING_BUDGET")
    if raw is None:
        return None
    if not raw.isdigit() or int(raw) < 1024:
        raise ProviderError(f"ANTHROPIC_THINKING_BUDGET must be a whole number of tokens, at least 1024, got {raw!r}")
    return int(raw)


def factory(
    model: str | None = None,
    temperature: float | None = None,
    max_tokens: int | None = None,
    thinking_budget: int | None = None,
    **_: Any,
) -> AnthropicProvider:
    return AnthropicProvider(
        model or env("ANTHROPIC_MODEL", DEFAULT_MODEL),
        api_key=env("ANTHROPIC_API_KEY"),
        base_url=env("ANTHROPIC_BASE_URL", DEFAULT_BASE_URL),
        temperature=temperature,
        max_tokens=max_tokens,
        thinking_budget=thinking_budget_from_env(thinking_budget),
    )
