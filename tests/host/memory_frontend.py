"""An in-memory front end for the host: a whole implementation of the port with no protocol,
so host tests run in-process. Settings, open documents and the person's answers are set
by the test; what the host sent (messages, progress, edits, questions) is recorded."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from elelem_lsp.host.frontend import FileEdit, Frontend, OpenDocument, ProgressSink, RestoredFile


class Progress(ProgressSink):
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
class MemoryFrontend(Frontend):
    settings_by_folder: dict[str, Any] = field(default_factory=dict)
    documents: dict[Path, OpenDocument] = field(default_factory=dict)
    answers: list[Any] = field(default_factory=list)  # what the person answers, in order; an exception is raised
    editing: bool = True
    keeping: bool = False
    is_plain: bool = False
    shows_files: bool = False
    messages: list[tuple[str, str]] = field(default_factory=list)
    progress: list[Progress] = field(default_factory=list)
    edits: list[FileEdit] = field(default_factory=list)
    questions: list[str] = field(default_factory=list)
    shown: list[Path] = field(default_factory=list)
    settings_asked: int = 0
    refuse_edits: str | None = None  # the editor's reason to refuse, if it does
    type_before_edit: str | None = None  # text the person types in the open buffer before the edit lands
    restores_in_editor: bool = False  # a rewind is one edit of the buffers (as in VS Code), not left to the disk
    restores: list[tuple[str, list[RestoredFile]]] = field(default_factory=list)

    @property
    def name(self) -> str:
        return "memory"

    @property
    def plain(self) -> bool:
        return self.is_plain

    @property
    def can_edit(self) -> bool:
        return self.editing

    @property
    def keeps_settings(self) -> bool:
        return self.keeping

    @property
    def can_show_files(self) -> bool:
        return self.shows_files

    async def settings(self, folder_uri: str) -> Any:
        self.settings_asked += 1
        return self.settings_by_folder.get(folder_uri)

    def show_message(self, level: str, text: str) -> None:
        self.messages.append((level, text))

    def show_file(self, path: Path) -> None:
        self.shown.append(path)

    async def open_progress(self, token: Any, title: str, message: str) -> ProgressSink:
        sink = Progress(token if token is not None else f"token-{len(self.progress)}")
        self.progress.append(sink)
        return sink

    async def ask_permission(self, question: str, options: list[str]) -> str | None:
        self.questions.append(question)
        return self._answer()

    async def ask_text(self, prompt: str) -> str:
        self.questions.append(prompt)
        return self._answer()

    def _answer(self) -> Any:
        answer = self.answers.pop(0) if self.answers else None
        if isinstance(answer, Exception):
            raise answer
        return answer

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
