"""EditorWorkspace: the Workspace port answered by the editor over LSP.

Reads see unsaved buffers; writes become ``workspace/applyEdit`` (the smallest
range, or the span an ``edit`` already knows, in the buffer's own line endings, with
the open document's version and positions in the negotiated encoding);
commands need the person's permission through ``window/showMessageRequest``;
the human provider asks through ``elelem/input``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException, JsonRpcMethodNotFound

from ..agent.command_allowlist import allows
from ..agent.search import SKIPPED
from ..agent.textfile import ModelView, for_model
from ..agent.workspace import (
    Change,
    Workspace,
    WorkspaceError,
    new_file_text,
    read_stored_for_writing,
    refuse_hard_links,
)
from ..textedits import Change as TextChange
from ..textedits import Position, change_at

if TYPE_CHECKING:
    from .folders import Folder
    from .server import ElelemServer

log = logging.getLogger(__name__)

ALLOW_ONCE, ALLOW_SESSION, DENY = "Allow once", "Allow for this session", "Deny"
STALE = "the file changed in the editor"


class EditorWorkspace(Workspace):
    def __init__(self, server: "ElelemServer", root: Path) -> None:
        super().__init__(root, client=server.client_name)
        self.server = server
        self.folder: "Folder | None" = None
        self.allowed_for_session: set[str] = set()

    # -- files -----------------------------------------------------------------
    def open_document(self, path: Path) -> Any | None:
        for document in self.server.workspace.text_documents.values():
            if document.path and Path(document.path).resolve() == path:
                return document
        return None

    async def read_text(self, path: Path) -> str:
        document = self.open_document(path)
        if document is not None:
            return for_model(document.source)
        return await super().read_text(path)

    def unsaved_buffers(self, top: Path) -> dict[Path, str]:
        buffers: dict[Path, str] = {}
        for document in self.server.workspace.text_documents.values():
            if not document.path:
                continue
            path = Path(document.path).resolve()  # a buffer reached through a link out stays out
            if (path != top and top not in path.parents) or self.root not in path.parents:
                continue
            if set(SKIPPED).intersection(path.relative_to(self.root).parts):
                continue
            try:
                on_disk: str | None = path.read_bytes().decode("utf-8")
            except (OSError, UnicodeDecodeError):
                on_disk = None
            if document.source != on_disk:
                buffers[path] = document.source
        return buffers

    async def update(self, path: Path, change: Change, *, tool: str) -> None:
        if not self.server.can_apply_edits:
            await super().update(path, change, tool=tool)
            return
        name = self.relative(path)
        for _ in range(2):  # the second try only after the person typed
            document = self.open_document(path)
            if document is not None:
                # A buffer is saved through the same hard link, so an open document is refused too.
                refuse_hard_links(path, name)
                current: str | None = document.source
                version = document.version
            else:
                stored = read_stored_for_writing(path, name)
                current = stored.text if stored is not None else None
                version = None
            edit = self._edit_of(current, change)
            if edit is None:
                return
            applied, reason = await self._apply(path, document, edit, current is None, version, tool)
            if applied:
                return
            now = self.open_document(path)
            if now is None or now.version == version:
                detail = f": {reason}" if reason else ""
                raise WorkspaceError(f"the editor refused the edit to {name}{detail}")
            # the person typed since: the same change is applied to the new text, once
        raise WorkspaceError(f"{STALE}: {name} was not changed")

    def _edit_of(self, current: str | None, change: Change) -> TextChange | None:
        """The one text edit that makes ``change`` to the editor's text (None: nothing changes).

        A change that knows its span is sent as that span; only a whole new text is diffed.
        """
        encoding = self.server.position_encoding
        if current is None:
            # A new file's text replaces the whole (empty) document: ending the range a line
            # further keeps Neovim from adding its empty buffer's own end of line.
            return TextChange(Position(0, 0), Position(1, 0), new_file_text(change))
        view = ModelView.of(current)
        carried = view.carry(change(view.text))
        # Lines and columns of the model's text are the buffer's: positions are found on
        # the text with "\n" breaks alone.
        return None if carried is None else change_at(view.text, carried, encoding)

    async def _apply(
        self, path: Path, document: Any | None, edit: TextChange, create: bool, version: int | None, tool: str
    ) -> tuple[bool, str | None]:
        uri = document.uri if document is not None else path.as_uri()
        label = f"elelem: {tool} {self.relative(path)}"
        annotation = "elelem" if self.server.supports_annotations else None
        changes: list[Any] = [lsp.CreateFile(uri=uri, annotation_id=annotation)] if create else []
        if not (create and not edit.text):  # an empty new file needs no text edit
            changes.append(_document_edit(uri, version, edit, annotation))
        workspace_edit = lsp.WorkspaceEdit(
            document_changes=changes,
            change_annotations={
                annotation: lsp.ChangeAnnotation(
                    label=label, needs_confirmation=self._settings().confirm_edits, description=f"the agent's {tool}"
                )
            }
            if annotation
            else None,
        )
        result = await self.server.workspace_apply_edit_async(
            lsp.ApplyWorkspaceEditParams(edit=workspace_edit, label=label)
        )
        return bool(result and result.applied), (result.failure_reason if result else None)

    def _settings(self):
        from .settings import Settings

        return self.folder.settings if self.folder else Settings()

    # -- processes -------------------------------------------------------------
    async def allow_command(self, command: str) -> tuple[bool, str]:
        settings = self._settings()
        if settings.execute == "allow" or allows(settings.allow_commands, command):
            return True, ""
        if settings.execute == "deny":
            return False, "denied by the elelem.execute setting (and not allowed by elelem.allowCommands)"
        if command in self.allowed_for_session:
            return True, ""
        try:
            answer = await self.server.window_show_message_request_async(
                lsp.ShowMessageRequestParams(
                    type=lsp.MessageType.Warning,
                    message=f"elelem wants to run: {command}",
                    actions=[lsp.MessageActionItem(title=t) for t in (ALLOW_ONCE, ALLOW_SESSION, DENY)],
                )
            )
        except JsonRpcException as error:
            return False, f"the editor could not ask for permission: {error}"
        title = answer.title if answer else None
        if title == ALLOW_SESSION:
            self.allowed_for_session.add(command)
        if title in (ALLOW_ONCE, ALLOW_SESSION):
            return True, ""
        return False, "the person denied it" if title == DENY else "the prompt was dismissed"

    # -- people ----------------------------------------------------------------
    async def ask_user(self, prompt: str) -> str:
        try:
            answer = await self.server.protocol.send_request_async("elelem/input", {"prompt": prompt})
        except JsonRpcMethodNotFound:
            raise WorkspaceError("this editor does not answer elelem/input, so the human provider cannot be used here") from None
        except JsonRpcException as error:
            raise WorkspaceError(f"the editor could not ask for input: {error}") from None
        text = answer.get("text") if isinstance(answer, dict) else getattr(answer, "text", None)
        if text is None:
            raise WorkspaceError("the input was dismissed")
        return str(text)


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
