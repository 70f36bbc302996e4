"""In-memory fakes of the host's ports, one small class a role, so a test takes only the roles
its part uses; ``MemoryFrontend`` is all of them together, for the host and its folder agents.
Settings, open documents and the person's answers are set by the test; what the host sent
(messages, progress, edits, questions) is recorded."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Callable
from typing import Any

from elelem_lsp.host.frontend import (
    Documents, Face, FileEdit, Frontend, OpenDocument, Person, Progress, ProgressSink, RestoredFile, SettingsSource,
)
from elelem_lsp.host.settings import Settings
from elelem_lsp.host.workspace import FrontendWorkspace


class RecordedProgress(ProgressSink):
    def __init__(self, token: Any) -> None:
        self.token = token
        self.events: list[dict[str, Any]] = []
        self.ended: str | None = None

    def add(self, event: dict[str, Any]) -> None:
        assert self.ended is None, "an event after the end"
        self.events.append(event)

    def end(self, message: str) -> None:
        self.ended = message


@dataclass
class MemoryFace(Face):
    is_plain: bool = False
    shows_files: bool = False
    messages: list[tuple[str, str]] = field(default_factory=list)
    shown: list[Path] = field(default_factory=list)

    name = "memory"
    plain = property(lambda self: self.is_plain)
    can_show_files = property(lambda self: self.shows_files)

    def show_message(self, level: str, text: str) -> None:
        self.messages.append((level, text))

    def show_file(self, path: Path) -> None:
        self.shown.append(path)


@dataclass
class MemorySettings(SettingsSource):
    settings_by_folder: dict[str, Any] = field(default_factory=dict)
    keeping: bool = False
    settings_asked: int = 0

    keeps_settings = property(lambda self: self.keeping)

    async def settings(self, folder_uri: str) -> Any:
        self.settings_asked += 1
        return self.settings_by_folder.get(folder_uri)


@dataclass
class MemoryPerson(Person):
    answers: list[Any] = field(default_factory=list)  # what the person answers, in order; an exception is raised
    questions: list[str] = field(default_factory=list)

    async def ask_permission(self, question: str, options: list[str]) -> str | None:
        return self._answer(question)

    async def ask_text(self, prompt: str) -> str:
        return self._answer(prompt)

    def _answer(self, question: str) -> Any:
        self.questions.append(question)
        answer = self.answers.pop(0) if self.answers else None
        if isinstance(answer, Exception):
            raise answer
        return answer


@dataclass
class MemoryDocuments(Documents):
    documents: dict[Path, OpenDocument] = field(default_factory=dict)
    editing: bool = True
    edits: list[FileEdit] = field(default_factory=list)
    refuse_edits: str | None = None  # the editor's reason to refuse, if it does
    type_before_edit: str | None = None  # text the person types in the open buffer before the edit lands
    restores_in_editor: bool = False  # a rewind is one edit of the buffers (as in VS Code), not left to the disk
    restores: list[tuple[str, list[RestoredFile]]] = field(default_factory=list)

    can_edit = property(lambda self: self.editing)

    def open_document(self, path: Path) -> OpenDocument | None:
        return self.documents.get(path)

    def open_documents(self) -> list[OpenDocument]:
        return list(self.documents.values())

    def open(self, path: Path, text: str, version: int = 1) -> None:
        self.documents[path] = OpenDocument(path, path.as_uri(), version, text)

    async def apply_edit(self, edit: FileEdit) -> tuple[bool, str | None]:
        self.edits.append(edit)
        if self.type_before_edit is not None and edit.path in self.documents:
            typed, self.type_before_edit = self.type_before_edit, None
            old = self.documents[edit.path]
            self.open(edit.path, typed, (old.version or 0) + 1)
            return False, "the document changed"
        if self.refuse_edits is not None:
            return False, self.refuse_edits
        before = edit.before if edit.before is not None else ""
        after = edit.replacement.applied_to(before)
        if edit.path in self.documents:
            old = self.documents[edit.path]
            self.open(edit.path, after, (old.version or 0) + 1)
        else:
            edit.path.write_text(after, encoding="utf-8")
        return True, None

    async def restore_files(self, files: list[RestoredFile], label: str) -> tuple[bool, str | None] | None:
        if not self.restores_in_editor:
            return None
        if self.refuse_edits is not None:
            return False, self.refuse_edits
        self.restores.append((label, files))
        for file in files:
            if file.text is None:
                file.path.unlink(missing_ok=True)
                self.documents.pop(file.path, None)
            elif file.path in self.documents:
                self.open(file.path, file.text, (self.documents[file.path].version or 0) + 1)
            else:
                file.path.write_text(file.text, encoding="utf-8")
        return True, None


@dataclass
class MemoryProgress(Progress):
    progress: list[RecordedProgress] = field(default_factory=list)

    async def open_progress(self, token: Any, title: str, message: str) -> ProgressSink:
        sink = RecordedProgress(token if token is not None else f"token-{len(self.progress)}")
        self.progress.append(sink)
        return sink


@dataclass
class MemoryFrontend(MemoryFace, MemorySettings, MemoryPerson, MemoryDocuments, MemoryProgress, Frontend):
    """Every role in memory."""


def memory_workspace(root: Path, settings: Callable[[], Settings], frontend: MemoryFrontend | None = None) -> FrontendWorkspace:
    """The Workspace a folder agent gives its tools, over one in-memory front end in every role."""
    face = frontend if frontend is not None else MemoryFrontend()
    return FrontendWorkspace(root, settings, documents=face, person=face, progress=face, face=face, client=face.name)
