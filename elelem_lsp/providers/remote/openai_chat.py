"""The ``openai-chat`` provider type: any OpenAI-compatible chat-completions URL.

A provider declared in settings (type, model, endpoint, key, temperature, max
tokens; see docs/contract.md) is built by ``providers.build_declared``; this is
the class it builds for ``openai-chat``, Eklesia's ``OpenAIGenericProvider(model,
endpoint_url, api_key, temperature=0.7, max_tokens=300)``, streamed, with tools.
It takes images only when declared to (``images``; ``OPENAI_CHAT_IMAGES`` for
``-p openai-chat``).
"""

from __future__ import annotations

from typing import Any

from ...agent.messages import ProviderError
from .http import Transport, env
from .openai import DEFAULT_BASE_URL, DEFAULT_MODEL, OpenAIProvider, flag

DEFAULT_TEMPERATURE = 0.7
DEFAULT_MAX_TOKENS = 300
CHAT_PATH = "/chat/completions"


class ProviderTypeError(ProviderError, ValueError):
    """A declared provider that cannot be built: unknown type, or a missing model or endpoint."""


class OpenAIGenericProvider(OpenAIProvider):
    """Any OpenAI-compatible server, addressed by its full chat-completions URL; a ``temperature``
    or ``max_tokens`` of None is the type's default (0.7, 300)."""

    def __init__(
        self,
        model: str | None,
        endpoint_url: str | None,
        api_key: str | None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        *,
        images: bool = False,
        images_hint: str = "its declaration does not say that its model reads them",
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
            temperature=DEFAULT_TEMPERATURE if temperature is None else temperature,
            max_tokens=DEFAULT_MAX_TOKENS if max_tokens is None else max_tokens,
            name="openai-chat",
            images=images,
            images_hint=images_hint,
            transport=transport,
        )


def factory(model: str | None = None, temperature: float | None = None, max_tokens: int | None = None, **_: Any):
    """``-p openai-chat``: ``OPENAI_CHAT_ENDPOINT`` (else ``OPENAI_BASE_URL`` + /chat/completions),
    ``OPENAI_API_KEY``, ``OPENAI_MODEL``."""
    endpoint = env("OPENAI_CHAT_ENDPOINT") or env("OPENAI_BASE_URL", DEFAULT_BASE_URL).rstrip("/") + CHAT_PATH
    return OpenAIGenericProvider(
        model or env("OPENAI_MODEL", DEFAULT_MODEL),
        endpoint,
        env("OPENAI_API_KEY"),
        temperature,
        max_tokens,
        images=flag("OPENAI_CHAT_IMAGES", False),
        images_hint="set OPENAI_CHAT_IMAGES=true if its model reads them",
    )
