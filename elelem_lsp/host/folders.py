"""Folders: one conversation per workspace folder, with its own providers and settings.

A Folder owns its Config (so one folder's plugins never leak into another's),
its Session, its Workspace (through the front end), the provider choice and the
turn that is running. The host hands it settings.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..agent.bridge import run_in_thread
from ..agent.check import CheckSettings
from ..agent.editor_tools import EditorTools
from ..agent.messages import Message, Provider, ProviderError
from ..agent.registry import Config, plugin_dirs, workspace_plugin_dir
from ..agent.session import Session
from ..agent.toolbox import Toolbox
from ..providers import build_declared, implementation
from ..providers import register as register_builtins
from .frontend import Frontend
from .mcp import McpServers
from .settings import DeclaredProvider, Settings, provider_from_environment
from .workspace import FrontendWorkspace

log = logging.getLogger(__name__)


class Busy(Exception):
    """A turn is already running in this folder."""


@dataclass
class Choice:
    """Which provider a folder uses, and where that choice came from."""

    name: str
    model: str | None
    source: str  # "selected", "settings" or "environment"


@dataclass
class Folder:
    root: Path
    uri: str
    frontend: Frontend
    toolbox: Toolbox
    settings: Settings = field(default_factory=Settings)
    selected: Choice | None = None
    session: Session | None = None
    built: tuple[Any, ...] | None = None
    turn: asyncio.Task[Any] | None = None
    conversation: str | None = None  # the current conversation's id; None until the host opens one
    history: list[Message] = field(default_factory=list)  # what a new session starts from
    config: Config = field(init=False)
    workspace: FrontendWorkspace = field(init=False)
    mcp: McpServers = field(init=False)

    def __post_init__(self) -> None:
        self.config = self._new_config()
        self.workspace = FrontendWorkspace(self.frontend, self.root, lambda: self.settings)
        self.mcp = McpServers(self.frontend, self.root, lambda: self.settings)

    def _new_config(self) -> Config:
        return Config(
            plugin_dirs=plugin_dirs(self.root, include_workspace=self.settings.workspace_plugins),
            skipped_dirs=[] if self.settings.workspace_plugins else [workspace_plugin_dir(self.root)],
            builtins=self._register,
        )

    def _register(self, config: Config) -> None:
        register_builtins(config)
        for declared in self.settings.providers:
            config.provider(declared.name, declared_factory(declared))

    # -- settings and provider choice -----------------------------------------
    def apply_settings(self, settings: Settings) -> None:
        """Take new settings; plugins and declared providers are loaded again if they changed."""
        old, self.settings = self.settings, settings
        if (old.workspace_plugins, old.providers) != (settings.workspace_plugins, settings.providers):
            self.config = self._new_config()
            self.built = None
        if old.mcp_servers != settings.mcp_servers:
            self.mcp.sync()  # servers no longer wanted stop now, not at the next turn

    def choice(self) -> Choice:
        if self.selected:
            return self.selected
        if self.settings.provider:
            return Choice(self.settings.provider, self.settings.model, "settings")
        return Choice(provider_from_environment(), self.settings.model, "environment")

    def available(self) -> list[str]:
        self.config.load_plugins()
        return self.config.names()

    def select(self, name: str, model: str | None) -> Provider:
        """Switch provider, keeping the conversation; the model is not carried over unless given."""
        choice = Choice(name, model, "selected")
        provider = self._build(choice)
        self.selected = choice
        return provider

    def reload(self) -> list[str]:
        """Load the plugin files again; the provider is rebuilt at the next turn."""
        self.built = None
        return [failure.describe() for failure in self.config.reload()]

    def _options(self, choice: Choice) -> dict[str, Any]:
        options = {**self.settings.provider_options(), "model": choice.model}
        return {k: v for k, v in options.items() if v is not None}

    def _build(self, choice: Choice) -> Provider:
        options = self._options(choice)
        provider = self.config.build(choice.name, **options)
        if self.session is None:
            toolbox = self.toolbox.with_sources(EditorTools(self.workspace), self.mcp)
            self.session = Session(provider, self.workspace, toolbox=toolbox, max_steps=self.settings.max_steps)
            self.session.history = list(self.history)
        self.session.provider = provider
        self.built = (choice.name, sorted(options.items()))
        return provider

    def ready_session(self) -> Session:
        """The session, with the provider the current choice and settings ask for."""
        choice = self.choice()
        if self.session is None or self.built != (choice.name, sorted(self._options(choice).items())):
            self._build(choice)
        assert self.session is not None
        self.session.max_steps = self.settings.max_steps
        self.session.check = CheckSettings(
            self.settings.check_after_edits, self.settings.check_wait_ms, self.settings.check_command
        )
        return self.session

    async def prepare(self) -> None:
        """Build the provider the next turn will use, derive the tool schemas and let the provider
        ready its first request (its optional ``prepare()``), off the loop where it can.

        A failure here is left for the turn to report.
        """
        choice = self.choice()
        declared = any(d.name == choice.name for d in self.settings.providers)
        module = implementation("openai-chat" if declared else choice.name)
        try:
            if module:
                await asyncio.to_thread(importlib.import_module, module)
            session = self.ready_session()
            await asyncio.to_thread(session.toolbox.definitions)  # pydantic derives the schemas once
            await self.mcp.prepare()
            prepare = getattr(session.provider, "prepare", None)
            if callable(prepare):
                # On the bridge's daemon thread: a plugin's prepare() that never returns must not
                # keep the server from exiting when the editor says so.
                await run_in_thread(lambda _emit, _cancelled: prepare(), lambda _event: None, name="elelem-prepare")
        except Exception as error:
            log.info("could not prepare provider %r ahead of the first turn: %s", choice.name, error)

    # -- turns -----------------------------------------------------------------
    def start(self, coroutine: Any) -> asyncio.Task[Any]:
        if self.turn is not None and not self.turn.done():
            coroutine.close()
            raise Busy(f"a turn is already running in {self.root.name}; wait for it or {self.frontend.cancel_hint}")
        self.turn = asyncio.ensure_future(coroutine)
        return self.turn

    def cancel(self) -> bool:
        if self.turn is not None and not self.turn.done():
            self.turn.cancel()
            return True
        return False

    def close(self) -> None:
        """The folder left: its turn is cancelled and its MCP servers stopped."""
        self.cancel()
        self.mcp.stop_soon()

    def continue_conversation(self, conversation: str, history: list[Message]) -> None:
        """Make ``conversation`` current, with the history its provider will see."""
        self.conversation = conversation
        self.history = history
        if self.session is not None:
            self.session.history = list(history)


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
