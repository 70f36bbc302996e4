"""The language server: pygls wiring of the commands, code actions, settings and cancellation.

Each feature delegates to a plain module (commands, actions, folders, stream,
framing); this file only connects them to LSP and holds what the client
negotiated. Every message from the editor passes ``ElelemProtocol.receive``
first: what is not JSON, not JSON-RPC, too early (before ``initialize``), too
late (after ``shutdown``) or has params that do not fit the method is answered
with the JSON-RPC error that says so, without a traceback.

Start-up imports only pygls and this face: the agent (pydantic models, tools, providers) is
imported after ``initialize`` has been answered, on a worker thread, together with everything
the first turn's provider needs, so neither start-up nor the first turn pays for it.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import logging
import re
import sys
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable
from urllib.parse import unquote, urlparse

import cattrs
from lsprotocol import types as lsp
from pygls.exceptions import (
    JsonRpcException,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
    JsonRpcParseError,
    JsonRpcServerNotInitialized,
)
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.uris import to_fs_path

from .. import __version__
from . import actions, framing
from .editor import EditorWorkspace

if TYPE_CHECKING:
    from ..agent.toolbox import Toolbox
    from .folders import Choice, Folder
    from .plain_clients import TurnRecord

log = logging.getLogger(__name__)
TERMINAL_CLIENT = "elelem-terminal"  # what `elelem-lsp ask|chat|providers` announce in initializationOptions

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
    """pygls' protocol, with messages checked before they are handled and cancellation that
    really stops a turn."""

    initialized = False  # an initialize request has been received

    def receive(self, body: bytes) -> None:
        """One frame's body from the editor: handled, or answered with the error it deserves."""
        try:
            data = json.loads(body)
        except RecursionError:
            return self._refuse(None, JsonRpcParseError("Parse error: the message is nested too deeply"))
        except ValueError as error:  # not UTF-8, or not JSON
            return self._refuse(None, JsonRpcParseError(f"Parse error: {error}"))
        if not isinstance(data, dict):
            return self._refuse(None, JsonRpcInvalidRequest("Invalid request: a message must be a JSON object"))
        msg_id, method = data.get("id"), data.get("method")
        if "id" in data and (isinstance(msg_id, bool) or not isinstance(msg_id, (str, int))):
            return self._refuse(None, JsonRpcInvalidRequest("Invalid request: id must be a string or an integer"))
        if data.get("jsonrpc") != self.VERSION or ("method" in data and not isinstance(method, str)):
            return self._refuse(msg_id, JsonRpcInvalidRequest('Invalid request: not JSON-RPC 2.0 ("jsonrpc": "2.0" and a string method)'))
        refusal = self._out_of_order(method, is_request="id" in data and "method" in data)
        if refusal is not None:
            return self._refuse(msg_id, refusal) if "id" in data else None
        params = data.get("params")
        if method == lsp.WORKSPACE_EXECUTE_COMMAND and isinstance(params, dict) and not isinstance(params.get("arguments", []), list):
            # cattrs would make a string into a list of its characters
            return self._refuse(msg_id, JsonRpcInvalidParams("Invalid params: params.arguments: must be an array"))
        try:
            message = self.structure_message(data)
        except JsonRpcInvalidParams as error:
            return self._refuse(msg_id if "method" in data else None, JsonRpcInvalidParams(invalid_params(error)))
        except JsonRpcException as error:
            return self._refuse(msg_id if "method" in data else None, JsonRpcInvalidRequest(f"Invalid request: {error.message}"))
        if method == lsp.INITIALIZE:
            self.initialized = True
        self.handle_message(message)

    def _out_of_order(self, method: str | None, *, is_request: bool) -> JsonRpcException | None:
        """The error for a message the protocol's state does not allow now (a notification gets none)."""
        if method is None or method == lsp.EXIT:
            return None
        if not self.initialized and method != lsp.INITIALIZE:
            return JsonRpcServerNotInitialized(f"the server is not initialized: send initialize before {method}")
        if self.initialized and method == lsp.INITIALIZE:
            return JsonRpcInvalidRequest("Invalid request: the server is already initialized")
        if self._shutdown:
            return JsonRpcInvalidRequest(f"Invalid request: the server is shutting down; {method} was not run")
        return None

    def _refuse(self, msg_id: Any, error: JsonRpcException) -> None:
        log.warning("refused a message from the editor: %s", error.message)
        self._send_response(msg_id, error=error.to_response_error())

    def _send_response(self, msg_id: Any, result: Any = None, error: Any = None) -> None:
        if error is not None and isinstance(error.data, dict) and "traceback" in error.data:
            error.data = None  # how the server failed is its log's business, not the editor's
        super()._send_response(msg_id, result, error)

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
        self.showing: set[asyncio.Task[Any]] = set()

    @property
    def our_client(self) -> str | None:
        """"elelem-terminal", "elelem-vscode", ...: the client of ours that announced itself, if one did."""
        from .plain_clients import announced_client

        return announced_client(self.initialization_options)

    @property
    def toolbox(self) -> Toolbox:
        if self._toolbox is None:
            from ..agent.toolbox import Toolbox

            self._toolbox = Toolbox()
        return self._toolbox

    # -- the connection: our framing, not pygls' reader ------------------------
    def start_io(self, stdin: Any = None, stdout: Any = None) -> None:
        """Serve over stdin/stdout until the editor exits or closes the stream."""
        source = stdin or sys.stdin.buffer
        self._stop_event = threading.Event()
        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))

        async def read() -> bytes:
            return await asyncio.get_running_loop().run_in_executor(self.thread_pool, source.read1, framing.CHUNK)

        self._run(framing.serve(read, self.protocol.receive, self._stop_event.is_set))

    def start_tcp(self, host: str, port: int) -> None:
        """Serve one editor connection at a time on ``host:port``."""
        self._stop_event = stop = threading.Event()

        async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.protocol.set_writer(writer)  # type: ignore[arg-type]
            await framing.serve(lambda: reader.read(framing.CHUNK), self.protocol.receive, stop.is_set)
            self.shutdown()

        async def listen() -> None:
            self._server = await asyncio.start_server(connection, host, port)
            async with self._server:
                await self._server.serve_forever()

        self._run(listen())

    def _run(self, main: Any) -> None:
        try:
            asyncio.run(main)
        except framing.StreamLost as lost:
            print(f"elelem-lsp: {lost}; exiting so the editor can restart the server", file=sys.stderr)
            raise SystemExit(1) from None
        except BrokenPipeError:
            log.error("the editor closed the connection")
        except (KeyboardInterrupt, SystemExit, asyncio.CancelledError):
            pass  # exit: pygls ends the loop with SystemExit
        finally:
            self.shutdown()

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
        """The folder whose root contains ``uri``; the first folder for none, or for a document
        that is not a file (``untitled:`` and other schemes)."""
        self._sync_folders()
        path = document_path(uri) if uri is not None else None
        if path is not None:
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
                workspace = EditorWorkspace(self, folder_path(uri))
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
        from .settings import parse_settings, within_trust

        if pulled:
            answer = await self.workspace_configuration_async(
                lsp.ConfigurationParams(items=[lsp.ConfigurationItem(scope_uri=folder.uri, section="elelem")])
            )
            raw = answer[0] if answer else None
        else:
            raw = self.initialization_options
        settings, problems = parse_settings(raw)
        settings, ignored = within_trust(settings)
        if ignored:
            problems.append(f"{folder.root.name} is not trusted, so these settings are ignored: {', '.join(ignored)}")
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
        what = " (a demo that needs no model)" if choice.name == "stub" else ""
        change = (
            "choose one with -p NAME (elelem-lsp providers lists them)"
            if self.our_client == TERMINAL_CLIENT
            else "set elelem.provider or run elelem.selectProvider to change it"
        )
        self.window_show_message(
            lsp.ShowMessageParams(
                type=lsp.MessageType.Info,
                message=f"elelem: using provider {choice.name!r}{what} for {folder.root.name} "
                f"(picked from the environment); {change}",
            )
        )

    def record_turn(self, prompt: str) -> TurnRecord | None:
        """A record of the turn for a plain client, which sees neither progress nor results; None for ours."""
        from .plain_clients import TurnRecord

        return None if self.our_client else TurnRecord(prompt)

    def show_turn(self, folder: Folder, record: TurnRecord, result: dict[str, Any]) -> None:
        """For a plain client: the start of the reply as a message, the whole turn as a document."""
        from .plain_clients import preview, write_transcript

        reply = result["reply"] or ("cancelled" if result["cancelled"] else "(no reply)")
        kind = lsp.MessageType.Error if result["error"] else lsp.MessageType.Info
        self.window_show_message(lsp.ShowMessageParams(type=kind, message=f"elelem: {preview(reply)}"))
        window = self._capabilities.window
        if not (window and window.show_document and window.show_document.support):
            return
        try:
            path = write_transcript(folder.root.name, record.markdown(folder.root.name, result))
        except OSError as error:
            log.warning("could not write the transcript: %s", error)
            return
        # Not awaited: the command's result must not wait for the editor to open a file.
        task = asyncio.ensure_future(
            self.window_show_document_async(lsp.ShowDocumentParams(uri=path.as_uri(), take_focus=False))
        )
        self.showing.add(task)
        task.add_done_callback(self.showing.discard)

    def describe_location(self, folder: Folder, uri: str, range_: Any, context_lines: int = 0) -> str:
        """The file and the selected lines, for a prompt about a place in the code.

        A document that is not a file is described from the text the editor sent
        (if it sent any), under its URI; no path is made up for it.
        """
        path = document_path(uri)
        if path is None:
            label, name, document = "Buffer", uri, self.workspace.text_documents.get(unquote(uri))
            if document is None:
                return f"Buffer: {uri} (the editor has not sent its text)"
        elif path.is_dir():
            return ""
        else:
            name = folder.workspace.relative(path) if folder.root in path.parents else str(path)
            label, document = "File", self.workspace.get_text_document(uri)
        try:
            lines = document.lines
        except OSError:
            return f"{label}: {name} (not readable)"
        if range_ is None:
            return f"{label}: {name}"
        start = document.position_codec.position_from_client_units(
            lines, lsp.Position(line=range_.start.line, character=range_.start.character)
        )
        end = document.position_codec.position_from_client_units(
            lines, lsp.Position(line=range_.end.line, character=range_.end.character)
        )
        first, last = max(0, start.line - context_lines), min(len(lines), end.line + 1 + context_lines)
        from ..agent.textfile import for_model

        selected = for_model("".join(lines[first:last]))  # the model sees "\n" breaks, as read gives them
        where = f"lines {first + 1}-{last}" if last > first + 1 else f"line {first + 1}"
        return f"{label}: {name} ({where})\n```\n{selected.rstrip()}\n```"

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


def invalid_params(error: JsonRpcInvalidParams) -> str:
    """``Invalid params: <field>: <problem>`` from the cattrs error behind pygls' InvalidParams."""
    cause = error.__cause__
    if not isinstance(cause, cattrs.BaseValidationError):
        return "Invalid params"

    def problem(exc: BaseException, type_: Any) -> str:
        return str(exc) if isinstance(exc, (ValueError, TypeError)) else cattrs.v.format_exception(exc, type_)

    found = []
    for line in cattrs.transform_error(cause, format_exception=problem):
        text, _, path = line.rpartition(" @ ")
        found.append(f"{path.removeprefix('$.')}: {text}")
    return "Invalid params: " + "; ".join(found)


class _NoFuture:
    """pygls cancels the future it keeps per token; we cancel the turn ourselves."""

    def cancel(self) -> bool:
        return True


URI_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


def document_path(uri: str) -> Path | None:
    """The local path of a document's ``file:`` URI; None for any other scheme.

    Not a URI at all, a file on another host, or a path with a NUL is
    InvalidParams naming ``uri``.
    """
    if not URI_SCHEME.match(uri) or any(ord(c) < 0x20 for c in uri):
        raise JsonRpcInvalidParams(f"uri: not a URI: {uri[:120]!r}")
    if not uri.lower().startswith("file:"):
        return None
    try:
        host = urlparse(uri).netloc
    except ValueError:
        raise JsonRpcInvalidParams(f"uri: not a URI: {uri[:120]!r}") from None
    if host not in ("", "localhost"):
        raise JsonRpcInvalidParams(f"uri: {uri[:120]} is a file on another host")
    path = unquote(urlparse(uri).path) if host else to_fs_path(uri) or ""
    if not path or "\x00" in path:
        raise JsonRpcInvalidParams(f"uri: {uri[:120]!r} names no usable path")
    return Path(path).resolve()


def folder_path(uri: str) -> Path:
    """A workspace folder's root; a folder the editor names by another scheme is taken by its path."""
    path = to_fs_path(uri) or unquote(urlparse(uri).path)
    return Path(path).resolve()


class AnsweredErrors(logging.Filter):
    """pygls logs a traceback for every error it answers with; a bad argument or a refused
    request is an answer the client shows, not a fault of the server."""

    def filter(self, record: logging.LogRecord) -> bool:
        if str(record.msg).startswith("Unable to deserialize message"):
            return False  # ElelemProtocol.receive answers it, in one line
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
