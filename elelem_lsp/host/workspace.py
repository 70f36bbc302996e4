"""FrontendWorkspace: the agent's Workspace port, answered through a face's ports.

Reads see the editor's unsaved buffers; writes are proposed to the editor as one edit
each (the smallest span, or the span an ``edit`` already knows, in the buffer's own line
endings), retried once on the new text when the person typed meanwhile; a hard-linked
file is refused. Commands go through the permission policy and run in the sandbox the settings
ask for (told once when none works, refused when one is required); the human provider asks the
person through the front end. A front end that cannot edit leaves writes to the disk.
"""

from __future__ import annotations

import dataclasses
import weakref
from collections.abc import Awaitable, Callable
from pathlib import Path

from ..agent.insight import Insight
from ..agent.sandbox import SandboxPolicy, available
from ..agent.search import SKIPPED
from ..agent.textfile import ModelView, Replacement, for_model
from ..agent.workspace import (
    Change,
    ProcessResult,
    Workspace,
    WorkspaceError,
    new_file_text,
    read_stored_for_writing,
    refuse_hard_links,
    run_process,
)
from .frontend import CommandRun, Documents, Face, FileEdit, OpenDocument, Person, Progress, Unanswered
from .permission import allow_command, allow_guarded_change
from .settings import Settings

STALE = "the file changed in the editor"
# The front ends told that no sandbox works (once each), by id: a front end may be unhashable.
TOLD_NO_SANDBOX: weakref.WeakValueDictionary[int, Face] = weakref.WeakValueDictionary()


class FrontendWorkspace(Workspace):
    def __init__(
        self,
        root: Path,
        settings: Callable[[], Settings],
        *,
        documents: Documents,
        person: Person,
        progress: Progress,
        face: Face,
        client: str,
    ) -> None:
        super().__init__(root, client=client)
        self.documents, self.person, self.progress, self.face = documents, person, progress, face
        self.settings = settings  # the folder's current settings, read at each request
        self.allowed_for_session: set[str] = set()
        self.checkpoint_ready: Callable[[], Awaitable[None]] | None = None  # the running turn's (host/checkpoints.py)
        # path -> (the buffer's text before, the text after) of each edit of this turn the editor applied,
        # which a checkpoint counts before the editor reports the change (host/rewinding.py)
        self.edited: dict[Path, tuple[str | None, str]] = {}

    # -- files -----------------------------------------------------------------
    async def read_text(self, path: Path) -> str:
        document = await self.documents.read_document(path)
        if document is not None:
            return for_model(document.text)
        return await super().read_text(path)

    def unsaved_buffers(self, top: Path) -> dict[Path, str]:
        buffers: dict[Path, str] = {}
        for document in self.documents.open_documents():
            path = document.path  # resolved: a buffer reached through a link out stays out
            if (path != top and top not in path.parents) or self.root not in path.parents:
                continue
            if set(SKIPPED).intersection(path.relative_to(self.root).parts):
                continue
            try:
                on_disk: str | None = path.read_bytes().decode("utf-8")
            except (OSError, UnicodeDecodeError):
                on_disk = None
            if document.text != on_disk:
                buffers[path] = document.text
        return buffers

    async def ask_guarded_change(self, name: str) -> tuple[bool, str]:
        return await allow_guarded_change(name, self.allowed_for_session, self.person)

    async def update(self, path: Path, change: Change, *, tool: str) -> None:
        if not self.documents.can_edit:
            await super().update(path, change, tool=tool)
            return
        name = self.relative(path)
        for _ in range(2):  # the second try only after the person typed
            document = await self.documents.read_document(path)
            if document is not None:
                # A buffer is saved through the same hard link, so an open document is refused too.
                refuse_hard_links(path, name)
                current: str | None = document.text
            else:
                stored = read_stored_for_writing(path, name)
                current = stored.text if stored is not None else None
            edit = self._edit_of(path, document, current, change, tool)
            if edit is None:
                return
            applied, reason = await self.documents.apply_edit(edit)
            if applied:
                self.edited[path] = (current if document is not None else None, text_after(current, edit.replacement))
                return
            now = self.documents.open_document(path)
            if now is None or now.version == (document.version if document else None):
                detail = f": {reason}" if reason else ""
                raise WorkspaceError(f"the editor refused the edit to {name}{detail}")
            # the person typed since: the same change is applied to the new text, once
        raise WorkspaceError(f"{STALE}: {name} was not changed")

    def _edit_of(
        self, path: Path, document: OpenDocument | None, current: str | None, change: Change, tool: str
    ) -> FileEdit | None:
        """The one edit that makes ``change`` to the editor's text (None: nothing changes).

        A change that knows its span is sent as that span; only a whole new text is diffed.
        """
        if current is None:
            before, replacement = None, Replacement(0, 0, new_file_text(change))
        else:
            view = ModelView.of(current)
            carried = view.carry(change(view.text))
            if carried is None:
                return None
            before, replacement = view.text, carried
        return FileEdit(
            path=path,
            label=f"elelem: {tool} {self.relative(path)}",
            tool=tool,
            document=document,
            before=before,
            replacement=replacement,
            confirm=self.settings().confirm_edits,
        )

    # -- processes and people ----------------------------------------------------
    async def allow_command(self, command: str) -> tuple[bool, str]:
        try:
            contained = await self.contained(command)
        except WorkspaceError as refused:  # a sandbox is required and none works: nobody is asked
            return False, str(refused)
        if not contained.sandbox and self.sandbox_policy().mode == "auto":
            await self._tell_no_sandbox()
        return await allow_command(
            command, self.settings(), self.allowed_for_session, self.person, sandboxed=bool(contained.sandbox)
        )

    async def _tell_no_sandbox(self) -> None:
        """Once per front end: commands run as they are, and why."""
        if id(self.face) in TOLD_NO_SANDBOX:
            return
        TOLD_NO_SANDBOX[id(self.face)] = self.face
        why = (await available()).why_not
        self.face.show_message(
            "warning", f"elelem: commands run without a sandbox ({why}); set elelem.sandbox to 'required' to refuse them"
        )

    def sandbox_policy(self) -> SandboxPolicy:
        return self.settings().sandbox_policy(self.root)

    async def run(self, command: str, *, timeout: float, output_cap: int) -> ProcessResult:
        contained = await self.contained(command)
        try:
            result = await self.documents.run_command(
                CommandRun(
                    command,
                    self.root,
                    contained.argv,
                    timeout,
                    output_cap,
                    lambda: run_process(contained, self.root, timeout=timeout, output_cap=output_cap),
                )
            )
        finally:  # a face that runs it elsewhere (an ACP client's terminal) has ended it too
            contained.clear_placeholders()
        return dataclasses.replace(result, sandbox=contained.sandbox)

    def tool_starting(self, call_id: str, name: str) -> None:
        self.progress.tool_starting(call_id, name)

    @property
    def insight(self) -> Insight:
        return self.documents.insight

    async def before_changes(self) -> None:
        if self.checkpoint_ready is not None:
            await self.checkpoint_ready()

    async def ask_user(self, prompt: str) -> str:
        try:
            return await self.person.ask_text(prompt)
        except Unanswered as error:
            raise WorkspaceError(str(error)) from None


def text_after(current: str | None, replacement: Replacement) -> str:
    """A file's text once an edit of its model view (``replacement``) has landed on ``current``."""
    if current is None:
        return replacement.text
    view = ModelView.of(current)
    return view.in_stored(replacement).applied_to(current)
