"""The ports between the agent host and a face (the LSP server, the ACP agent).

The host never speaks a protocol: whatever it needs from the person or the editor it asks
of a face through small roles, each a part of the host taking only the ones it uses:
``Face`` (what the face is and can show), ``SettingsSource`` (the raw settings),
``Person`` (asking the person), ``Documents`` (reading the editor's text, applying an edit,
running a command) and ``Progress`` (a turn's events). A face implements all of them as
one ``Frontend``. This module is plain Python on purpose: a face imports it at start-up.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..agent.insight import NO_INSIGHT, Insight
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
class CommandRun:
    """A command a tool asked for, already allowed: its shell line, where it runs, the ``argv`` that
    runs it (the shell, in the sandbox when there is one), its limits, and ``run_here``, running it
    in our own subprocess."""

    command: str
    cwd: Path
    argv: list[str]
    timeout: float
    output_cap: int
    run_here: Callable[[], Awaitable[ProcessResult]]


@dataclass(frozen=True)
class RestoredFile:
    """One file of a rewind (host/rewinding.py): its text as it was, or None to delete it."""

    path: Path
    text: str | None


class ProgressSink(ABC):
    """Where one turn's events go; ``token`` names the turn for cancellation (or None)."""

    token: Any = None

    @abstractmethod
    def add(self, event: dict[str, Any]) -> None:
        """One agent event, as it happens."""

    @abstractmethod
    def end(self, message: str) -> None:
        """The turn is over: ``done``, ``cancelled`` or the error. Nothing follows."""


class Face(ABC):
    """What the face is, and what it can show the person. Properties are read when needed, so
    they may change after the session starts (e.g. what the editor announced at initialize)."""

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

    @abstractmethod
    def show_message(self, level: Level, text: str) -> None:
        """A short message for the person."""

    @property
    def can_show_files(self) -> bool:
        """True when ``show_file`` can open a file for the person."""
        return False

    def show_file(self, path: Path) -> None:  # noqa: B027 - optional: a face that cannot show files leaves it
        """Open a file for the person without waiting."""


class SettingsSource(ABC):
    """Where a folder's raw ``elelem`` settings come from."""

    @property
    def keeps_settings(self) -> bool:
        """True when settings once fetched stay right until the host is told they changed."""
        return False

    @abstractmethod
    async def settings(self, folder_uri: str) -> Any:
        """The raw ``elelem`` settings for a folder (None when there are none)."""


class Person(ABC):
    """Asking the person something and waiting for the answer."""

    @abstractmethod
    async def ask_permission(self, question: str, options: list[str]) -> str | None:
        """The option the person chose, None if dismissed; Unanswered if they cannot be asked."""

    async def ask_text(self, prompt: str) -> str:
        """A line of text from the person; Unanswered when there is none."""
        raise Unanswered("this front end cannot ask for a line of text, so the human provider cannot be used here")


class Documents:
    """The editor's documents and commands: reading its text, applying an edit, running a command."""

    @property
    def can_edit(self) -> bool:
        """True when edits go through the editor (``apply_edit``); False writes to disk."""
        return False

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

    async def apply_edit(self, edit: FileEdit) -> tuple[bool, str | None]:
        """Propose the edit; whether it was applied and, if not, the editor's reason."""
        raise NotImplementedError("this front end does not edit through the editor")

    async def restore_files(self, files: list[RestoredFile], label: str) -> tuple[bool, str | None] | None:
        """Put files back as one edit the person can undo in the editor: whether it was applied
        and, if not, the editor's reason; None when the editor cannot (the host writes the disk)."""
        return None

    @property
    def insight(self) -> Insight:
        """What the editor's language servers know, where the face can ask them."""
        return NO_INSIGHT

    async def run_command(self, run: CommandRun) -> ProcessResult:
        """Run a command a tool asked for (already allowed): by default ``run.run_here()``, our own
        subprocess; a front end with terminals of its own may run ``run.argv`` there instead."""
        return await run.run_here()


class Progress(ABC):
    """Where a turn's progress goes."""

    @abstractmethod
    async def open_progress(self, token: Any, title: str, message: str) -> ProgressSink:
        """A sink for one turn's events (``token`` is the client's, if it sent one)."""

    def tool_starting(self, call_id: str, name: str) -> None:  # noqa: B027 - optional, for faces that track tool calls
        """A tool call of the running turn starts now (the ones before it are finished)."""


class Frontend(Face, SettingsSource, Person, Documents, Progress):
    """Every role, as a face implements them; the host hands each of its parts the roles it uses."""
