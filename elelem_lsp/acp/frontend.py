"""AcpFrontend: the host's Frontend port for one ACP session, answered by the ACP client.

Settings are the user's settings file (ACP has no configuration request) and the
folder's plugin trust; the trust question, command permission and ``confirmEdits`` go
to ``session/request_permission``. Reads go through ``fs/read_text_file`` and writes
through ``fs/write_text_file`` when the client offers them (its unsaved buffers, its
undo), else the disk; either way each edit is recorded as a diff on the tool call that
made it. A rewind goes through the client the same way (host/rewinding.py), its
deletions to the disk. Each question shows
on its card what is asked (a command's title says whether it runs in the sandbox, an
edit's question shows its diff). Commands run in a client terminal when the client offers
``terminal`` (the person watches it live; a cancelled turn kills it), else in our own
subprocess. Messages for the person become thought chunks of the next turn (and the log).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Sequence
from pathlib import Path
from typing import Any

from acp import (
    RequestError,
    start_tool_call,
    text_block,
    tool_content,
    tool_diff_content,
    tool_terminal_ref,
    update_tool_call,
)
from acp.schema import ClientCapabilities, PermissionOption, PermissionOptionKind, ToolCallUpdate

from ..agent.textfile import ModelView
from ..agent.workspace import ProcessResult, WorkspaceError, read_stored, write_atomically
from ..host.frontend import CommandRun, FileEdit, Frontend, Level, OpenDocument, ProgressSink, Unanswered
from ..host.permission import ALLOW_ONCE, ALLOW_SESSION, DENY, IN_SANDBOX, NO_SANDBOX, RUN_QUESTION
from ..host.trust import PLUGIN_FOLDER, PluginSet, TrustStore
from ..host.user_settings import SettingsFileError, read_user_settings
from .updates import Outbox, ToolCalls, TurnUpdates

log = logging.getLogger(__name__)
LOG_LEVELS = {"info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}
KIND_OF_ANSWER: dict[str, PermissionOptionKind] = {
    ALLOW_ONCE: "allow_once",
    ALLOW_SESSION: "allow_always",
    DENY: "reject_once",
}
LOAD_ONCE, LOAD_ALWAYS, LOAD_NOT = "Load them this time", "Always load these files", "Do not load them"
PLUGINS_CALL = "elelem-workspace-plugins"  # the tool call id the trust question is asked about
KILL_GRACE = 5.0  # seconds a killed terminal's release may take, after the turn already ended


class AcpFrontend(Frontend):
    def __init__(
        self, conn: Any, session_id: str, root: Path, capabilities: ClientCapabilities, client: str, *, trust: bool
    ) -> None:
        self.conn, self.session_id, self.root = conn, session_id, root.resolve()
        self.capabilities, self.client, self.trust_flag = capabilities, client, trust
        self.outbox = Outbox(lambda update: conn.session_update(session_id=self.session_id, update=update))
        self.calls = ToolCalls()  # each turn's own, sharing the session's ids (``used``)
        self.turn: TurnUpdates | None = None
        self.notices: list[str] = []
        self.prompted = False  # a prompt of this session is running: the person can be asked about it
        self.plugins_load: bool | None = None
        self.trust_question: asyncio.Future[bool | None] | None = None
        self.edits_allowed = False  # "allow always" to a confirmEdits question, for this session
        self.settings_problem: str | None = None
        self.cleanup: set[asyncio.Task[Any]] = set()

    # -- what the client offers ---------------------------------------------------
    @property
    def name(self) -> str:
        return self.client

    @property
    def provider_hint(self) -> str:
        return "pick another in the session's Provider option, or type /provider NAME"

    @property
    def can_edit(self) -> bool:
        return True  # every write goes through apply_edit, so the tool call shows its diff

    @property
    def _fs(self) -> Any:
        return self.capabilities.fs

    @property
    def reads_through_client(self) -> bool:
        return bool(self._fs and self._fs.read_text_file)

    @property
    def writes_through_client(self) -> bool:
        return bool(self._fs and self._fs.write_text_file)

    # -- settings and trust -------------------------------------------------------
    async def settings(self, folder_uri: str) -> Any:
        try:
            raw = read_user_settings()
            self.settings_problem = None
        except SettingsFileError as error:
            if str(error) != self.settings_problem:
                self.show_message("warning", f"elelem: {error}; using the defaults")
            self.settings_problem, raw = str(error), {}
        # Whether the folder's plugins load is the folder's trust, never a setting of the file.
        return {**raw, "workspacePlugins": await self.plugin_trust()}

    async def plugin_trust(self) -> bool:
        """Whether this folder's ``.agents/plugins`` may load: --trust, the trust file, or the person."""
        if self.plugins_load is not None:
            return self.plugins_load
        plugins = PluginSet.scan(self.root)
        if not plugins.files or self.trust_flag:
            self.plugins_load = bool(plugins.files)
            return self.plugins_load
        store = TrustStore()
        if store.trusts(plugins):
            self.plugins_load = True
            return True
        if not self.prompted:
            return False  # asked during the first prompt, where a client expects questions
        # One question, however many wait for its answer. A question that an earlier prompt asked
        # and that was cancelled with it (its answer may still be on its way in) is asked again.
        for _ in range(2):
            question = self.trust_question
            started_here = question is None
            if question is None:
                question = self.trust_question = asyncio.ensure_future(self._ask_trust(plugins, store))
            answer = await asyncio.shield(question)
            if answer is not None:
                self.plugins_load = answer
                return answer
            if self.trust_question is question:
                self.trust_question = None
            if started_here:
                break
        return False

    async def _ask_trust(self, plugins: PluginSet, store: TrustStore) -> bool | None:
        """Whether the person lets the plugins load; None when the question was cancelled (the
        prompt was): not loaded now, and asked again at the next prompt."""
        where = self.root / PLUGIN_FOLDER
        try:
            answer = await self.ask(
                f"Load the plugins in {where} ({', '.join(plugins.files)})? They are code from this project.",
                [LOAD_ONCE, LOAD_ALWAYS, LOAD_NOT],
                {LOAD_ONCE: "allow_once", LOAD_ALWAYS: "allow_always", LOAD_NOT: "reject_once"},
                None,
                PLUGINS_CALL,
            )
        except Unanswered as error:
            self.show_message("warning", f"elelem: not loading the plugins in {where}: {error}")
            return False
        if answer is None:
            return None
        if answer == LOAD_ALWAYS:
            store.remember(plugins)
        return answer in (LOAD_ONCE, LOAD_ALWAYS)

    # -- messages and turns ---------------------------------------------------------
    def show_message(self, level: Level, text: str) -> None:
        log.log(LOG_LEVELS[level], "%s", text)
        if self.turn is not None and self.turn.ended is None:
            self.outbox.put_text("thinking", text + "\n")
        else:
            self.notices.append(text)

    async def open_progress(self, token: Any, title: str, message: str) -> ProgressSink:
        self.calls = ToolCalls(self.calls.used)
        self.turn = TurnUpdates(self.outbox, self.calls, self.root)
        for notice in self.notices:
            self.outbox.put_text("thinking", notice + "\n")
        self.notices.clear()
        return self.turn

    def tool_starting(self, call_id: str, name: str) -> None:
        if self.turn is not None:
            self.turn.started(call_id)

    # -- questions ------------------------------------------------------------------
    async def ask(
        self,
        question: str,
        options: list[str],
        kinds: dict[str, PermissionOptionKind],
        call_id: str | None,
        card: str,
        shown: Sequence[Any] = (),
    ) -> str | None:
        """The option the person picked through ``session/request_permission``; None when the
        request was cancelled; Unanswered when the client could not ask.

        The card shows the question (and ``shown``, such as an edit's diff) while it waits. Asked on
        the card of the tool call ``call_id`` when a call is running (its title, such as ``Run
        pytest -q``, gains whether a command runs in the sandbox; the question leaves the card once
        answered); else on a card of its own, named ``card`` and titled ``question``, that ends once
        answered (completed when allowed) instead of waiting forever."""
        ids = {f"option-{number}": option for number, option in enumerate(options)}
        content = [tool_content(text_block(question)), *shown]
        own_card = call_id is None
        if call_id is not None:
            title = asked_title(self.calls.titles.get(call_id), question)
            about = ToolCallUpdate(tool_call_id=call_id, title=title, content=content)
        else:
            call_id = self.calls.unique(card)
            self.outbox.put(start_tool_call(call_id, question, kind="other", status="pending"))
            await self.outbox.sent()
            about = ToolCallUpdate(tool_call_id=call_id, title=question, content=content)
        answer = None
        try:
            response = await self.conn.request_permission(
                session_id=self.session_id,
                tool_call=about,
                options=[
                    PermissionOption(option_id=option_id, name=option, kind=kinds.get(option, "allow_once"))
                    for option_id, option in ids.items()
                ],
            )
            outcome = response.outcome
            answer = ids.get(outcome.option_id) if outcome.outcome == "selected" else None
        except (RequestError, ConnectionError) as error:
            raise Unanswered(f"the client could not ask for permission: {error}") from None
        finally:
            if own_card:
                allowed = answer is not None and kinds.get(answer, "allow_once").startswith("allow")
                self.outbox.put(update_tool_call(call_id, status="completed" if allowed else "failed"))
            else:  # the call goes on: its card shows what it does (a terminal, a diff, an error), not the question
                self.outbox.put(update_tool_call(call_id, content=[]))
        return answer

    async def ask_permission(self, question: str, options: list[str]) -> str | None:
        return await self.ask(question, options, KIND_OF_ANSWER, self.calls.current, "elelem-question")

    async def ask_text(self, prompt: str) -> str:
        raise Unanswered("an ACP client cannot be asked for a line of text, so the human provider cannot be used here")

    # -- files ----------------------------------------------------------------------
    async def read_document(self, path: Path) -> OpenDocument | None:
        if not self.reads_through_client or not path.is_file():  # a FIFO or a folder: the disk's refusal
            return None
        try:
            response = await self.conn.read_text_file(session_id=self.session_id, path=str(path))
        except RequestError as error:
            log.info("the client could not read %s (%s); reading the disk", path, error)
            return None
        return OpenDocument(path, path.as_uri(), None, response.content)

    async def apply_edit(self, edit: FileEdit) -> tuple[bool, str | None]:
        name = edit.path.relative_to(self.root).as_posix() if edit.path.is_relative_to(self.root) else str(edit.path)
        old = edit.document.text if edit.document is not None else None
        if edit.before is None:
            new = edit.replacement.text
        else:
            stored = old if old is not None else read_stored(edit.path, name).text
            old, new = stored, ModelView.of(stored).in_stored(edit.replacement).applied_to(stored)
        diff = tool_diff_content(str(edit.path), new, old)
        if edit.confirm and not self.edits_allowed:
            answer = await self.ask(
                f"elelem wants to {edit.tool} {name}",
                [ALLOW_ONCE, ALLOW_SESSION, DENY],
                KIND_OF_ANSWER,
                self.calls.current,
                f"elelem-edit-{name}",
                [diff],  # the person sees what the edit does before allowing it
            )
            if answer not in (ALLOW_ONCE, ALLOW_SESSION):
                return False, "the person rejected it" if answer == DENY else "the question was dismissed"
            self.edits_allowed = answer == ALLOW_SESSION
        if self.writes_through_client:
            try:
                await self.conn.write_text_file(session_id=self.session_id, path=str(edit.path), content=new)
            except RequestError as error:
                return False, str(error)
        else:
            try:
                on_disk = read_stored(edit.path, name) if edit.before is not None else None
                write_atomically(edit.path, on_disk.encode(new) if on_disk is not None else new)
            except (OSError, WorkspaceError) as error:
                return False, str(error)
        self.calls.add(diff)
        return True, None

    # -- commands -------------------------------------------------------------------
    async def run_command(self, run: CommandRun) -> ProcessResult:
        if not self.capabilities.terminal:
            result = await run.run_here()
            self.calls.add(tool_content(text_block(command_output(result))))
            return result
        creating = asyncio.ensure_future(
            self.conn.create_terminal(
                session_id=self.session_id,
                command=run.argv[0],  # the shell, in the sandbox when there is one
                args=run.argv[1:],
                cwd=str(run.cwd),
                output_byte_limit=run.output_cap,
            )
        )
        try:
            terminal = await asyncio.shield(creating)
        except asyncio.CancelledError:  # the command may be running already: killed once its id is known
            creating.add_done_callback(self._kill_created)
            raise
        except RequestError as error:
            raise WorkspaceError(f"the client could not open a terminal for it: {error}") from None
        terminal_id = terminal.terminal_id
        self.calls.add(tool_terminal_ref(terminal_id))
        if self.calls.current is not None:  # the person sees the terminal while it runs
            self.outbox.put(update_tool_call(self.calls.current, content=[tool_terminal_ref(terminal_id)]))
        ids = {"session_id": self.session_id, "terminal_id": terminal_id}
        try:
            timed_out = False
            try:
                await asyncio.wait_for(self.conn.wait_for_terminal_exit(**ids), run.timeout)
            except TimeoutError:
                timed_out = True
                await self.conn.kill_terminal(**ids)
            output = await self.conn.terminal_output(**ids)
        except asyncio.CancelledError:
            self._later(self._kill_and_release(ids))  # the turn ends now; the client is told after
            raise
        except RequestError as error:
            self._later(self._kill_and_release(ids))
            raise WorkspaceError(f"the client's terminal failed: {error}") from None
        self._later(self._release(ids))
        status = output.exit_status
        return ProcessResult(status.exit_code if status else None, output.output, output.truncated, timed_out)

    async def closed(self) -> None:
        """The session is closed: wait for its terminals to be killed and released."""
        if self.cleanup:
            await asyncio.wait(set(self.cleanup))

    def _kill_created(self, creating: asyncio.Future[Any]) -> None:
        if not creating.cancelled() and creating.exception() is None:
            self._later(self._kill_and_release({"session_id": self.session_id, "terminal_id": creating.result().terminal_id}))

    def _later(self, coroutine: Awaitable[None]) -> None:
        task = asyncio.ensure_future(coroutine)
        self.cleanup.add(task)
        task.add_done_callback(self.cleanup.discard)

    async def _kill_and_release(self, ids: dict[str, str]) -> None:
        try:
            await asyncio.wait_for(self.conn.kill_terminal(**ids), KILL_GRACE)
        except (TimeoutError, RequestError, ConnectionError) as error:
            log.info("could not kill terminal %s: %s", ids["terminal_id"], error)
        await self._release(ids)

    async def _release(self, ids: dict[str, str]) -> None:
        try:
            await asyncio.wait_for(self.conn.release_terminal(**ids), KILL_GRACE)
        except (TimeoutError, RequestError, ConnectionError) as error:
            log.info("could not release terminal %s: %s", ids["terminal_id"], error)


def asked_title(title: str | None, question: str) -> str | None:
    """A running call's title while the person is asked about it: a command's says whether it runs
    in the sandbox (``Run pytest -q (in the sandbox)``), as the question does; None keeps the title."""
    if title is None or not question.startswith(RUN_QUESTION):
        return None
    return next((title + note for note in (IN_SANDBOX, NO_SANDBOX) if question.endswith(note)), None)


def command_output(result: ProcessResult) -> str:
    """A command's output as the tool call shows it: the text, then how it ended."""
    ending = "timed out" if result.timed_out else f"exit {result.exit_code}"
    cut = ", output cut short" if result.truncated else ""
    return f"{result.output.rstrip()}\n({ending}{cut})".lstrip()
