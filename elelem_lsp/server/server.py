"""The language server: pygls wiring of the commands, code actions, settings and cancellation.

Each feature delegates to a plain module (commands, actions, folders, stream);
this file only connects them to LSP and holds what the client negotiated.

Start-up imports only pygls and this face: the agent (pydantic models, tools, providers) is
imported after ``initialize`` has been answered, on a worker thread, together with everything
the first turn's provider needs, so neither start-up nor the first turn pays for it.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable
from urllib.parse import unquote, urlparse

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.uris import to_fs_path

from .. import __version__
from . import actions
from .editor import EditorWorkspace

if TYPE_CHECKING:
    from ..agent.toolbox import Toolbox
    from .folders import Choice, Folder

log = logging.getLogger(__name__)

# The commands, named before the agent is imported: commands.COMMANDS maps each to its argument
# model and handler (a test keeps the two in step).
COMMAND_NAMES = (
    "elelem.ask",
    "elelem.fix",
    "elelem.providers",
    "elelem.selectProvider",
    "elelem.cancel",
    "elelem.reset",
    "elelem.context",
    "elelem.tools",
    "elelem.reload",
)


class ElelemProtocol(LanguageServerProtocol):
    """pygls' protocol, with cancellation that really stops a turn."""

    def _handle_cancel_notification(self, msg_id: Any) -> None:
        # pygls answers the request but leaves the command's coroutine running.
        self._server.cancel_request(msg_id)
        super()._handle_cancel_notification(msg_id)

    def _handle_response(self, msg_id: Any, result: Any = None, error: Any = None) -> None:
        # A reply to a request whose waiter was cancelled (pygls #621) would raise
        # InvalidStateError and pop up an error in the editor: drop it.
        future = self._request_futures.get(msg_id)
        if future is not None and future.done():
            self._request_futures.pop(msg_id, None)
            self._result_types.pop(msg_id, None)
            return
        super()._handle_response(msg_id, result, error)


@dataclass
class Progress:
    """Where one turn's progress goes: a ``$/progress`` token, or the log when there is none."""

    token: Any
    send: Callable[[dict[str, Any]], None]
    close: Callable[[], None] = field(default=lambda: None)


class ElelemServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("elelem-lsp", __version__, protocol_cls=ElelemProtocol)
        self.folders: dict[str, Folder] = {}
        self._toolbox: Toolbox | None = None
        self.turns_by_request: dict[Any, Folder] = {}
        self.turns_by_token: dict[Any, Folder] = {}
        self.told_choice: set[str] = set()
        self.reported_problems: dict[str, list[str]] = {}
        self.client_name = "editor"
        self.initialization_options: Any = None
        # Settings are pulled before each command unless the client tells us when they change:
        # then a folder's settings are kept until the next workspace/didChangeConfiguration.
        self.settings_pushed = False
        self.fresh_settings: set[str] = set()
        self.preparing: asyncio.Task[None] | None = None

    @property
    def toolbox(self) -> Toolbox:
        if self._toolbox is None:
            from ..agent.toolbox import Toolbox

            self._toolbox = Toolbox()
        return self._toolbox

    # -- what the client negotiated -------------------------------------------
    @property
    def _capabilities(self) -> lsp.ClientCapabilities:
        return self.client_capabilities or lsp.ClientCapabilities()

    @property
    def can_apply_edits(self) -> bool:
        workspace = self._capabilities.workspace
        return bool(workspace and workspace.apply_edit)

    @property
    def supports_annotations(self) -> bool:
        workspace = self._capabilities.workspace
        edit = workspace.workspace_edit if workspace else None
        return bool(edit and edit.change_annotation_support is not None)

    @property
    def position_encoding(self) -> str:
        return str(self.workspace.position_encoding or "utf-16")

    # -- folders ---------------------------------------------------------------
    def folder_for(self, uri: str | None) -> Folder:
        """The folder whose root contains ``uri``; the first folder without one."""
        self._sync_folders()
        if uri:
            path = uri_path(uri)
            matches = [f for f in self.folders.values() if path == f.root or f.root in path.parents]
            if matches:
                return max(matches, key=lambda f: len(f.root.parts))
            raise JsonRpcInvalidParams(f"uri: {uri} is not inside a workspace folder")
        return next(iter(self.folders.values()))

    def _sync_folders(self) -> None:
        from .folders import Folder

        uris = list(self.workspace.folders) or [self.workspace.root_uri or Path.cwd().as_uri()]
        for uri in uris:
            if uri not in self.folders:
                workspace = EditorWorkspace(self, uri_path(uri))
                folder = Folder(workspace.root, uri, workspace)
                workspace.folder = folder
                self.folders[uri] = folder
        for uri in set(self.folders) - set(uris):
            self.folders.pop(uri).cancel()

    async def refresh_settings(self, folder: Folder) -> None:
        workspace = self._capabilities.workspace
        pulled = bool(workspace and workspace.configuration)
        if folder.uri in self.fresh_settings and (self.settings_pushed or not pulled):
            return  # the client reports changes, or the settings are initializationOptions, which never change
        from .settings import parse_settings

        if pulled:
            answer = await self.workspace_configuration_async(
                lsp.ConfigurationParams(items=[lsp.ConfigurationItem(scope_uri=folder.uri, section="elelem")])
            )
            raw = answer[0] if answer else None
        else:
            raw = self.initialization_options
        settings, problems = parse_settings(raw)
        if problems and problems != self.reported_problems.get(folder.uri):
            self.window_show_message(
                lsp.ShowMessageParams(type=lsp.MessageType.Warning, message="elelem: " + "; ".join(problems))
            )
        self.reported_problems[folder.uri] = problems
        folder.apply_settings(settings)
        self.fresh_settings.add(folder.uri)

    def settings_changed(self) -> None:
        """The client said settings changed: pull them again before the next command."""
        self.settings_pushed = True
        self.fresh_settings.clear()

    async def _register_for_settings(self) -> None:
        """Ask the client to tell us when the ``elelem`` settings change, where it can."""
        workspace = self._capabilities.workspace
        change = workspace.did_change_configuration if workspace else None
        if not (change and change.dynamic_registration and workspace and workspace.configuration):
            return
        registration = lsp.Registration(
            id=f"elelem-settings-{uuid.uuid4()}",
            method=lsp.WORKSPACE_DID_CHANGE_CONFIGURATION,
            register_options=lsp.DidChangeConfigurationRegistrationOptions(section="elelem"),
        )
        try:
            await self.client_register_capability_async(lsp.RegistrationParams(registrations=[registration]))
        except JsonRpcException:
            return  # the client cannot register: settings are pulled before every command
        self.settings_pushed = True

    async def prepare_first_turn(self) -> None:
        """After initialize: import the agent and ready each folder's provider, off the event loop,
        so the first turn costs what a warm one does."""
        try:
            await self._register_for_settings()
            await asyncio.to_thread(importlib.import_module, f"{__package__}.commands")
            self._sync_folders()
            for folder in list(self.folders.values()):
                await self.refresh_settings(folder)
                await folder.prepare()
        except Exception:  # whatever failed here fails again, and is reported, in the turn
            log.info("preparing the first turn failed", exc_info=True)

    def tell_choice(self, folder: Folder, choice: Choice) -> None:
        """Say once per folder which provider the environment picked, and how to change it."""
        if choice.source != "environment" or folder.uri in self.told_choice:
            return
        self.told_choice.add(folder.uri)
        self.window_show_message(
            lsp.ShowMessageParams(
                type=lsp.MessageType.Info,
                message=f"elelem: using provider {choice.name!r} for {folder.root.name} (picked from the environment); "
                "set elelem.provider or run elelem.selectProvider to change it",
            )
        )

    def describe_location(self, folder: Folder, uri: str, range_: Any, context_lines: int = 0) -> str:
        """The file and the selected lines, for a prompt about a place in the code."""
        path = uri_path(uri)
        if path.is_dir():
            return ""
        document = self.workspace.get_text_document(uri)
        name = folder.workspace.relative(path) if folder.root in path.parents else str(path)
        try:
            lines = document.lines
        except OSError:
            return f"File: {name} (not readable)"
        if range_ is None:
            return f"File: {name}"
        start = document.position_codec.position_from_client_units(
            lines, lsp.Position(line=range_.start.line, character=range_.start.character)
        )
        end = document.position_codec.position_from_client_units(
            lines, lsp.Position(line=range_.end.line, character=range_.end.character)
        )
        first, last = max(0, start.line - context_lines), min(len(lines), end.line + 1 + context_lines)
        selected = "".join(lines[first:last])
        where = f"lines {first + 1}-{last}" if last > first + 1 else f"line {first + 1}"
        return f"File: {name} ({where})\n```\n{selected.rstrip()}\n```"

    # -- progress and cancellation ---------------------------------------------
    async def open_progress(self, token: Any) -> Progress:
        if token is None:
            window = self._capabilities.window
            if not (window and window.work_done_progress):
                return Progress(None, self._log_progress)
            token = f"elelem-{uuid.uuid4()}"
            await self.work_done_progress.create_async(token)

        def send(value: dict[str, Any]) -> None:
            self.protocol.notify(lsp.PROGRESS, lsp.ProgressParams(token=token, value=value))

        def close() -> None:
            self.work_done_progress.tokens.pop(token, None)

        self.work_done_progress.tokens.setdefault(token, _NoFuture())
        return Progress(token, send, close)

    def _log_progress(self, value: dict[str, Any]) -> None:
        if value["kind"] != "report":
            self.window_log_message(lsp.LogMessageParams(type=lsp.MessageType.Info, message=f"elelem: {value['message']}"))

    def track_turn(self, folder: Folder, token: Any) -> None:
        self.turns_by_request[self.protocol.msg_id] = folder
        if token is not None:
            self.turns_by_token[token] = folder

    def untrack_turn(self, folder: Folder, token: Any) -> None:
        for table in (self.turns_by_request, self.turns_by_token):
            for key in [k for k, f in table.items() if f is folder]:
                del table[key]

    def cancel_request(self, msg_id: Any) -> None:
        folder = self.turns_by_request.get(msg_id)
        if folder is not None:
            folder.cancel()

    def cancel_progress(self, token: Any) -> None:
        folder = self.turns_by_token.get(token)
        if folder is not None:
            folder.cancel()


class _NoFuture:
    """pygls cancels the future it keeps per token; we cancel the turn ourselves."""

    def cancel(self) -> bool:
        return True


def uri_path(uri: str) -> Path:
    path = to_fs_path(uri) or unquote(urlparse(uri).path)
    return Path(path).resolve()


class AnsweredErrors(logging.Filter):
    """pygls logs a traceback for every error it answers with; a bad argument or a refused
    request is an answer the client shows, not a fault of the server."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not isinstance(error, JsonRpcException)


def create_server() -> ElelemServer:
    logging.getLogger("pygls.protocol.json_rpc").addFilter(AnsweredErrors())
    server = ElelemServer()

    for name in COMMAND_NAMES:
        server.command(name)(_command(name))

    @server.feature(lsp.INITIALIZE)
    def initialize(ls: ElelemServer, params: lsp.InitializeParams) -> None:
        if params.client_info:
            ls.client_name = f"{params.client_info.name} {params.client_info.version or ''}".strip()
        ls.initialization_options = params.initialization_options

    @server.feature(lsp.INITIALIZED)
    def initialized(ls: ElelemServer, params: lsp.InitializedParams) -> None:
        ls.preparing = asyncio.ensure_future(ls.prepare_first_turn())

    # Registering the document handlers makes pygls advertise open/close sync and
    # keep the editor's unsaved text, which ``read`` and the edits rely on.
    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: ElelemServer, params: lsp.DidOpenTextDocumentParams) -> None:
        pass

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: ElelemServer, params: lsp.DidCloseTextDocumentParams) -> None:
        pass

    @server.feature(lsp.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    def folders_changed(ls: ElelemServer, params: lsp.DidChangeWorkspaceFoldersParams) -> None:
        ls._sync_folders()

    @server.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def configuration_changed(ls: ElelemServer, params: lsp.DidChangeConfigurationParams) -> None:
        ls.settings_changed()
        for folder in list(ls.folders.values()):
            await ls.refresh_settings(folder)

    @server.feature(lsp.WINDOW_WORK_DONE_PROGRESS_CANCEL)
    def progress_cancelled(ls: ElelemServer, params: lsp.WorkDoneProgressCancelParams) -> None:
        ls.cancel_progress(params.token)

    @server.feature(
        lsp.TEXT_DOCUMENT_CODE_ACTION,
        lsp.CodeActionOptions(code_action_kinds=[lsp.CodeActionKind.QuickFix, lsp.CodeActionKind.Refactor]),
    )
    def code_action(ls: ElelemServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
        return actions.code_actions(params)

    return server


def _command(name: str):
    async def run(ls: ElelemServer, *arguments: Any) -> Any:
        from . import commands  # imported after initialize by prepare_first_turn; here if a command came first

        model, handler = commands.COMMANDS[name]
        return await handler(ls, commands.parse(model, arguments))

    return run
