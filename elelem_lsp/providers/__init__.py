"""The built-in providers: one short module each, registered by name on every Config.

Each module exposes ``factory(**options)``; it is imported only when that
provider is built, so a missing optional dependency costs nothing until used.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from ..agent.registry import Config, Factory, call_factory
from .presets import PRESETS

# name -> module in this package that has the factory
BUILTINS: dict[str, str] = {
    "openai": "openai",
    "anthropic": "anthropic",
    "vertex": "vertex",
    "ollama": "ollama",
    "openai-chat": "eklesia",
    "human": "human",
    "llama": "llama",
    "ggml": "ggml",
    "candle": "candle",
    "llama2": "llama2",
}


def implementation(name: str) -> str | None:
    """The module that holds the built-in provider ``name``, to import ahead of its first build."""
    module = "openai" if name in PRESETS else BUILTINS.get(name)
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
        config.provider(name, lazy("presets", preset=name))
