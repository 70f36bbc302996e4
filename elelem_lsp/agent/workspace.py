"""The Workspace port: everything a tool or provider may ask of the place it runs in.

Tools never touch the disk or spawn processes themselves; they ask a Workspace.
``DiskWorkspace`` serves a headless run; the language server's ``EditorWorkspace``
answers from open buffers and turns writes into ``workspace/applyEdit``.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import signal
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from . import search

Change = Callable[[str | None], str]


class WorkspaceError(Exception):
    """A request the workspace refuses; its message is shown to the model."""


@dataclass
class ProcessResult:
    exit_code: int | None
    output: str
    truncated: bool
    timed_out: bool


class Workspace:
    """A folder the agent works in, on disk, with nobody to ask."""

    def __init__(self, root: Path, *, client: str = "terminal") -> None:
        self.root = root.resolve()
        self.client = client

    # -- paths -----------------------------------------------------------------
    def resolve(self, path: str) -> Path:
        """``path`` as an absolute path inside the root; refuses anything that leads out."""
        if not isinstance(path, str) or not path.strip():
            raise WorkspaceError("path must be a non-empty string")
        candidate = Path(path).expanduser()
        if not candidate.is_absolute():
            candidate = self.root / candidate
        resolved = candidate.resolve()  # follows symlinks, so a link leading out is caught
        if resolved != self.root and self.root not in resolved.parents:
            raise WorkspaceError(f"{path} is outside the workspace {self.root}")
        return resolved

    def relative(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix() if path != self.root else "."

    # -- files -----------------------------------------------------------------
    async def read_text(self, path: Path) -> str:
        try:
            return path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise WorkspaceError(f"{self.relative(path)} does not exist") from None
        except IsADirectoryError:
            raise WorkspaceError(f"{self.relative(path)} is a directory") from None
        except UnicodeDecodeError:
            raise WorkspaceError(f"{self.relative(path)} is not UTF-8 text") from None

    async def update(self, path: Path, change: Change, *, tool: str) -> None:
        """Replace the file's text with ``change(current text or None)``; atomic on disk.

        ``change`` may be called again with newer text when the editor's copy moved on.
        """
        try:
            current: str | None = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            current = None
        write_atomically(path, change(current))

    # -- searching -------------------------------------------------------------
    def unsaved_buffers(self, top: Path) -> dict[Path, str]:
        """Files at or below ``top`` whose text differs from the disk's, and that text: none here."""
        return {}

    async def search(self, top: Path, pattern: str, *, limit: int) -> dict[str, Any]:
        """Lines matching ``pattern`` (Rust regex syntax) in every file at or below ``top``."""
        try:
            return await search.grep(self.root, top, pattern, self.unsaved_buffers(top), limit=limit)
        except search.SearchFailure as error:
            raise WorkspaceError(str(error)) from None

    async def list_files(self, top: Path, *, limit: int) -> dict[str, Any]:
        """The files below ``top`` that ``search`` would read, the first ``limit``, and how many."""
        try:
            return await search.list_files(self.root, top, limit=limit)
        except search.SearchFailure as error:
            raise WorkspaceError(str(error)) from None

    # -- processes -------------------------------------------------------------
    async def allow_command(self, command: str) -> tuple[bool, str]:
        """Whether ``command`` may run, and why not. Nobody can answer here: denied."""
        return False, "nobody can approve commands here (run with --yes, or answer the prompt)"

    async def run(self, command: str, *, timeout: float, output_cap: int) -> ProcessResult:
        """Run ``command`` in a shell at the root, in its own process group.

        The group is killed on timeout and on cancellation, so a turn that is
        stopped leaves nothing running.
        """
        process = await asyncio.create_subprocess_shell(
            command,
            cwd=self.root,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
        chunks: list[bytes] = []
        size = 0
        truncated = False

        async def collect() -> None:
            nonlocal size, truncated
            assert process.stdout
            while chunk := await process.stdout.read(65536):
                if size < output_cap:
                    chunks.append(chunk[: output_cap - size])
                truncated = truncated or size + len(chunk) > output_cap
                size += len(chunk)
            await process.wait()

        timed_out = False
        try:
            await asyncio.wait_for(collect(), timeout)
        except asyncio.TimeoutError:
            timed_out = True
            kill_group(process.pid)
            await process.wait()
        except asyncio.CancelledError:
            kill_group(process.pid)
            raise
        output = b"".join(chunks).decode("utf-8", errors="replace")
        return ProcessResult(process.returncode, output, truncated, timed_out)

    # -- people ----------------------------------------------------------------
    async def ask_user(self, prompt: str) -> str:
        """A line typed by the person at the other end (the ``human`` provider)."""
        raise WorkspaceError("nobody can answer here: the human provider needs a terminal or an editor")


def kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def write_atomically(path: Path, text: str) -> None:
    """Write through a temporary file and rename, so a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
        if path.exists():
            os.chmod(temporary, path.stat().st_mode & 0o7777)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


# The workspace of the turn being run, for providers that need the person (``human``).
current_workspace: contextvars.ContextVar[Workspace] = contextvars.ContextVar("elelem_workspace")
