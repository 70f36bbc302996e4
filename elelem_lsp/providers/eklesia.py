"""Eklesia's providers in elelem: the ``openai-chat`` type, the builder by type, and ``query`` adapters.

Bridges Eklesia's Provider page to the provider contract.
``OpenAIGenericProvider(model, endpoint_url, api_key, temperature=0.7,
max_tokens=300)`` talks to a full chat-completions URL: streamed, with tools,
when elelem fetches; a whole ChatCompletionResponse from ``query``, as in
Eklesia. ``provider_by_type`` builds a declared provider from its type, and
``QueryProvider`` turns any object with ``query(messages, temperature)``
returning a ChatCompletionResponse into a provider.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any, Callable

from ..agent.messages import Emit, Message, ProviderError, ToolDefinition
from .openai import DEFAULT_BASE_URL, DEFAULT_MODEL, OpenAIProvider, normalize
from .stream import ToolCalls, Transport, env, request_json, shorten

DEFAULT_TEMPERATURE = 0.7
DEFAULT_MAX_TOKENS = 300
CHAT_PATH = "/chat/completions"


class ProviderTypeError(ProviderError, ValueError):
    """A declared provider that cannot be built: unknown type, or a missing model or endpoint."""


class OpenAIGenericProvider(OpenAIProvider):
    """Any OpenAI-compatible server, addressed by its full chat-completions URL."""

    def __init__(
        self,
        model: str | None,
        endpoint_url: str | None,
        api_key: str | None,
        temperature: float = DEFAULT_TEMPERATURE,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        *,
        transport: Transport | None = None,
    ) -> None:
        if not model:
            raise ProviderTypeError('a provider of type "openai-chat" needs a model')
        if not endpoint_url:
            raise ProviderTypeError('a provider of type "openai-chat" needs an endpoint (the full chat-completions URL)')
        super().__init__(
            model,
            endpoint=endpoint_url,
            api_key=api_key,
            temperature=temperature,
            max_tokens=max_tokens,
            transport=transport,
        )

    async def query(self, messages: list[Message], temperature: float | None = None) -> dict[str, Any]:
        """Eklesia's call: the whole ChatCompletionResponse for ``messages``, not streamed."""
        body = {
            "model": self.model,
            "temperature": self.temperature if temperature is None else temperature,
            "max_tokens": self.max_tokens,
            "messages": [normalize(m) for m in messages],
        }
        return await request_json(
            "POST", self.url, body=body, headers=self.headers(), transport=self.transport
        )


class QueryProvider:
    """An object with Eklesia's ``query(messages, temperature)`` as an elelem provider.

    ``query`` may be ``async def`` or plain (then it runs in a worker thread); it
    returns a ChatCompletionResponse dict, whose first choice's message becomes
    events. It is not given the tools; tool calls in its answer are honoured.
    """

    def __init__(self, target: Any, temperature: float | None = None) -> None:
        if not callable(getattr(target, "query", None)):
            raise ProviderError(f"{type(target).__name__} has no query(messages, temperature) method")
        self.target = target
        self.temperature = temperature

    async def fetch(self, messages: list[Message], tools: list[ToolDefinition], emit: Emit) -> None:
        query = self.target.query
        arguments: list[Any] = [[normalize(m) for m in messages]]
        if self.temperature is not None:
            arguments.append(self.temperature)
        if inspect.iscoroutinefunction(query):
            response = await query(*arguments)
        else:
            response = await asyncio.to_thread(query, *arguments)
            if inspect.isawaitable(response):
                response = await response
        emit_completion(response, emit, id_prefix=f"call-{len(messages)}")


def emit_completion(response: Any, emit: Emit, *, id_prefix: str) -> None:
    """Events from a ChatCompletionResponse's first choice."""
    choices = response.get("choices") if isinstance(response, dict) else None
    if not choices or not isinstance(choices[0], dict):
        raise ProviderError(f"query() returned no choices: {shorten(repr(response), 160)}")
    message = choices[0].get("message") or {}
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    if isinstance(reasoning, str) and reasoning:
        emit({"type": "thinking", "text": reasoning})
    if isinstance(message.get("content"), str) and message["content"]:
        emit({"type": "saying", "text": message["content"]})
    calls = ToolCalls(id_prefix)
    for position, call in enumerate(message.get("tool_calls") or ()):
        function = call.get("function") or {}
        calls.add(position, id=call.get("id"), name=function.get("name"), arguments=function.get("arguments"))
    calls.emit(emit)


def build_openai_chat(
    model: str | None, endpoint: str | None, api_key: str | None, temperature: float | None, max_tokens: int | None
) -> OpenAIGenericProvider:
    return OpenAIGenericProvider(
        model,
        endpoint,
        api_key,
        DEFAULT_TEMPERATURE if temperature is None else temperature,
        DEFAULT_MAX_TOKENS if max_tokens is None else max_tokens,
    )


PROVIDER_TYPES: dict[str, Callable[..., Any]] = {"openai-chat": build_openai_chat}


def provider_by_type(
    type: str,
    model: str | None,
    endpoint: str | None,
    api_key: str | None,
    temperature: float | None = DEFAULT_TEMPERATURE,
    max_tokens: int | None = DEFAULT_MAX_TOKENS,
) -> Any:
    """Eklesia's ``getProviderByType``: a provider for a declared ``type``.

    ``temperature``/``max_tokens`` of None take the type's defaults (0.7, 300).
    """
    build = PROVIDER_TYPES.get(type)
    if build is None:
        raise ProviderTypeError(f'unknown provider type: "{type}". Supported: {", ".join(sorted(PROVIDER_TYPES))}')
    return build(model, endpoint, api_key, temperature, max_tokens)


def factory(model: str | None = None, temperature: float | None = None, max_tokens: int | None = None, **_: Any):
    """``-p openai-chat``: ``OPENAI_CHAT_ENDPOINT`` (else ``OPENAI_BASE_URL`` + /chat/completions), ``OPENAI_API_KEY``, ``OPENAI_MODEL``."""
    endpoint = env("OPENAI_CHAT_ENDPOINT") or env("OPENAI_BASE_URL", DEFAULT_BASE_URL).rstrip("/") + CHAT_PATH
    return provider_by_type(
        "openai-chat", model or env("OPENAI_MODEL", DEFAULT_MODEL), endpoint, env("OPENAI_API_KEY"), temperature, max_tokens
    )
