"""The built-in providers, registered by name on every Config, and declared providers by type.

Two rooms on one floor: ``remote/`` holds the HTTP providers, ``local/`` the models run
in-process; ``shaping`` (messages and tool calls in the chat shape) and ``human`` are shared.
Each provider module exposes ``factory(**options)`` and is imported only when that provider is
built, so a missing optional dependency costs nothing until used. The contract every provider
keeps is in docs/contract.md.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from ..agent.registry import Config, Factory, call_factory
from .remote.presets import PRESETS

# name -> module in this package that has the factory
BUILTINS: dict[str, str] = {
    "openai": "remote.openai",
    "anthropic": "remote.anthropic",
    "vertex": "remote.vertex",
    "ollama": "remote.ollama",
    "openai-chat": "remote.openai_chat",
    "human": "human",
    "llama": "local.llama",
    "ggml": "local.ggml",
    "candle": "local.candle",
    "llama2": "local.llama2",
}


def implementation(name: str) -> str | None:
    """The module that holds the built-in provider ``name``, to import ahead of its first build."""
    module = BUILTINS["openai"] if name in PRESETS else BUILTINS.get(name)
    return f"{__name__}.{module}" if module else None


def lazy(module: str, attribute: str = "factory", **fixed: Any) -> Factory:
    """A factory that imports ``module`` when first called and forwards the options."""

    def build(**options: Any) -> Any:
        target = getattr(import_module(f"{__name__}.{module}"), attribute)
        return call_factory(target, {**fixed, **options})

    return build


def register(config: Config) -> None:
    for name, module in BUILTINS.items():
        config.provider(name, lazy(module))
    # OpenAI-compatible services, each the openai provider with its own URL, key and model
    for name in PRESETS:
        config.provider(name, lazy("remote.presets", preset=name))


# declared provider type -> the module and class that build it
DECLARED_TYPES: dict[str, tuple[str, str]] = {"openai-chat": ("remote.openai_chat", "OpenAIGenericProvider")}


def build_declared(
    type: str,
    model: str | None,
    endpoint: str | None,
    api_key: str | None,
    temperature: float | None = None,
    max_tokens: int | None = None,
    images: bool = False,
) -> Any:
    """A provider declared in settings, built from its ``type`` (today ``openai-chat``); Eklesia's
    ``getProviderByType``, also importable under its name, ``provider_by_type``.

    ``temperature``/``max_tokens`` of None take the type's defaults; ``images`` declares that its
    model reads images (see providers/images.py). An unknown type or a
    missing model or endpoint raises ``ProviderTypeError`` (a ProviderError and a ValueError)
    saying which.
    """
    from .remote.openai_chat import ProviderTypeError  # the HTTP stack loads only when one is built

    if type not in DECLARED_TYPES:
        raise ProviderTypeError(f'unknown provider type: "{type}". Supported: {", ".join(sorted(DECLARED_TYPES))}')
    module, name = DECLARED_TYPES[type]
    return getattr(import_module(f"{__name__}.{module}"), name)(model, endpoint, api_key, temperature, max_tokens, images=images)


provider_by_type = build_declared
