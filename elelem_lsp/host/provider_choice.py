"""Which provider a folder's agent uses, and building it.

The folder's own Config (so one folder's plugins never leak into another's) holds the built-in
providers, the plugins' and the ones its settings declare; the choice is the person's
selection, else the settings' provider, else the environment's pick. A provider is built again
only when the choice or its options changed, or the plugins were loaded again.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..agent.messages import Provider, ProviderError
from ..agent.registry import Config, plugin_dirs, workspace_plugin_dir
from ..providers import build_declared, implementation
from ..providers import register as register_builtins
from .frontend import Face
from .settings import DeclaredProvider, Settings, provider_from_environment


@dataclass
class Choice:
    """Which provider a folder uses, and where that choice came from."""

    name: str
    model: str | None
    source: str  # "selected", "settings" or "environment"


class ProviderChoice:
    """One folder's providers, which one it uses, and what was last built."""

    def __init__(self, root: Path, settings: Callable[[], Settings]) -> None:
        self.root = root
        self.settings = settings  # the folder's current settings, read at each request
        self.selected: Choice | None = None
        self.built: tuple[Any, ...] | None = None
        self.told = False  # whether the environment's pick was said
        self.config = self._new_config()

    def _new_config(self) -> Config:
        workspace_plugins = self.settings().workspace_plugins
        return Config(
            plugin_dirs=plugin_dirs(self.root, include_workspace=workspace_plugins),
            skipped_dirs=[] if workspace_plugins else [workspace_plugin_dir(self.root)],
            builtins=self._register,
        )

    def _register(self, config: Config) -> None:
        register_builtins(config)
        for declared in self.settings().providers:
            config.provider(declared.name, declared_factory(declared))

    def settings_changed(self, old: Settings, settings: Settings) -> None:
        """Plugins and declared providers are loaded again if the settings about them changed."""
        if (old.workspace_plugins, old.providers) != (settings.workspace_plugins, settings.providers):
            self.config = self._new_config()
            self.built = None

    def choice(self) -> Choice:
        settings = self.settings()
        if self.selected:
            return self.selected
        if settings.provider:
            return Choice(settings.provider, settings.model, "settings")
        return Choice(provider_from_environment(), settings.model, "environment")

    def tell(self, choice: Choice, face: Face) -> None:
        """Say once which provider the environment picked, and how to change it."""
        if choice.source != "environment" or self.told:
            return
        self.told = True
        what = " (a demo that needs no model)" if choice.name == "stub" else ""
        face.show_message(
            "info",
            f"elelem: using provider {choice.name!r}{what} for {self.root.name} "
            f"(picked from the environment); {face.provider_hint}",
        )

    def describe(self) -> dict[str, Any]:
        """The choice, where it came from, the providers to choose from and the plugins that failed."""
        choice = self.choice()
        return {
            "provider": choice.name,
            "model": choice.model,
            "source": choice.source,
            "available": self.available(),
            "pluginErrors": [failure.describe() for failure in self.config.failures],
        }

    def available(self) -> list[str]:
        self.config.load_plugins()
        return self.config.names()

    def reload(self) -> list[str]:
        """Load the plugin files again; the provider is rebuilt when next needed."""
        self.built = None
        return [failure.describe() for failure in self.config.reload()]

    def options(self, choice: Choice) -> dict[str, Any]:
        options = {**self.settings().provider_options(), "model": choice.model}
        return {k: v for k, v in options.items() if v is not None}

    def build(self, choice: Choice) -> Provider:
        options = self.options(choice)
        provider = self.config.build(choice.name, **options)
        self.built = (choice.name, sorted(options.items()))
        return provider

    def stale(self, choice: Choice) -> bool:
        """Whether ``choice`` asks for another provider than the one last built."""
        return self.built != (choice.name, sorted(self.options(choice).items()))

    def implementation(self, choice: Choice) -> str | None:
        """The module ``choice``'s provider is written in, if it is a built-in one."""
        declared = any(d.name == choice.name for d in self.settings().providers)
        return implementation("openai-chat" if declared else choice.name)


def model_of(provider: Any, chosen: str | None) -> str | None:
    """The model the provider runs: its ``model`` when that is a name (the choice names none when
    the provider's default is used), else the one chosen."""
    model = getattr(provider, "model", None)
    return model if isinstance(model, str) and model else chosen


def declared_factory(declared: DeclaredProvider):
    """A factory for a provider declared in settings; the key only ever comes from the environment."""

    def build(model: str | None = None, temperature: float | None = None, max_tokens: int | None = None, **_: Any):
        api_key = os.environ.get(declared.api_key_env, "") if declared.api_key_env else ""
        try:
            return build_declared(
                declared.type,
                model or declared.model,
                declared.endpoint,
                api_key,
                declared.temperature if declared.temperature is not None else temperature,
                declared.max_tokens if declared.max_tokens is not None else max_tokens,
            )
        except ValueError as error:
            raise ProviderError(f"provider {declared.name!r}: {error}") from error

    return build
