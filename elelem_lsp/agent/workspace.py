"""The Workspace port: everything a tool or provider may ask of the place it runs in.

Tools never touch the disk or spawn processes themselves; they ask a Workspace.
``DiskWorkspace`` serves a headless run; the host's ``FrontendWorkspace``
answers from open buffers and turns writes into ``workspace/applyEdit``. Either way
the model reads text with ``\n`` line breaks and its changes are carried back onto
the file's own encoding, byte-order mark and line endings (``textfile``).
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import signal
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from . import search
from .textfile import ModelView, Replacement, StoredText, decode, for_model

# A change is a function of the current text (None for a missing file), in the model's
# view, to its new whole text, or to the Replacement it makes when it knows where it lands.
# It may be called again with newer text when the editor's copy moved on.
Change = Callable[[str | None], str | Replacement]


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
        """The file's text as the model sees it: decoded, every line break spelled ``\\n``."""
        return for_model(read_stored(path, self.relative(path)).text)

    async def update(self, path: Path, change: Change, *, tool: str) -> None:
        """Apply ``change`` to the file on disk, atomically, keeping its encoding and line endings."""
        stored = read_stored_for_writing(path, self.relative(path))
        if stored is None:
            write_atomically(path, new_file_text(change))
            return
        view = ModelView.of(stored.text)
        carried = view.carry(change(view.text))
        if carried is not None:
            write_atomically(path, stored.encode(view.in_stored(carried).applied_to(stored.text)))

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


def read_stored(path: Path, name: str) -> StoredText:
    """The file's text as stored (see ``textfile``); a missing, binary or undecodable file is refused."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise WorkspaceError(f"{name} does not exist") from None
    except IsADirectoryError:
        raise WorkspaceError(f"{name} is a directory") from None
    try:
        return decode(data)
    except UnicodeDecodeError as error:
        raise WorkspaceError(f"{name} is not {error.encoding.upper()} text") from None


def refuse_hard_links(path: Path, name: str) -> bool:
    """Whether the file exists; refuses one with more than one hard link.

    Such a file shares its contents with another name that may lie outside the
    workspace, so writing it (or saving a buffer of it) would change that file too.
    """
    try:
        status = path.stat()
    except FileNotFoundError:
        return False
    if status.st_nlink > 1 and not stat.S_ISDIR(status.st_mode):
        raise WorkspaceError(
            f"{name} has {status.st_nlink} hard links: writing it would also change the same file under its "
            "other names, which may be outside the workspace, so it was not changed"
        )
    return True


def read_stored_for_writing(path: Path, name: str) -> StoredText | None:
    """``read_stored`` (None for a missing file), refusing a file that cannot be written back safely.

    Besides hard links (``refuse_hard_links``): only UTF-8 is written; a UTF-16 or
    UTF-32 file is read but never rewritten.
    """
    if not refuse_hard_links(path, name):
        return None
    stored = read_stored(path, name)
    if not stored.writable:
        raise WorkspaceError(
            f"{name} is {stored.encoding.upper()} text: only UTF-8 files are written, so it was not changed"
        )
    return stored


def new_file_text(change: Change) -> str:
    """The text ``change`` gives a file that does not exist yet."""
    result = change(None)
    return result.applied_to("") if isinstance(result, Replacement) else result


def write_atomically(path: Path, text: str | bytes) -> None:
    """Write through a temporary file and rename, so a reader never sees half a file.

    Text is written as UTF-8 exactly as given (no line-ending translation).
    """
    data = text.encode("utf-8") if isinstance(text, str) else text
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        if path.exists():
            os.chmod(temporary, path.stat().st_mode & 0o7777)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


# The workspace of the turn being run, for providers that need the person (``human``).
current_workspace: contextvars.ContextVar[Workspace] = contextvars.ContextVar("elelem_workspace")
