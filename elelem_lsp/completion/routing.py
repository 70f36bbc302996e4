"""Which route a provider is asked by, found on first use and remembered.

Bridges a built provider (any object of the provider contract) to the routes that can ask it,
best first: a provider's own ``complete``; for Ollama ``/api/generate`` with ``suffix``, then
``raw`` with the model's FIM tokens, then chat; for an OpenAI-compatible server llama.cpp's
``/infill`` (a server on this machine), ``/v1/completions``, or Mistral's FIM (its API), then
chat; the local models' FIM tokens where the vocabulary has them; chat for the rest
(anthropic, vertex, a plugin's ``fetch``). A route the server refuses (``routes.Refused``) is
dropped and the next is tried at once; the one that answered is kept for that provider. The
``completion.api`` setting names one route and skips the search. Whether a provider is local
(free to ask, so on by default) is decided here too.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any
from urllib.parse import urlsplit

from ..agent.messages import ProviderError
from .chat_routes import ChatFill, PluginComplete
from .filters import until_stop
from .local_routes import LocalFim, local_format
from .routes import Fill, LlamaCppInfill, MistralFim, OllamaGenerate, OpenAICompletions, Refused, Route
from .templates import format_for_model

LOCAL_PROVIDERS = {"llama", "ggml", "candle", "llama2", "ollama", "lmstudio", "llamacpp", "vllm"}
LOOPBACK = {"localhost", "127.0.0.1", "::1", "[::1]", "0.0.0.0"}


def base_url_of(provider: Any) -> str | None:
    """An OpenAI-compatible provider's base URL (``.../v1``), from its base or its chat URL."""
    url = getattr(provider, "url", None)
    if isinstance(url, str) and url.endswith("/chat/completions"):
        return url.removesuffix("/chat/completions")
    base = getattr(provider, "base_url", None)
    return base if isinstance(base, str) else None


def is_openai(provider: Any) -> bool:
    from ..providers.remote.openai import OpenAIProvider

    return isinstance(provider, OpenAIProvider)


def is_ollama(provider: Any) -> bool:
    from ..providers.remote.ollama import OllamaProvider

    return isinstance(provider, OllamaProvider)


def is_local(name: str, provider: Any) -> bool:
    """Whether asking costs nothing: a local provider by name, or a server on this machine."""
    if name in LOCAL_PROVIDERS or hasattr(provider, "generator") or hasattr(provider, "llm"):
        return True
    url = base_url_of(provider) or getattr(provider, "url", None)
    return (is_openai(provider) or is_ollama(provider)) and isinstance(url, str) and (urlsplit(url).hostname or "") in LOOPBACK


async def candidates(name: str, provider: Any, api: str) -> list[Route]:
    """The routes for ``provider``, best first; just the one ``api`` names unless it is ``auto``."""
    routes: list[Route] = []
    base = base_url_of(provider) if is_openai(provider) else None
    if callable(getattr(provider, "complete", None)):
        routes.append(PluginComplete(provider))
    if is_ollama(provider):
        routes.append(OllamaGenerate(provider))
        fim = format_for_model(provider.model)
        if fim is not None:
            routes.append(OllamaGenerate(provider, fim))
    if base is not None:
        host = urlsplit(base).hostname or ""
        if "mistral.ai" in host or api == "mistral-fim":
            routes.append(MistralFim(provider, base))
        if host in LOOPBACK or api == "infill":
            routes.append(LlamaCppInfill(provider, base))
        if "mistral.ai" not in host or api == "completions":
            routes.append(OpenAICompletions(provider, base))
    if api in ("auto", "fim-tokens"):
        fim = await local_format(provider)
        if fim is not None:
            routes.append(LocalFim(provider, fim))
    routes.append(ChatFill(provider))
    if api == "auto":
        return routes
    named = [route for route in routes if route.name == api]
    if not named:
        raise ProviderError(f"completion.api {api!r} is not a way provider {name!r} can be asked")
    return named


class Routes:
    """A provider's routes, the one that answered first kept; a refused one dropped for good."""

    def __init__(self, routes: list[Route]) -> None:
        self.routes = routes

    @property
    def current(self) -> Route:
        return self.routes[0]

    async def stream(self, fill: Fill) -> AsyncGenerator[str, None]:
        """The pieces of the first route that takes the request."""
        while True:
            route = self.routes[0]
            fill.asked = True
            started = False
            try:
                async with aclosing(
                    until_stop(route.stream(fill), route.stops)
                ) as pieces:  # leaving early closes the model's stream
                    async for piece in pieces:
                        started = True
                        yield piece
                return
            except Refused:
                if started or len(self.routes) == 1:
                    raise
                self.routes = [other for other in self.routes if other is not route]
