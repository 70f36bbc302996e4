"""The ``openai-chat`` provider type and the builder of declared providers by type.

Bridges a provider declared in settings (type, model, endpoint, key, temperature,
max tokens; see docs/contract.md) to a provider object.
``OpenAIGenericProvider(model, endpoint_url, api_key, temperature=0.7,
max_tokens=300)`` talks to a full chat-completions URL: streamed, with tools,
when the agent fetches; a whole ChatCompletionResponse from ``query``.
``provider_by_type`` builds a declared provider from its type.
"""

from __future__ import annotations

from typing import Any, Callable

from ...agent.messages import Message, ProviderError
from ..shaping import chat_message
from .http import Transport, env, request_json
from .openai import DEFAULT_BASE_URL, DEFAULT_MODEL, OpenAIProvider

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
        """The whole ChatCompletionResponse for ``messages``, not streamed."""
        body = {
            "model": self.model,
            "temperature": self.temperature if temperature is None else temperature,
            "max_tokens": self.max_tokens,
            "messages": [chat_message(m) for m in messages],
        }
        return await request_json(
            "POST", self.url, body=body, headers=self.headers(), transport=self.transport
        )


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
    """A provider for a declared ``type``.

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
