"""The port between the agent host and a front end (the LSP server, the ACP agent).

The host never speaks a protocol: whatever it needs from the person or the editor
(settings, messages, a turn's progress, permission, text input, open buffers,
edits) it asks of one ``Frontend``, which a face implements in its own protocol.
This module is plain Python on purpose: a face imports it at start-up.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..agent.textfile import Replacement
from ..agent.workspace import ProcessResult

Level = Literal["info", "warning", "error"]


class BadRequest(Exception):
    """What a front end asked names something that is not there (the message names the field)."""


class Refused(Exception):
    """What a front end asked is well formed but cannot be done now."""


class Unanswered(Exception):
    """The front end could not ask the person, or the person dismissed the question; the
    message says which, in words for the model."""


@dataclass(frozen=True)
class OpenDocument:
    """A document the editor has open: its unsaved text and the version that text has."""

    path: Path
    uri: str
    version: int | None
    text: str


@dataclass(frozen=True)
class FileEdit:
    """One change a tool makes to one file, for the front end to propose to the editor.

    ``before`` is the text the change was computed on in the model's view (``\\n`` breaks,
    the same lines and columns as the stored text), None for a new file; ``replacement``
    is the span of it that changes, in the file's own line endings.
    """

    path: Path
    label: str
    tool: str
    document: OpenDocument | None
    before: str | None
    replacement: Replacement
    confirm: bool


@dataclass(frozen=True)
class RestoredFile:
    """One file of a rewind (host/rewinding.py): its text as it was, or None to delete it."""

    path: Path
    text: str | None


# Seconds streamed text may wait to go out with the text after it, in every face: a message per
# token would cost the client more than the text, and 50 ms still reads as live.
TEXT_BATCH_SECONDS = 0.05


class ProgressSink(ABC):
    """Where one turn's events go; ``token`` names the turn for cancellation (or None)."""

    token: Any = None

    @abstractmethod
    def add(self, event: dict[str, Any]) -> None:
        """One agent event, as it happens."""

    @abstractmethod
    def end(self, message: str) -> None:
        """The turn is over: ``done``, ``cancelled`` or the error. Nothing follows."""


class Frontend(ABC):
    """What a face offers the host. Properties are read when needed, so they may change
    after the session starts (e.g. what the editor announced at initialize)."""

    @property
    @abstractmethod
    def name(self) -> str:
        """The client's name, for the model's system prompt ("Visual Studio Code 1.90")."""

    @property
    def plain(self) -> bool:
        """True for a client that shows neither progress nor a command's result."""
        return False

    @property
    def provider_hint(self) -> str:
        """How the person changes provider in this front end, in its own words."""
        return "set the provider setting to change it"

    @property
    def cancel_hint(self) -> str:
        """How the person stops a running turn in this front end, in its own words."""
        return "cancel it"

    @property
    def can_edit(self) -> bool:
        """True when edits go through the editor (``apply_edit``); False writes to disk."""
        return False

    @property
    def keeps_settings(self) -> bool:
        """True when settings once fetched stay right until the host is told they changed."""
        return False

    @abstractmethod
    async def settings(self, folder_uri: str) -> Any:
        """The raw ``elelem`` settings for a folder (None when there are none)."""

    @abstractmethod
    def show_message(self, level: Level, text: str) -> None:
        """A short message for the person."""

    @property
    def can_show_files(self) -> bool:
        """True when ``show_file`` can open a file for the person."""
        return False

    def show_file(self, path: Path) -> None:  # noqa: B027 - optional: a face that cannot show files leaves it
        """Open a file for the person without waiting."""

    @abstractmethod
    async def open_progress(self, token: Any, title: str, message: str) -> ProgressSink:
        """A sink for one turn's events (``token`` is the client's, if it sent one)."""

    @abstractmethod
    async def ask_permission(self, question: str, options: list[str]) -> str | None:
        """The option the person chose, None if dismissed; Unanswered if they cannot be asked."""

    @abstractmethod
    async def ask_text(self, prompt: str) -> str:
        """A line of text from the person; Unanswered when there is none."""

    def open_document(self, path: Path) -> OpenDocument | None:
        """The open document at ``path`` (resolved), if the editor has one."""
        return None

    def open_documents(self) -> list[OpenDocument]:
        """Every open document that has a path."""
        return []

    async def read_document(self, path: Path) -> OpenDocument | None:
        """The editor's text of ``path`` when it has one, fetched if it must be (ACP's
        ``fs/read_text_file``); None leaves the file to the disk."""
        return self.open_document(path)

    async def run_command(
        self, command: str, cwd: Path, *, timeout: float, output_cap: int, run_here: Callable[[], Awaitable[ProcessResult]]
    ) -> ProcessResult:
        """Run a command a tool asked for (already allowed): by default ``run_here()``, our own
        subprocess; a front end with terminals of its own may run it there instead."""
        return await run_here()

    def tool_starting(self, call_id: str, name: str) -> None:  # noqa: B027 - optional, for faces that track tool calls
        """A tool call of the running turn starts now (the ones before it are finished)."""

    async def apply_edit(self, edit: FileEdit) -> tuple[bool, str | None]:
        """Propose the edit; whether it was applied and, if not, the editor's reason."""
        raise NotImplementedError("this front end does not edit through the editor")

    async def restore_files(self, files: list[RestoredFile], label: str) -> tuple[bool, str | None] | None:
        """Put files back as one edit the person can undo in the editor: whether it was applied
        and, if not, the editor's reason; None when the editor cannot (the host writes the disk)."""
        return None
