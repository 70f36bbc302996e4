"""The Workspace port: everything a tool or provider may ask of the place it runs in.

Tools never touch the disk or spawn processes themselves; they ask a Workspace.
The base ``Workspace`` is the disk, for a headless run; the host's ``FrontendWorkspace``
answers from open buffers and turns writes into ``workspace/applyEdit``. Either way
the model reads text with ``\n`` line breaks and its changes are carried back onto
the file's own encoding, byte-order mark and line endings (``textfile``).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import os
import signal
import stat
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import search
from .insight import NO_INSIGHT, Insight
from .sandbox import Contained, SandboxPolicy, SandboxRefused, contain, guarded_name
from .textfile import ModelView, Replacement, StoredText, decode, for_model

# A change is a function of the current text (None for a missing file), in the model's
# view, to its new whole text, or to the Replacement it makes when it knows where it lands.
# It may be called again with newer text when the editor's copy moved on.
Change = Callable[[str | None], str | Replacement]


class WorkspaceError(Exception):
    """A request the workspace refuses; its message is shown to the model."""


# Linux's limits; the tightest of the common file systems allow a name of 255 bytes.
PATH_MAX = 4096
NAME_MAX = 255
SHOWN_PATH = 80  # characters of a path an error message repeats


def check_path_text(path: str) -> None:
    """Refuse a path no file system can hold, before the OS is asked about it."""
    if "\0" in path:
        raise WorkspaceError(f"path contains a NUL byte: {shown(path)}")
    try:
        os.fsencode(path)
    except UnicodeEncodeError:
        raise WorkspaceError(f"path is not valid text (a lone surrogate?): {shown(path)}") from None
    for part in Path(path).parts:
        if len(os.fsencode(part)) > NAME_MAX:
            raise WorkspaceError(
                f"path has a part too long: {shown(part)} ({len(part)} characters; the limit is {NAME_MAX} bytes)"
            )


def resolve_existing(candidate: Path) -> Path:
    """The real path of ``candidate``; one that does not exist yet (a file to write) is fine,
    one the OS refuses to follow raises its OSError."""
    try:
        return candidate.resolve(strict=True)
    except FileNotFoundError:
        return candidate.resolve()


def shown(path: str) -> str:
    """``path`` as an error message repeats it: control characters escaped, the middle cut when long."""
    text = path if path.isprintable() else path.encode("unicode_escape", "backslashreplace").decode("ascii")
    return text if len(text) <= SHOWN_PATH else f"{text[: SHOWN_PATH - 20]}...{text[-10:]}"


@dataclass
class ProcessResult:
    exit_code: int | None
    output: str
    truncated: bool
    timed_out: bool
    sandbox: str = ""  # how it was contained (``sandbox.Contained``), "" when it was not


class Workspace:
    """A folder the agent works in, on disk, with nobody to ask."""

    def __init__(self, root: Path, *, client: str = "terminal") -> None:
        self.root = root.resolve()
        self.client = client

    # -- paths -----------------------------------------------------------------
    def resolve(self, path: str) -> Path:
        """``path`` as an absolute path inside the root; refuses anything that leads out.

        A path no file system could hold (a NUL byte, text that is not a name, a part or
        a whole too long) or one the OS cannot follow is refused here with a message, so
        no tool has to know how each of those fails.
        """
        if not isinstance(path, str) or not path.strip():
            raise WorkspaceError("path must be a non-empty string")
        check_path_text(path)
        try:
            candidate = Path(path).expanduser()
        except RuntimeError:  # ``~name`` of a user nobody knows
            raise WorkspaceError(f"{shown(path)}: no such user, so no home folder to start from") from None
        if not candidate.is_absolute():
            candidate = self.root / candidate
        if len(os.fsencode(candidate)) >= PATH_MAX:
            raise WorkspaceError(f"path too long: {shown(path)} ({len(path)} characters; the limit is {PATH_MAX - 1} bytes)")
        try:
            resolved = resolve_existing(candidate)  # follows symlinks, so a link leading out is caught
        except RuntimeError:  # how pathlib (before 3.13) reports a symlink loop
            raise WorkspaceError(f"{shown(path)} is a symlink loop") from None
        except OSError as error:  # through a file (ENOTDIR), a folder it may not enter (EACCES), a loop...
            raise WorkspaceError(f"{shown(path)}: {error.strerror or error}") from None
        if resolved != self.root and self.root not in resolved.parents:
            raise WorkspaceError(f"{shown(path)} is outside the workspace {self.root}")
        return resolved

    def relative(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix() if path != self.root else "."

    def describe(self, error: OSError) -> str:
        """What the OS refused, naming the file the way the model named it (relative to the root)."""
        reason = error.strerror or str(error) or type(error).__name__
        if not isinstance(error.filename, (str, bytes, os.PathLike)):  # none, or an open file's descriptor
            return reason
        path = Path(os.fsdecode(error.filename))
        name = path.relative_to(self.root).as_posix() if path.is_relative_to(self.root) else str(path)
        return f"{shown(name)}: {reason}"

    # -- files -----------------------------------------------------------------
    async def read_text(self, path: Path) -> str:
        """The file's text as the model sees it: decoded, every line break spelled ``\\n``."""
        return for_model(read_stored(path, self.relative(path)).text)

    async def allow_change(self, path: Path) -> None:
        """Refuse a change to one of the folder's guarded files (its editors' settings, its plugins,
        git's hooks and config: ``sandbox.GUARDED``) that the person does not allow."""
        name = self.relative(path)
        if guarded_name(name) is None:
            return
        allowed, why = await self.ask_guarded_change(name)
        if not allowed:
            raise WorkspaceError(
                f"{name} is one of the folder's settings, plugins or git hooks, which say what elelem and git may run: "
                f"it is changed only with the person's leave, and {why}"
            )

    async def ask_guarded_change(self, name: str) -> tuple[bool, str]:
        """Whether the person lets the guarded file ``name`` change, and why not: nobody can here."""
        return False, "nobody can allow it here"

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

    async def search(self, top: Path, pattern: str, *, limit: int, context: int = 0, glob: str | None = None) -> dict[str, Any]:
        """Lines matching ``pattern`` (Rust regex syntax) in every file at or below ``top`` (those
        matching ``glob`` when given), with ``context`` lines around each."""
        try:
            buffers = self.unsaved_buffers(top)
            return await search.grep(self.root, top, pattern, buffers, limit=limit, context=context, glob=glob)
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

    def sandbox_policy(self) -> SandboxPolicy:
        """How commands here are contained: not at all, with nobody to set it (a host's settings do)."""
        return SandboxPolicy(mode="off")

    async def contained(self, command: str) -> Contained:
        """The shell running ``command``, in the sandbox the policy asks for; WorkspaceError when the
        policy requires one and none works."""
        try:
            return await contain(["/bin/sh", "-c", command], self.root, self.sandbox_policy())
        except SandboxRefused as refused:
            raise WorkspaceError(f"elelem.sandbox is 'required' and {refused}") from None

    async def run(self, command: str, *, timeout: float, output_cap: int) -> ProcessResult:
        """Run ``command`` in a shell at the root, in the sandbox when there is one (``run_process``)."""
        return await run_process(await self.contained(command), self.root, timeout=timeout, output_cap=output_cap)

    def tool_starting(self, call_id: str, name: str) -> None:
        """The session is about to run this tool call (a front end shows it running)."""

    async def before_changes(self) -> None:
        """A tool that may change files is about to run (a host keeps a checkpoint of them first)."""

    @property
    def insight(self) -> Insight:
        """What the editor's language servers know (problems, definitions...): nothing here."""
        return NO_INSIGHT

    # -- people ----------------------------------------------------------------
    async def ask_user(self, prompt: str) -> str:
        """A line typed by the person at the other end (the ``human`` provider)."""
        raise WorkspaceError("nobody can answer here: the human provider needs a terminal or an editor")


async def run_process(contained: Contained, cwd: Path, *, timeout: float, output_cap: int) -> ProcessResult:
    """Run the (contained) command at ``cwd``, in its own process group.

    The group is killed when the shell exits, on timeout and on cancellation, so
    nothing the command started outlives the call (``sleep 100 &`` included; in the
    sandbox's PID namespace, ``setsid`` children too).
    """
    # The output pipe is ours, not asyncio's, so reading can stop even while a
    # process that left the group (setsid) still holds the pipe open.
    read_end, write_end = os.pipe()
    reader = asyncio.StreamReader()
    transport, _ = await asyncio.get_running_loop().connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(read_end, "rb", buffering=0)
    )
    try:
        starting = asyncio.ensure_future(
            asyncio.create_subprocess_exec(
                *contained.argv,
                cwd=cwd,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=write_end,
                stderr=write_end,
                start_new_session=True,
            )
        )
        try:
            process = await asyncio.shield(starting)
        except asyncio.CancelledError:
            # The shell runs before asyncio has connected to it, and may have started others:
            # cancelled then, asyncio would kill the shell alone; the whole group goes.
            kill_group((await starting).pid)
            raise
        finally:
            os.close(write_end)  # the command's processes hold the only copies now
        result = await watch(process, reader, timeout=timeout, output_cap=output_cap)
        return dataclasses.replace(result, sandbox=contained.sandbox)
    finally:
        transport.close()
        contained.clear_placeholders()  # its processes are gone (killed with the group, or never started)


# How long output may keep arriving after the command's process group was killed.
OUTPUT_LINGER = 0.5


class CappedOutput:
    """A command's output, kept up to a cap; the rest is counted, not stored."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.chunks: list[bytes] = []
        self.size = 0

    @property
    def truncated(self) -> bool:
        return self.size > self.cap

    async def collect(self, reader: asyncio.StreamReader) -> None:
        while chunk := await reader.read(65536):
            if self.size < self.cap:
                self.chunks.append(chunk[: self.cap - self.size])
            self.size += len(chunk)

    def text(self) -> str:
        return b"".join(self.chunks).decode("utf-8", errors="replace")


async def watch(
    process: asyncio.subprocess.Process, reader: asyncio.StreamReader, *, timeout: float, output_cap: int
) -> ProcessResult:
    """Collect a command's output until its shell exits or time runs out; then kill its group."""
    output = CappedOutput(output_cap)
    reading = asyncio.ensure_future(output.collect(reader))
    timed_out = False
    try:
        await asyncio.wait_for(process.wait(), timeout)
    except TimeoutError:
        timed_out = True
    finally:  # cancelled too: whatever the command left running goes with it
        kill_group(process.pid)
        try:
            # With the group dead nobody writes any more: what is left in the pipe arrives at once.
            await asyncio.wait_for(asyncio.shield(reading), OUTPUT_LINGER)
        except TimeoutError:
            pass  # a process in a session of its own still holds the pipe open
        finally:
            reading.cancel()
    await process.wait()
    return ProcessResult(process.returncode, output.text(), output.truncated, timed_out)


def kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


def read_stored(path: Path, name: str) -> StoredText:
    """The file's text as stored (see ``textfile``); a missing, binary or undecodable file is refused,
    and so is anything but a regular file."""
    try:
        # Not a plain open: on a FIFO that waits for a writer, stalling the turn and the server.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise WorkspaceError(f"{name} does not exist") from None
    try:
        kind = stat.S_IFMT(os.fstat(fd).st_mode)
        if kind == stat.S_IFDIR:
            raise WorkspaceError(f"{name} is a directory")
        if kind != stat.S_IFREG:
            raise WorkspaceError(f"{name} is not a regular file (a FIFO, socket or device)")
        handle = open(fd, "rb")  # noqa: SIM115 - closed below, after the kind is checked
    except BaseException:
        os.close(fd)
        raise
    with handle:
        data = handle.read()
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
        raise WorkspaceError(f"{name} is {stored.encoding.upper()} text: only UTF-8 files are written, so it was not changed")
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
