"""LspFrontend: the host's ports, answered over LSP by the editor.

Settings come from ``workspace/configuration`` (or ``initializationOptions``), messages
go out as ``window/showMessage``, a turn's events as coalesced ``$/progress`` (or the log),
permission is asked with ``window/showMessageRequest``, text input with ``elelem/input``;
open buffers are pygls' text documents, and an edit becomes one ``workspace/applyEdit``
(a ``TextDocumentEdit`` with the open document's version, positions in the negotiated
encoding, a change annotation naming the tool). It also holds what the client negotiated.
Requests go the other way, to the host, through ``router``.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException, JsonRpcMethodNotFound
from pygls.lsp.server import LanguageServer

from ..agent.textfile import Replacement
from ..host.frontend import FileEdit, Frontend, Level, OpenDocument, ProgressSink, RestoredFile, Unanswered
from ..our_clients import OUR_CLIENT_PREFIX, TERMINAL_CLIENT
from ..textedits import Change as TextChange
from ..textedits import Position, change_at
from .insight import LspInsight
from .progress import ProgressStream

log = logging.getLogger(__name__)
LEVELS = {"info": lsp.MessageType.Info, "warning": lsp.MessageType.Warning, "error": lsp.MessageType.Error}


def announced_client(initialization_options: Any) -> str | None:
    """The name one of our clients announced, or None for a plain client."""
    if not isinstance(initialization_options, dict):
        return None
    name = initialization_options.get("client")
    return name if isinstance(name, str) and name.startswith(OUR_CLIENT_PREFIX) else None


class LspFrontend(Frontend):
    def __init__(self, server: LanguageServer) -> None:
        self.server = server
        self.client_name = "editor"
        self.initialization_options: Any = None
        # Settings are pulled before each command unless the client tells us when they change:
        # then a folder's settings are kept until the next workspace/didChangeConfiguration.
        self.settings_pushed = False
        self.showing: set[asyncio.Task[Any]] = set()
        self._insight = LspInsight(server)

    # -- what the client negotiated -------------------------------------------
    @property
    def _capabilities(self) -> lsp.ClientCapabilities:
        return self.server.client_capabilities or lsp.ClientCapabilities()

    @property
    def name(self) -> str:
        return self.client_name

    @property
    def plain(self) -> bool:
        return announced_client(self.initialization_options) is None

    @property
    def provider_hint(self) -> str:
        if announced_client(self.initialization_options) == TERMINAL_CLIENT:
            return "choose one with -p NAME (elelem-lsp providers lists them)"
        return "set elelem.provider or run elelem.selectProvider to change it"

    @property
    def cancel_hint(self) -> str:
        return "cancel it (elelem.cancel)"

    @property
    def can_edit(self) -> bool:
        workspace = self._capabilities.workspace
        return bool(workspace and workspace.apply_edit)

    @property
    def _pulls_settings(self) -> bool:
        workspace = self._capabilities.workspace
        return bool(workspace and workspace.configuration)

    @property
    def keeps_settings(self) -> bool:
        # initializationOptions never change; pulled settings are kept when the client reports changes
        return self.settings_pushed or not self._pulls_settings

    @property
    def supports_annotations(self) -> bool:
        workspace = self._capabilities.workspace
        edit = workspace.workspace_edit if workspace else None
        return bool(edit and edit.change_annotation_support is not None)

    @property
    def position_encoding(self) -> str:
        return str(self.server.workspace.position_encoding or "utf-16")

    # -- settings --------------------------------------------------------------
    async def settings(self, folder_uri: str) -> Any:
        if not self._pulls_settings:
            return self.initialization_options
        try:
            answer = await self.server.workspace_configuration_async(
                lsp.ConfigurationParams(items=[lsp.ConfigurationItem(scope_uri=folder_uri, section="elelem")])
            )
        except JsonRpcException as error:
            log.warning("no settings from the editor (%s): the defaults are used", error.message)
            return None
        return answer[0] if answer else None

    async def register_for_settings(self) -> None:
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
            await self.server.client_register_capability_async(lsp.RegistrationParams(registrations=[registration]))
        except JsonRpcException:
            return  # the client cannot register: settings are pulled before every command
        self.settings_pushed = True

    # -- the person ------------------------------------------------------------
    def show_message(self, level: Level, text: str) -> None:
        self.server.window_show_message(lsp.ShowMessageParams(type=LEVELS[level], message=text))

    @property
    def can_show_files(self) -> bool:
        window = self._capabilities.window
        return bool(window and window.show_document and window.show_document.support)

    def show_file(self, path: Path) -> None:
        # Not awaited: the command's result must not wait for the editor to open a file.
        task = asyncio.ensure_future(
            self.server.window_show_document_async(lsp.ShowDocumentParams(uri=path.as_uri(), take_focus=False))
        )
        self.showing.add(task)
        task.add_done_callback(self._shown)

    def _shown(self, task: asyncio.Future[Any]) -> None:
        self.showing.discard(task)
        if not task.cancelled() and isinstance(task.exception(), JsonRpcException):
            log.warning("the transcript was not shown: %s", task.exception())

    async def open_progress(self, token: Any, title: str, message: str) -> ProgressSink:
        if token is None:
            window = self._capabilities.window
            if window and window.work_done_progress:
                token = f"elelem-{uuid.uuid4()}"
                try:
                    await self.server.work_done_progress.create_async(token)
                except JsonRpcException as error:  # no token: the turn is told as to a client without progress
                    log.warning("no progress token from the editor: %s", error.message)
                    token = None
        sink = _LoggedProgress(self.server) if token is None else _WorkDoneProgress(self.server, token)
        sink.stream.begin(title, message)
        return sink

    async def ask_permission(self, question: str, options: list[str]) -> str | None:
        try:
            answer = await self.server.window_show_message_request_async(
                lsp.ShowMessageRequestParams(
                    type=lsp.MessageType.Warning,
                    message=question,
                    actions=[lsp.MessageActionItem(title=t) for t in options],
                )
            )
        except JsonRpcException as error:
            raise Unanswered(f"the editor could not ask for permission: {error}") from None
        return answer.title if answer else None

    async def ask_text(self, prompt: str) -> str:
        try:
            answer = await self.server.protocol.send_request_async("elelem/input", {"prompt": prompt})
        except JsonRpcMethodNotFound:
            raise Unanswered("this editor does not answer elelem/input, so the human provider cannot be used here") from None
        except JsonRpcException as error:
            raise Unanswered(f"the editor could not ask for input: {error}") from None
        text = answer.get("text") if isinstance(answer, dict) else getattr(answer, "text", None)
        if text is None:
            raise Unanswered("the input was dismissed")
        return str(text)

    @property
    def insight(self) -> LspInsight:
        return self._insight

    # -- documents and edits -----------------------------------------------------
    def open_documents(self) -> list[OpenDocument]:
        return [
            OpenDocument(Path(d.path).resolve(), d.uri, d.version, d.source)
            for d in self.server.workspace.text_documents.values()
            if d.path
        ]

    def open_document(self, path: Path) -> OpenDocument | None:
        for document in self.server.workspace.text_documents.values():
            if document.path and Path(document.path).resolve() == path:
                return OpenDocument(path, document.uri, document.version, document.source)
        return None

    async def apply_edit(self, edit: FileEdit) -> tuple[bool, str | None]:
        document, create = edit.document, edit.before is None
        uri = document.uri if document is not None else edit.path.as_uri()
        annotation = "elelem" if self.supports_annotations else None
        changes: list[Any] = [lsp.CreateFile(uri=uri, annotation_id=annotation)] if create else []
        if not (create and not edit.replacement.text):  # an empty new file needs no text edit
            version = document.version if document is not None else None
            changes.append(_document_edit(uri, version, self._text_change(edit), annotation))
        workspace_edit = lsp.WorkspaceEdit(
            document_changes=changes,
            change_annotations={
                annotation: lsp.ChangeAnnotation(
                    label=edit.label, needs_confirmation=edit.confirm, description=f"the agent's {edit.tool}"
                )
            }
            if annotation
            else None,
        )
        try:
            result = await self.server.workspace_apply_edit_async(
                lsp.ApplyWorkspaceEditParams(edit=workspace_edit, label=edit.label)
            )
        except JsonRpcException as error:  # an edit the editor did not confirm is refused
            return False, error.message
        return bool(result and result.applied), (result.failure_reason if result else None)

    async def restore_files(self, files: list[RestoredFile], label: str) -> tuple[bool, str | None] | None:
        """A rewind as one ``WorkspaceEdit`` (whole-text edits, creates, deletes), when the client
        can create and delete files; the editor's undo takes it back."""
        workspace = self._capabilities.workspace
        operations = (workspace.workspace_edit.resource_operations if workspace and workspace.workspace_edit else None) or []
        if not self.can_edit or not {lsp.ResourceOperationKind.Create, lsp.ResourceOperationKind.Delete} <= set(operations):
            return None
        changes: list[Any] = []
        for file in files:
            uri = file.path.as_uri()
            if file.text is None:
                changes.append(lsp.DeleteFile(uri=uri, options=lsp.DeleteFileOptions(ignore_if_not_exists=True)))
                continue
            document = self.open_document(file.path)
            current = document.text if document is not None else _disk_text(file.path)
            if current is None:
                changes.append(lsp.CreateFile(uri=uri, options=lsp.CreateFileOptions(overwrite=True)))
                whole = TextChange(Position(0, 0), Position(1, 0), file.text)
            else:
                whole = change_at(current, Replacement(0, len(current), file.text), self.position_encoding)
            changes.append(_document_edit(uri, document.version if document else None, whole, None))
        try:
            result = await self.server.workspace_apply_edit_async(
                lsp.ApplyWorkspaceEditParams(edit=lsp.WorkspaceEdit(document_changes=changes), label=label)
            )
        except JsonRpcException as error:  # a rewind the editor did not confirm is refused
            return False, error.message
        return bool(result and result.applied), (result.failure_reason if result else None)

    def _text_change(self, edit: FileEdit) -> TextChange:
        if edit.before is None:
            # A new file's text replaces the whole (empty) document: ending the range a line
            # further keeps Neovim from adding its empty buffer's own end of line.
            return TextChange(Position(0, 0), Position(1, 0), edit.replacement.text)
        # Lines and columns of the model's text are the buffer's: positions are found on
        # the text with "\n" breaks alone.
        return change_at(edit.before, edit.replacement, self.position_encoding)


def _disk_text(path: Path) -> str | None:
    """A closed file's text as the editor will load it, or None when there is no file."""
    try:
        return path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return None


class _WorkDoneProgress(ProgressSink):
    """A turn's events as ``$/progress`` on one token."""

    def __init__(self, server: LanguageServer, token: Any) -> None:
        self.server, self.token = server, token
        self.stream = ProgressStream(self._send)
        # pygls cancels the future it keeps per token (as its own begin() makes one); the router stops the turn.
        server.work_done_progress.tokens.setdefault(token, Future())

    def _send(self, value: dict[str, Any]) -> None:
        self.server.protocol.notify(lsp.PROGRESS, lsp.ProgressParams(token=self.token, value=value))

    def add(self, event: dict[str, Any]) -> None:
        self.stream.add(event)

    def end(self, message: str) -> None:
        self.stream.end(message)
        self.server.work_done_progress.tokens.pop(self.token, None)


class _LoggedProgress(ProgressSink):
    """For a client without work-done progress: the turn's begin and end in the log."""

    def __init__(self, server: LanguageServer) -> None:
        self.server = server
        self.stream = ProgressStream(self._send)

    def _send(self, value: dict[str, Any]) -> None:
        if value["kind"] != "report":
            self.server.window_log_message(lsp.LogMessageParams(type=lsp.MessageType.Info, message=f"elelem: {value['message']}"))

    def add(self, event: dict[str, Any]) -> None:
        self.stream.add(event)

    def end(self, message: str) -> None:
        self.stream.end(message)


def _document_edit(uri: str, version: int | None, edit: TextChange, annotation: str | None) -> lsp.TextDocumentEdit:
    range_ = lsp.Range(
        start=lsp.Position(line=edit.start.line, character=edit.start.character),
        end=lsp.Position(line=edit.end.line, character=edit.end.character),
    )
    text_edit: Any = (
        lsp.AnnotatedTextEdit(range=range_, new_text=edit.text, annotation_id=annotation)
        if annotation
        else lsp.TextEdit(range=range_, new_text=edit.text)
    )
    return lsp.TextDocumentEdit(
        text_document=lsp.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version), edits=[text_edit]
    )
