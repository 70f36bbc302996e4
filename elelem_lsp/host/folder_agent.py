"""FolderAgent: the agent of one workspace folder, bridging a face to the folder's settings,
session, running turn, current conversation and MCP servers, each kept by a part.

It resolves the folder's settings from what the face supplies (reporting bad values once,
limiting an untrusted folder), builds the session with the provider its ``provider_choice``
picks (saying once where the pick came from when the environment made it), continues its
conversation (``current_conversation``) and runs one turn at a time (compacting first when the
folder asks to: ``compaction``; each checkpointed, its files kept to rewind it:
``turn_checkpoints``), each played by ``turn``: its events to the face, its answer, its entry
stored with its tokens, cost and plan, and a plain client shown the turn it cannot see.
``ready()`` readies all of it for a turn. The operations on stored conversations are
``stored``, those on checkpoints ``rewinding``; the host keeps one agent per folder.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..agent.bridge import run_in_thread
from ..agent.budget import DEFAULT_CONTEXT_TOKENS
from ..agent.check import CheckSettings
from ..agent.editor_tools import TOOLBOX as EDITOR_TOOLBOX
from ..agent.editor_tools import EditorTools
from ..agent.messages import Image, Message, Provider, ProviderError
from ..agent.prompt_size import fitted_window
from ..agent.redaction import redact_error
from ..agent.session import Session, TurnResult
from ..agent.toolbox import Toolbox
from ..providers.windows import model_window
from .compaction import Compaction
from .conversations import Asked
from .current_conversation import CurrentConversation
from .frontend import Frontend, Refused
from .mcp import McpServers
from .provider_choice import Choice, ProviderChoice, model_of
from .settings import Settings, parse_settings, settings_secrets, within_trust
from .transcript import TurnRecord
from .turn import PlayedTurn, kept_checkpoint, outcome, show_turn, turn_result
from .turn_checkpoints import TurnCheckpoints
from .usage import usage_event
from .workspace import FrontendWorkspace

log = logging.getLogger(__name__)


class Busy(Exception):
    """A turn is already running in this folder."""


@dataclass
class FolderAgent:
    root: Path
    uri: str
    frontend: Frontend
    toolbox: Toolbox  # the built-in tools, shared with every other folder's agent
    settings: Settings = field(default_factory=Settings)
    settings_fresh: bool = False  # taken since the face last said they changed
    reported_problems: list[str] = field(default_factory=list)  # the settings' problems last said
    session: Session | None = None
    running: asyncio.Task[Any] | None = None  # the turn (or compaction) running, or the last one
    current: CurrentConversation = field(init=False)
    provider_choice: ProviderChoice = field(init=False)
    workspace: FrontendWorkspace = field(init=False)
    mcp: McpServers = field(init=False)
    compaction: Compaction = field(init=False)
    turn_checkpoints: TurnCheckpoints = field(init=False)

    def __post_init__(self) -> None:
        self.current = CurrentConversation(self.root, lambda: self.settings, self.frontend)
        self.provider_choice = ProviderChoice(self.root, lambda: self.settings)
        self.workspace = FrontendWorkspace(
            self.root,
            lambda: self.settings,
            documents=self.frontend,
            person=self.frontend,
            progress=self.frontend,
            face=self.frontend,
            client=self.frontend.name,
        )
        self.mcp = McpServers(self.frontend, self.root, lambda: self.settings)
        self.compaction = Compaction(self.root, self.frontend, self.current.store_entry)
        self.turn_checkpoints = TurnCheckpoints(self.root, lambda: self.settings, self.workspace)

    # -- settings and provider choice -----------------------------------------
    async def refresh_settings(self) -> None:
        if self.settings_fresh and self.frontend.keeps_settings:
            return
        settings, problems = parse_settings(await self.frontend.settings(self.uri))
        settings, ignored = within_trust(settings)
        if ignored:
            problems.append(f"{self.root.name} is not trusted, so these settings are ignored: {', '.join(ignored)}")
        if problems and problems != self.reported_problems:
            self.frontend.show_message("warning", "elelem: " + "; ".join(problems))
        self.reported_problems = problems
        self.apply_settings(settings)
        self.settings_fresh = True

    def apply_settings(self, settings: Settings) -> None:
        """Take new settings; plugins and declared providers are loaded again if they changed."""
        old, self.settings = self.settings, settings
        self.provider_choice.settings_changed(old, settings)
        if old.mcp_servers != settings.mcp_servers:
            self.mcp.sync()  # servers no longer wanted stop now, not at the next turn

    async def providers(self) -> dict[str, Any]:
        await self.refresh_settings()
        return self.provider_choice.describe()

    async def select_provider(self, name: str, model: str | None) -> dict[str, Any]:
        """Switch provider, keeping the conversation; the model is not carried over unless given."""
        await self.refresh_settings()
        choice = Choice(name, model, "selected")
        try:
            self._build(choice)
        except ProviderError as error:
            raise Refused(self.failure_text(error)) from None
        except Exception as error:  # a factory's own failure, e.g. a missing API key
            raise Refused(f"could not build provider {name!r}: {self.failure_text(error)}") from None
        self.provider_choice.selected = choice
        return {"provider": name, "model": model}

    def reload(self) -> list[str]:
        """Load the plugin files again (the provider is rebuilt at the next turn) and restart the
        MCP servers (each when a turn next needs it)."""
        failures = self.provider_choice.reload()
        self.mcp.stop_soon()
        return failures

    def _build(self, choice: Choice) -> Provider:
        provider = self.provider_choice.build(choice)
        if self.session is None:
            toolbox = self.toolbox.with_sources(EditorTools(self.workspace), self.mcp)
            self.session = Session(provider, self.workspace, toolbox=toolbox, max_steps=self.settings.max_steps)
            self.session.history = list(self.current.history)
        self.session.provider = provider
        return provider

    async def ready_conversation(self) -> None:
        """Its settings taken and its conversation open."""
        await self.refresh_settings()
        self.open_conversation()

    async def ready(self) -> Session:
        """Ready for a turn: its settings taken, its conversation open and the session built with
        the provider they ask for (ProviderError when it cannot be)."""
        await self.ready_conversation()
        return self._session()

    def _session(self) -> Session:
        """The session, with the provider the current choice and settings ask for."""
        choice = self.provider_choice.choice()
        if self.session is None or self.provider_choice.stale(choice):
            self._build(choice)
        assert self.session is not None
        self.session.max_steps = self.settings.max_steps
        self.session.secrets = settings_secrets(self.settings)
        self.session.check = CheckSettings(
            self.settings.check_after_edits, self.settings.check_wait_ms, self.settings.check_command
        )
        return self.session

    async def prepare(self) -> None:
        """Ahead of the first turn: open the conversation, build the provider the turn will use,
        derive the tool schemas and let the provider ready its first request (its optional
        ``prepare()``), off the loop where it can.

        A failure here is left for the turn to report.
        """
        await self.ready_conversation()
        self.turn_checkpoints.warm()  # the first turn's snapshot reads only what changed since
        choice = self.provider_choice.choice()
        module = self.provider_choice.implementation(choice)
        try:
            if module:
                await asyncio.to_thread(importlib.import_module, module)
            session = self._session()
            await asyncio.to_thread(session.toolbox.definitions)  # pydantic derives the schemas once
            await asyncio.to_thread(EDITOR_TOOLBOX.definitions)  # and the editor's tools' (diagnostics, ...)
            await self.mcp.prepare()
            prepare = getattr(session.provider, "prepare", None)
            if callable(prepare):
                # On the bridge's daemon thread: a plugin's prepare() that never returns must not
                # keep the server from exiting when the editor says so.
                await run_in_thread(lambda _emit, _cancelled: prepare(), lambda _event: None, name="elelem-prepare")
            self._set_budget(session)
            await session.learn_window()  # a server's own window, asked once: not on the first turn's way
        except Exception as error:
            log.info("could not prepare provider %r ahead of the first turn: %s", choice.name, self.failure_text(error))

    # -- turns -----------------------------------------------------------------
    async def turn(
        self,
        prompt: str,
        *,
        context: str = "",
        images: Sequence[Image] = (),
        token: Any = None,
        on_start: Callable[[Any], None] | None = None,
    ) -> dict[str, Any]:
        """Run one turn; ``token`` is the face's name for its progress, if it has one, and
        ``on_start`` is told the progress token once the turn runs (a face cancels it by that).

        ``context`` (where the person asked from: a file, a selection) follows the prompt in
        what the model reads; the conversation stores the two apart, so titles and redrawn
        transcripts show the person's own words. ``images`` go with the prompt: one given as
        ``data`` is kept on disk first (``keep_images``), so the stored turn names it by path."""
        record = TurnRecord(prompt) if self.frontend.plain else None
        asked = Asked(prompt, context, tuple(images))
        result = await self._play(asked, token, on_start, record.add if record else lambda event: None)
        if record is not None:
            show_turn(self.frontend, self.root, record, result, self.settings.history)
        return result

    async def _play(
        self, asked: Asked, token: Any, on_start: Callable[[Any], None] | None, observe: Callable[[dict[str, Any]], None]
    ) -> dict[str, Any]:
        try:
            session = await self.ready()
        except Exception as error:  # no such provider, or its factory's own failure (a key it lacks)
            choice, said = self.provider_choice.choice(), self.failure_text(error)
            return turn_result(choice.name, choice.model, TurnResult(f"Error: {said}", 0, error=said))
        asked = replace(asked, images=self.current.keep_images(asked.images))
        choice = self.provider_choice.choice()
        self.provider_choice.tell(choice, self.frontend)
        progress = await self.frontend.open_progress(token, "elelem", asked.prompt)
        played = PlayedTurn(progress, observe, self.current)

        async def compacted_turn() -> TurnResult:
            self._set_budget(session)
            await self.compaction.before_turn(session, self.settings, self.current.id, asked.text, played.add)
            return await session.turn(asked.text, played.add, asked.images)

        try:
            task = self.start(compacted_turn())
        except Busy as error:
            progress.end(f"Error: {error}")
            raise Refused(str(error)) from None
        checkpoint = self.turn_checkpoints.begin(asked.prompt, self.current.id)  # the files before the turn
        session.cancelled_turn = None  # set by the session's turn once it began and was cancelled
        if on_start is not None:
            on_start(progress.token)
        result, began = await outcome(task, session)
        kept = await kept_checkpoint(self.turn_checkpoints, checkpoint, result, self.root)  # what the turn changed
        answer = turn_result(choice.name, model_of(session.provider, choice.model), result, kept)
        await played.end(asked, answer, began, session, self.settings.prices, kept)
        return answer

    def _set_budget(self, session: Session) -> None:
        """What the session's budget comes from: the folder's setting and the model's known window."""
        session.context_setting = self.settings.context_tokens
        session.prompt_setting = self.settings.prompt
        session.model_window = model_window(model_of(session.provider, self.provider_choice.choice().model))

    async def compact(self) -> dict[str, Any]:
        """Ask the provider to summarise the older turns into one message that replaces them."""
        try:
            session = await self.ready()
        except Exception as error:  # as a turn reports it
            raise Refused(self.failure_text(error)) from None
        self._set_budget(session)
        try:
            task = self.start(self.compaction.compact(session))
        except Busy as error:
            raise Refused(str(error)) from None
        try:
            return await task
        except Exception as error:  # the provider's failure, reported as a turn reports it
            raise Refused(f"could not compact the conversation: {self.failure_text(error)}") from None

    async def context(self) -> dict[str, Any]:
        """The conversation as the provider sees it, and its estimate against the budget."""
        try:
            session = await self.ready()
        except Exception:  # no provider to measure for (none such, or its factory failed): the history as it stands
            budget = self.settings.context_tokens or DEFAULT_CONTEXT_TOKENS
            usage = usage_event(self.current.last_turn, self.current.spent, 0, budget)
            return {"messages": [], "tokens": 0, "budget": budget, "usage": usage}
        self._set_budget(session)
        fitted = await session.estimate()
        tokens = fitted.tokens
        return {
            "messages": await session.messages(),
            "tokens": tokens,
            "budget": session.context_tokens,
            "window": fitted_window(session, fitted),
            "usage": usage_event(self.current.last_turn, self.current.spent, tokens, session.context_tokens),
        }

    def start(self, coroutine: Any) -> asyncio.Task[Any]:
        if self.running is not None and not self.running.done():
            coroutine.close()
            raise Busy(f"a turn is already running in {self.root.name}; wait for it or {self.frontend.cancel_hint}")
        self.running = asyncio.ensure_future(coroutine)
        return self.running

    def refuse_while_running(self, doing: str) -> None:
        """Refused while a turn runs: what is ``doing`` must wait for it or cancel it."""
        if self.running is not None and not self.running.done():
            raise Refused(f"a turn is running in {self.root.name}; cancel it before {doing}")

    def cancel(self) -> bool:
        if self.running is not None and not self.running.done():
            self.running.cancel()
            return True
        return False

    def close(self) -> None:
        """The folder left: its turn is cancelled and its MCP servers stopped."""
        self.cancel()
        self.mcp.stop_soon()

    async def shutdown(self) -> None:
        """The face is going away: cancel the turn, stop the MCP servers and wait for them."""
        self.cancel()
        await self.mcp.stop()

    # -- the conversation (host/current_conversation.py) ---------------------------
    def continue_conversation(
        self, conversation: str, history: list[Message], entries: list[dict[str, Any]] | None = None
    ) -> None:
        """Make ``conversation`` current, with the history its provider will see (``CurrentConversation.switch``)."""
        self.current.switch(conversation, history, entries)
        if self.session is not None:
            self.session.history = list(history)

    def open_conversation(self) -> None:
        """Continue the folder's current conversation from disk, the first time it is needed."""
        if self.current.id is None:
            self.continue_conversation(*self.current.stored())

    def failure_text(self, error: BaseException) -> str:
        """A provider's error as it may be shown, logged or stored: no secret of the environment or settings."""
        return redact_error(str(error), settings_secrets(self.settings))

    # -- MCP servers -------------------------------------------------------------
    async def mcp_status(self) -> dict[str, Any]:
        """Each MCP server of the folder: stopped (not needed yet), starting, ready with its tools, or failed and why."""
        await self.refresh_settings()
        self.mcp.sync()  # a server no longer configured is stopped, not reported
        return {"servers": self.mcp.status()}

    def attach_mcp_servers(self, servers: dict[str, Any]) -> None:
        """Servers a face got from its protocol, in the ``mcpServers`` settings' shape."""
        self.mcp.attach(servers)
