"""Host: the agent behind a front end, in no protocol's terms.

It keeps the folders and their sessions, resolves each folder's settings from what the
front end supplies (reporting bad values once, limiting an untrusted folder), picks the
provider and says once where the pick came from, runs one turn at a time per folder,
tracks running turns so any cancellation the front end receives stops them, and shows a
plain client the turn it cannot see. Each folder's conversation is stored as its turns end
(``conversations``) and continued when the host starts; the host lists, resumes, deletes and
compacts them. A front end answers ``BadRequest`` and ``Refused``
(``frontend``) with its protocol's errors.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..agent.budget import DEFAULT_CONTEXT_TOKENS, split_turns
from ..agent.messages import ProviderError
from ..agent.session import Session, TurnResult, is_summary, summary_message
from ..agent.toolbox import Toolbox, describe
from ..providers.windows import model_window
from . import rewinding
from .conversations import Asked, ConversationStore, ToolLog, history_from, new_id, now, title, turn_entry
from .folders import Busy, Choice, Folder
from .frontend import BadRequest, Frontend, Refused
from .settings import Settings, parse_settings, within_trust
from .transcript import TurnRecord, preview, write_transcript

log = logging.getLogger(__name__)
KEEP_RECENT = 2  # turns a compaction leaves as they were
RETRY_COMPACTION_AFTER = 5  # turns a failed automatic compaction waits before it is tried again


class Host:
    def __init__(self, frontend: Frontend) -> None:
        self.frontend = frontend
        self.toolbox = Toolbox()  # one for every session, and for answering which tools there are
        self.folders: dict[str, Folder] = {}
        self.fresh_settings: set[str] = set()
        self.reported_problems: dict[str, list[str]] = {}
        self.told_choice: set[str] = set()
        self.turns_by_request: dict[Any, Folder] = {}
        self.turns_by_token: dict[Any, Folder] = {}
        # folder uri -> the conversation, and how many turns it had, when automatic compaction failed
        self.compaction_failed: dict[str, tuple[str | None, int]] = {}

    # -- folders ---------------------------------------------------------------
    def sync_folders(self, roots: dict[str, Path]) -> None:
        """The front end's folders now (id -> root); a folder that left has its turn cancelled."""
        for uri, root in roots.items():
            if uri not in self.folders:
                self.folders[uri] = Folder(root.resolve(), uri, self.frontend, self.toolbox)
        for uri in set(self.folders) - set(roots):
            self.folders.pop(uri).close()

    def folder_for(self, path: Path | None, named: str = "") -> Folder:
        """The innermost folder containing ``path``; the first folder for None."""
        if path is None:
            return next(iter(self.folders.values()))
        matches = [f for f in self.folders.values() if path == f.root or f.root in path.parents]
        if not matches:
            raise BadRequest(f"uri: {named or path} is not inside a workspace folder")
        return max(matches, key=lambda f: len(f.root.parts))

    # -- settings --------------------------------------------------------------
    async def refresh_settings(self, folder: Folder) -> None:
        if folder.uri in self.fresh_settings and self.frontend.keeps_settings:
            return
        settings, problems = parse_settings(await self.frontend.settings(folder.uri))
        settings, ignored = within_trust(settings)
        if ignored:
            problems.append(f"{folder.root.name} is not trusted, so these settings are ignored: {', '.join(ignored)}")
        if problems and problems != self.reported_problems.get(folder.uri):
            self.frontend.show_message("warning", "elelem: " + "; ".join(problems))
        self.reported_problems[folder.uri] = problems
        folder.apply_settings(settings)
        self.fresh_settings.add(folder.uri)

    async def settings_changed(self) -> None:
        """The front end says settings changed: take them again, now."""
        self.fresh_settings.clear()
        for folder in list(self.folders.values()):
            await self.refresh_settings(folder)

    async def prepare(self) -> None:
        """Ready each folder's provider, and the conversation it continues, ahead of its first turn."""
        for folder in list(self.folders.values()):
            await self.refresh_settings(folder)
            self.open_conversation(folder)
            rewinding.warm(folder)  # checkpoints: the first turn's snapshot reads only what changed since
            await folder.prepare()

    def tell_choice(self, folder: Folder, choice: Choice) -> None:
        """Say once per folder which provider the environment picked, and how to change it."""
        if choice.source != "environment" or folder.uri in self.told_choice:
            return
        self.told_choice.add(folder.uri)
        what = " (a demo that needs no model)" if choice.name == "stub" else ""
        self.frontend.show_message(
            "info",
            f"elelem: using provider {choice.name!r}{what} for {folder.root.name} "
            f"(picked from the environment); {self.frontend.provider_hint}",
        )

    # -- turns -----------------------------------------------------------------
    async def turn(
        self, folder: Folder, prompt: str, *, context: str = "", token: Any = None, request: Any = None
    ) -> dict[str, Any]:
        """Run one turn; ``token`` and ``request`` are the front end's names for it, to cancel it by.

        ``context`` (where the person asked from: a file, a selection) follows the prompt in
        what the model reads; the conversation stores the two apart, so titles and redrawn
        transcripts show the person's own words."""
        record = TurnRecord(prompt) if self.frontend.plain else None
        turn = Asked(prompt, context)
        result = await self._play(folder, turn, token, request, record.add if record else lambda event: None)
        if record is not None:
            self._show_turn(folder, record, result)
        return result

    async def _play(
        self, folder: Folder, asked: Asked, token: Any, request: Any, observe: Callable[[dict[str, Any]], None]
    ) -> dict[str, Any]:
        await self.refresh_settings(folder)
        self.open_conversation(folder)
        choice = folder.choice()
        try:
            session = folder.ready_session()
        except ProviderError as error:
            return turn_result(choice.name, choice.model, TurnResult(f"Error: {error}", 0, error=str(error)))
        self.tell_choice(folder, choice)
        progress = await self.frontend.open_progress(token, "elelem", asked.prompt)
        started, tools = now(), ToolLog()

        def add(event: dict[str, Any]) -> None:
            progress.add(event)
            observe(event)
            tools.add(event)

        try:
            task = folder.start(self._compacting_turn(folder, session, asked.text, add))
        except Busy as error:
            progress.end(f"Error: {error}")
            raise Refused(str(error)) from None
        checkpoint = rewinding.begin(folder, asked.prompt)  # checkpoints: the files before the turn
        session.cancelled_turn = None  # set by the session's turn once it began and was cancelled
        self.turns_by_request[request] = folder
        if progress.token is not None:
            self.turns_by_token[progress.token] = folder
        try:
            await asyncio.wait({task})
        finally:
            for table in (self.turns_by_request, self.turns_by_token):
                for key in [k for k, f in table.items() if f is folder]:
                    del table[key]
        began = not task.cancelled() or session.cancelled_turn is not None
        if task.cancelled():
            result = session.cancelled_turn or TurnResult("", 0)
            result.cancelled = True
            progress.end("cancelled")
        else:
            result = task.result()
            progress.end(result.reply if result.error else "done")
        answer = turn_result(choice.name, model_of(session.provider, choice.model), result)
        kept = await rewinding.end(folder, checkpoint)  # checkpoints: what the turn changed
        answer["checkpoint"] = kept["turn"] if kept else None
        if began:  # a turn cancelled before it began left nothing in the history: nothing to store
            entry = turn_entry(asked.prompt, asked.context, answer, started, tools.calls)
            self._store_entry(folder, {**entry, "checkpoint": kept} if kept else entry)
        return answer

    async def _compacting_turn(
        self, folder: Folder, session: Session, prompt: str, add: Callable[[dict[str, Any]], None]
    ) -> TurnResult:
        """The turn, after compacting the older turns when they would not fit and the folder asks to."""
        self._set_budget(folder, session)
        if (
            folder.settings.compaction == "summarize"
            and self._compaction_due(folder, session)
            and (await session.estimate(prompt)).left_out
        ):
            await self._compact_for_turn(folder, session, add)
        return await session.turn(prompt, add)

    def _compaction_due(self, folder: Folder, session: Session) -> bool:
        """Whether to try automatic compaction: not again until the conversation that it failed
        for has grown by ``RETRY_COMPACTION_AFTER`` turns (each try is a request to the provider)."""
        failed = self.compaction_failed.get(folder.uri)
        if failed is None or failed[0] != folder.conversation:
            return True
        return len(split_turns(session.history)) >= failed[1] + RETRY_COMPACTION_AFTER

    async def _compact_for_turn(self, folder: Folder, session: Session, add: Callable[[dict[str, Any]], None]) -> None:
        """Compact ahead of a turn, telling its progress; a failure is said once, and the turn goes
        on with the oldest turns left out instead."""
        try:
            report = await self._compact(folder, session)
        except Exception as error:  # the provider's own failure, whatever it raised
            log.warning("could not compact the conversation of %s: %s", folder.root, error)
            failed_before = self.compaction_failed.get(folder.uri, (None, 0))[0] == folder.conversation
            self.compaction_failed[folder.uri] = (folder.conversation, len(split_turns(session.history)))
            if not failed_before:
                self.frontend.show_message(
                    "warning",
                    f"elelem: could not compact the conversation ({error}); older turns are left out, "
                    f"and compacting is tried again after {RETRY_COMPACTION_AFTER} more turns",
                )
            return
        if report["turns"]:
            add({"type": "compacted", **report})

    def _set_budget(self, folder: Folder, session: Session) -> None:
        """What the session's budget comes from: the folder's setting and the model's known window."""
        session.context_setting = folder.settings.context_tokens
        session.model_window = model_window(model_of(session.provider, folder.choice().model))

    async def compact(self, folder: Folder) -> dict[str, Any]:
        """Ask the provider to summarise the older turns into one message that replaces them."""
        await self.refresh_settings(folder)
        self.open_conversation(folder)
        try:
            session = folder.ready_session()
        except ProviderError as error:
            raise Refused(str(error)) from None
        self._set_budget(folder, session)
        try:
            task = folder.start(self._compact(folder, session))
        except Busy as error:
            raise Refused(str(error)) from None
        try:
            return await task
        except Exception as error:  # the provider's failure, reported as a turn reports it
            raise Refused(f"could not compact the conversation: {error}") from None

    async def _compact(self, folder: Folder, session: Session) -> dict[str, Any]:
        """Replace all turns but the last ``KEEP_RECENT`` (and any summary before them) with a summary."""
        before = (await session.estimate()).tokens
        turns = split_turns(session.history)
        older, recent = turns[:-KEEP_RECENT], turns[-KEEP_RECENT:]
        compacted = sum(not is_summary(turn) for turn in older)
        if not compacted:
            return {"turns": 0, "tokensBefore": before, "tokensAfter": before}
        summary = await session.summarise([message for turn in older for message in turn])
        self.compaction_failed.pop(folder.uri, None)
        self._store_entry(folder, {"kind": "compaction", "turns": compacted, "summary": summary, "at": now()})
        session.history = [summary_message(summary), *(message for turn in recent for message in turn)]
        return {"turns": compacted, "tokensBefore": before, "tokensAfter": (await session.estimate()).tokens}

    def cancel_request(self, request: Any) -> None:
        folder = self.turns_by_request.get(request)
        if folder is not None:
            folder.cancel()

    def cancel_progress(self, token: Any) -> None:
        folder = self.turns_by_token.get(token)
        if folder is not None:
            folder.cancel()

    def _show_turn(self, folder: Folder, record: TurnRecord, result: dict[str, Any]) -> None:
        """For a plain client: the start of the reply as a message, the whole turn as a document."""
        reply = result["reply"] or ("cancelled" if result["cancelled"] else "(no reply)")
        self.frontend.show_message("error" if result["error"] else "info", f"elelem: {preview(reply)}")
        if not self.frontend.can_show_files:
            return
        try:
            path = write_transcript(folder.root.name, record.markdown(folder.root.name, result))
        except OSError as error:
            log.warning("could not write the transcript: %s", error)
            return
        self.frontend.show_file(path)

    # -- the conversation and its provider ---------------------------------------
    async def providers(self, folder: Folder) -> dict[str, Any]:
        await self.refresh_settings(folder)
        choice = folder.choice()
        return {
            "provider": choice.name,
            "model": choice.model,
            "source": choice.source,
            "available": folder.available(),
            "pluginErrors": [failure.describe() for failure in folder.config.failures],
        }

    async def select_provider(self, folder: Folder, name: str, model: str | None) -> dict[str, Any]:
        await self.refresh_settings(folder)
        try:
            folder.select(name, model)
        except ProviderError as error:
            raise Refused(str(error)) from None
        except Exception as error:  # a factory's own failure, e.g. a missing API key
            raise Refused(f"could not build provider {name!r}: {error}") from None
        return {"provider": name, "model": model}

    async def context(self, folder: Folder) -> dict[str, Any]:
        """The conversation as the provider sees it, and its estimate against the budget."""
        await self.refresh_settings(folder)
        self.open_conversation(folder)
        try:
            session = folder.ready_session()
        except ProviderError:  # no provider to measure for: the history as it stands
            return {"messages": [], "tokens": 0, "budget": folder.settings.context_tokens or DEFAULT_CONTEXT_TOKENS}
        self._set_budget(folder, session)
        return {
            "messages": await session.messages(),
            "tokens": (await session.estimate()).tokens,
            "budget": session.context_tokens,
        }

    # -- stored conversations (host/conversations.py) ---------------------------------
    def open_conversation(self, folder: Folder) -> None:
        """Continue the folder's current conversation from disk, the first time it is needed."""
        if folder.conversation is not None:
            return
        conversation, history = None, []
        if folder.settings.history:
            try:
                store = ConversationStore(folder.root)
                conversation = store.current()
                if conversation is not None:
                    history = history_from(store.entries(conversation))
            except OSError as error:
                self._storage_failed(folder, error)
        folder.continue_conversation(conversation or new_id(), history)

    def _store_entry(self, folder: Folder, entry: dict[str, Any]) -> None:
        if not folder.settings.history or folder.conversation is None:
            return
        try:
            store = ConversationStore(folder.root)
            first = not store.exists(folder.conversation)
            store.append(folder.conversation, entry)
            if first:  # a new conversation is the one a restart continues once it holds a turn
                store.make_current(folder.conversation)
        except OSError as error:
            self._storage_failed(folder, error)

    def _storage_failed(self, folder: Folder, error: OSError) -> None:
        log.warning("conversation storage for %s: %s", folder.root, error)
        self.frontend.show_message("warning", f"elelem: the conversation of {folder.root.name} is not stored: {error}")

    async def _stored(self, folder: Folder, conversation: str | None = None) -> ConversationStore:
        """The folder's store, its settings taken and its conversation open; ``conversation``, when
        given, must name one of its stored conversations (none is read with ``history`` off)."""
        await self.refresh_settings(folder)
        self.open_conversation(folder)
        store = ConversationStore(folder.root)
        if conversation is not None:
            store.path(conversation)  # an id at all
            if not folder.settings.history:
                raise BadRequest(
                    f"id: history is off in {folder.root.name} (the history setting), so stored conversations are not read"
                )
            if not store.exists(conversation):
                raise BadRequest(f"id: no conversation {conversation!r} in {folder.root.name}")
        return store

    @staticmethod
    def _idle(folder: Folder, doing: str) -> None:
        if folder.turn is not None and not folder.turn.done():
            raise Refused(f"a turn is running in {folder.root.name}; cancel it before {doing}")

    @staticmethod
    @contextlib.contextmanager
    def _refused_when_unusable(folder: Folder, doing: str) -> Iterator[None]:
        """A stored conversation that cannot be read or deleted (a planted symlink, a folder in its
        place) is refused with the reason, as the front end says any refusal."""
        try:
            yield
        except OSError as error:
            raise Refused(f"the stored conversations of {folder.root.name} cannot be {doing}: {error}") from None

    async def conversations(self, folder: Folder) -> list[dict[str, Any]]:
        """The folder's stored conversations, newest first (none with ``history`` off: nothing is read)."""
        store = await self._stored(folder)
        if not folder.settings.history:
            return []
        with self._refused_when_unusable(folder, "read"):
            return store.list()

    async def new_conversation(self, folder: Folder) -> dict[str, Any]:
        """Start a new current conversation; the old one stays on disk, and stays the one a restart
        continues until the new one's first turn is stored (a client that starts and leaves without
        asking moves nothing)."""
        await self.refresh_settings(folder)
        self._idle(folder, "starting a new conversation")
        conversation = new_id()
        folder.continue_conversation(conversation, [])
        return {"reset": True, "id": conversation}

    async def start_over(self, folder: Folder) -> None:
        """The model forgets the conversation so far, which stays stored and goes on in the same
        conversation (for a face whose session is one conversation for good, as ACP's is)."""
        await self.refresh_settings(folder)
        self.open_conversation(folder)
        self._idle(folder, "starting the conversation over")
        folder.continue_conversation(folder.conversation, [])
        self._store_entry(folder, {"kind": "reset", "at": now()})

    async def resume(self, folder: Folder, conversation: str) -> dict[str, Any]:
        """Make a stored conversation current; its transcript."""
        store = await self._stored(folder, conversation)
        self._idle(folder, "resuming another conversation")
        with self._refused_when_unusable(folder, "read"):
            entries = store.entries(conversation)
        folder.continue_conversation(conversation, history_from(entries))
        try:
            store.make_current(conversation)
        except OSError as error:  # resumed all the same; a restart will not know
            self._storage_failed(folder, error)
        return {"id": conversation, "title": title(entries), "entries": entries}

    async def transcript(self, folder: Folder, conversation: str | None = None) -> dict[str, Any]:
        """The stored entries of a conversation (the current one by default; none with ``history`` off)."""
        store = await self._stored(folder, conversation)
        conversation = conversation or folder.conversation
        assert conversation is not None
        with self._refused_when_unusable(folder, "read"):
            entries = store.entries(conversation) if folder.settings.history and store.exists(conversation) else []
        return {"id": conversation, "title": title(entries), "entries": entries}

    async def delete_conversation(self, folder: Folder, conversation: str) -> dict[str, Any]:
        """Remove a stored conversation; deleting the current one starts a new one, whose id is
        ``started`` (a client then starts its transcript over, as after ``elelem.reset``)."""
        store = await self._stored(folder, conversation)
        if conversation == folder.conversation:
            self._idle(folder, "deleting the conversation it belongs to")
        with self._refused_when_unusable(folder, "deleted"):
            store.delete(conversation)
        if conversation != folder.conversation:
            return {"deleted": conversation}
        started = new_id()
        folder.continue_conversation(started, [])
        return {"deleted": conversation, "started": started}

    # -- checkpoints (host/rewinding.py) ---------------------------------------------------
    async def checkpoints(self, folder: Folder) -> list[dict[str, Any]]:
        """The folder's kept turns that changed files, newest first, with the files."""
        await self.refresh_settings(folder)
        return await rewinding.listing(folder)

    async def rewind(
        self, folder: Folder, turn: int, files: list[str] | None = None, *, conversation: bool = False, force: bool = False
    ) -> dict[str, Any]:
        """The files, and with ``conversation`` the history, back to before ``turn``."""
        await self.refresh_settings(folder)
        self.open_conversation(folder)
        self._idle(folder, "rewinding")
        return await rewinding.rewind(
            folder, turn, files, conversation=conversation, force=force, store_entry=lambda e: self._store_entry(folder, e)
        )

    def tools(self) -> dict[str, Any]:
        """The built-in tools, then each running MCP server's (with its ``server``)."""
        listed = [d["function"] for d in self.toolbox.definitions()]
        seen = {tool["name"] for tool in listed}
        for folder in self.folders.values():
            for connection in folder.mcp.connections.values():
                for definition in connection.definitions() if connection.state == "ready" else []:
                    if definition["function"]["name"] not in seen:
                        seen.add(definition["function"]["name"])
                        listed.append({**definition["function"], "server": connection.name})
        return {"tools": listed}

    def reload(self) -> dict[str, Any]:
        """Load plugin files again and restart the MCP servers (each when a turn next needs it)."""
        failures: list[str] = []
        for folder in self.folders.values():
            failures += folder.reload()
            folder.mcp.stop_soon()
        return {"pluginErrors": failures}

    # -- MCP servers -------------------------------------------------------------
    async def mcp(self, folder: Folder) -> dict[str, Any]:
        """Each MCP server of the folder: stopped (not needed yet), starting, ready with its tools, or failed and why."""
        await self.refresh_settings(folder)
        folder.mcp.sync()  # a server no longer configured is stopped, not reported
        return {"servers": folder.mcp.status()}

    def attach_mcp_servers(self, folder: Folder, servers: dict[str, Any]) -> None:
        """Servers a front end got from its protocol, in the ``mcpServers`` settings' shape."""
        try:
            configs = Settings.model_validate({"mcpServers": servers}).mcp_servers
        except ValidationError as error:
            raise BadRequest(f"mcpServers: {describe(error)}") from None
        folder.mcp.attach(configs)

    async def shutdown(self) -> None:
        """The front end is going away: stop every folder's MCP servers and wait for them."""
        for folder in list(self.folders.values()):
            folder.cancel()
        await asyncio.gather(*(folder.mcp.stop() for folder in self.folders.values()))


def model_of(provider: Any, chosen: str | None) -> str | None:
    """The model the provider runs: its ``model`` when that is a name (the choice names none when
    the provider's default is used), else the one chosen."""
    model = getattr(provider, "model", None)
    return model if isinstance(model, str) and model else chosen


def turn_result(provider: str, model: str | None, result: TurnResult) -> dict[str, Any]:
    return {
        "reply": result.reply,
        "provider": provider,
        "model": model,
        "steps": result.steps,
        "cancelled": result.cancelled,
        "error": result.error,
    }
