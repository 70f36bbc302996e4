"""Checkpoints: each turn's files as they were before it, and what it changed, so it can be rewound.

Bridges a workspace folder to a shadow git repository of ours under the user's state
directory (``checkpoints/<folder>-<hash>``), driven with the ``git`` command: never the
person's own ``.git``, index or stash. A snapshot stages the folder into the shadow index
and writes its tree; git's stat cache makes every snapshot after the first cheap. The
person's ``.gitignore`` files (and their ``.git/info/exclude`` and global excludes) are
honoured, their ``.git`` folder and nested repositories are left out, and so is any file
over ``MAX_FILE_BYTES``. No attribute of the project converts or filters what is stored:
the bytes on disk are the bytes kept.

A turn's checkpoint (``TurnCheckpoint``) starts its snapshot in the background as the turn
begins, the first tool that may change files waits for it, and the turn's end snapshots
again: the difference of the two trees is what the turn changed, commands included. Turns
that changed files are kept as commits (``refs/elelem/turns/<n>``), pruned to the last N
turns or days. A rewind is planned (``RewindPlan``: plain data a face may apply as an
editor's edit) then applied; a file changed since by anyone but the rewound turns is a
conflict, left alone unless forced. Folders are 0700 and files 0600 or stricter.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import hashlib
import json
import logging
import os
import queue
import shutil
import stat
import subprocess
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal, TypeVar

from filelock import FileLock

from ..agent.private_files import private_folder, state_dir, write_private
from ..agent.workspace import write_atomically
from .conversations import folder_key, now

log = logging.getLogger(__name__)
T = TypeVar("T")

MAX_FILE_BYTES = 1024 * 1024  # a larger file is not kept, so not restored (README: "Rewind")
KEEP_TURNS = 50
KEEP_DAYS = 30
REFS = "refs/elelem/turns/"
# What the project's .gitattributes may ask of git is undone: no line-ending conversion, no
# filter (an LFS filter would run a program), no re-encoding. The bytes on disk are kept.
RAW_ATTRIBUTES = "* -text -eol -filter -ident -working-tree-encoding -diff\n"
CONFIG = {
    "core.autocrlf": "false",
    "core.safecrlf": "false",
    "core.symlinks": "true",
    "core.untrackedCache": "true",
    "core.fsmonitor": "false",
    "core.quotePath": "false",
    "core.hooksPath": os.devnull,
    "gc.auto": "0",
    "core.logAllRefUpdates": "false",
    "status.relativePaths": "false",
}
IDENTITY = {"GIT_AUTHOR_NAME": "elelem", "GIT_AUTHOR_EMAIL": "elelem@localhost"}


def checkpoints_dir() -> Path:
    return state_dir() / "checkpoints"


class CheckpointError(Exception):
    """The store cannot do what was asked (no git, no such turn, a path not in the turn)."""


@dataclass(frozen=True)
class Snapshot:
    """The folder's files at one moment, as a tree of the shadow repository."""

    tree: str
    too_large: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Checkpoint:
    """One turn that changed files: its number, when, what it was asked, and the files."""

    turn: int
    at: str
    label: str
    conversation: str | None
    files: list[dict[str, str]]  # {path, change: added|modified|deleted}
    too_large: list[str] = field(default_factory=list)

    def describe(self) -> dict[str, Any]:
        return {
            "turn": self.turn,
            "at": self.at,
            "prompt": self.label,
            "conversation": self.conversation,
            "files": self.files,
            "tooLarge": self.too_large,
        }


@dataclass(frozen=True)
class Restore:
    """One file's part of a rewind: written back as it was (``content``), or deleted."""

    path: str  # relative to the folder, with ``/``
    action: Literal["write", "delete"]
    content: bytes = b""
    executable: bool = False
    symlink: bool = False  # ``content`` is the link's target


@dataclass(frozen=True)
class Conflict:
    path: str
    reason: str


@dataclass
class RewindPlan:
    """What rewinding to before ``turn`` does: the files restored, and those that are in the way."""

    turn: int
    turns: list[int]  # the turns undone: ``turn`` and every later one
    restores: list[Restore]
    conflicts: list[Conflict]

    def describe(self) -> dict[str, Any]:
        return {
            "turn": self.turn,
            "turns": self.turns,
            "files": [{"path": r.path, "action": r.action} for r in self.restores],
            "conflicts": [{"path": c.path, "reason": c.reason} for c in self.conflicts],
        }


# path -> the text of each editor buffer with unsaved changes (a turn's edits may wait there unsaved)
UnsavedBuffers = Callable[[], dict[str, bytes]]
# The current bytes of a file as the person sees it (an editor's unsaved buffer), or None to read the disk.
CurrentContent = Callable[[str], bytes | None]
_locks: dict[Path, tuple[StoreLock, Worker]] = {}  # each folder's, shared by its stores in this process
_locks_guard = threading.Lock()


class CheckpointStore:
    """One folder's checkpoints, in a shadow git repository keyed by the folder's resolved root."""

    def __init__(self, root: Path, *, base: Path | None = None, max_file_bytes: int = MAX_FILE_BYTES) -> None:
        self.root = root.resolve()
        self.base = base or checkpoints_dir()
        self.directory = self.base / folder_key(self.root)
        self.git_dir = self.directory / "git"
        self.max_file_bytes = max_file_bytes
        with _locks_guard:
            if self.directory not in _locks:
                _locks[self.directory] = (StoreLock(self.directory), Worker(f"elelem-checkpoint-{self.root.name}"))
            self._lock, self.worker = _locks[self.directory]

    # -- git -----------------------------------------------------------------------
    def _env(self) -> dict[str, str]:
        env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
        env.update(
            GIT_DIR=str(self.git_dir),
            GIT_CONFIG_GLOBAL=os.devnull,  # the person's settings (filters, hooks, autocrlf) play no part
            GIT_CONFIG_NOSYSTEM="1",
            GIT_LITERAL_PATHSPECS="1",
            GIT_TERMINAL_PROMPT="0",
            GIT_COMMITTER_NAME=IDENTITY["GIT_AUTHOR_NAME"],
            GIT_COMMITTER_EMAIL=IDENTITY["GIT_AUTHOR_EMAIL"],
            LC_ALL="C",
            **IDENTITY,
        )
        return env

    def _git(self, *args: str, input: bytes | None = None, index: Path | None = None) -> bytes:
        try:
            done = subprocess.run(
                ["git", f"--work-tree={self.root}", *args],
                input=input,
                capture_output=True,
                cwd=self.root,
                env={**self._env(), **({"GIT_INDEX_FILE": str(index)} if index else {})},
                umask=0o077,  # what git writes is the owner's alone
                check=False,
            )
        except FileNotFoundError:
            raise CheckpointError("git is not installed, so turns cannot be checkpointed") from None
        if done.returncode != 0:
            message = done.stderr.decode("utf-8", "replace").strip()
            raise CheckpointError(f"git {args[0]} failed: {message}")
        return done.stdout

    def _locked(self) -> StoreLock:
        return self._lock

    def _ready(self) -> None:
        """Make the private folders and the shadow repository, once."""
        refuse_planted(self.directory)
        if (self.git_dir / "HEAD").is_file():
            return
        self._git("init", "--quiet", "--template=", "--initial-branch=main")  # no template: no executable hook samples
        for key, value in {**CONFIG, "core.excludesFile": global_excludes()}.items():
            if value:
                self._git("config", key, value)
        private_folder(self.git_dir / "info")
        write_private(self.git_dir / "info" / "attributes", RAW_ATTRIBUTES.encode())

    def _sync_excludes(self) -> None:
        """The person's ``.git/info/exclude`` is honoured as theirs is: copied beside our index."""
        try:
            theirs = (self.root / ".git" / "info" / "exclude").read_bytes()
        except OSError:
            theirs = b""
        ours = self.git_dir / "info" / "exclude"
        try:
            if ours.read_bytes() == theirs:
                return
        except OSError:
            pass
        write_private(ours, theirs)

    # -- snapshots ------------------------------------------------------------------
    def snapshot(self, unsaved: dict[str, bytes] | None = None) -> Snapshot:
        """Stage the folder's files (changed ones only, after the first time) and write their tree;
        ``unsaved`` (path -> an editor buffer's text) stands for those files on disk in the tree."""
        with self._locked():
            self._ready()
            self._sync_excludes()
            # every git command of this store runs under our lock: a git lock found now was left by
            # a process that ended mid-snapshot
            (self.git_dir / "index.lock").unlink(missing_ok=True)
            # status refreshes the index's stat cache too, so the next snapshot reads only what changed
            listed = self._git(
                "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames", "--ignore-submodules=all"
            )
            staged, too_large = [], []
            for entry in listed.split(b"\0"):
                if len(entry) < 4 or entry[1:2] not in b"MDT?" or entry.endswith(b"/"):
                    continue  # unchanged in the work tree, or a nested repository (kept out)
                path = os.fsdecode(entry[3:])
                try:
                    mode = os.lstat(self.root / path)
                except FileNotFoundError:
                    staged.append(path)  # deleted: leaves the index
                    continue
                except OSError:
                    continue
                if stat.S_ISREG(mode.st_mode) and mode.st_size > self.max_file_bytes:
                    too_large.append(path)
                elif stat.S_ISREG(mode.st_mode) or stat.S_ISLNK(mode.st_mode):
                    staged.append(path)
            if staged:
                self._git("update-index", "--add", "--remove", "--replace", "-z", "--stdin", input=nul_joined(staged))
            if too_large:
                self._git("update-index", "--force-remove", "-z", "--stdin", input=nul_joined(too_large))
            tree = self._git("write-tree").decode().strip()
            if staged or not (self.git_dir / "refs" / "heads" / "main").is_file():
                # HEAD is the last snapshot, so that status lists only what changed since (not every file)
                self._git("update-ref", "HEAD", self._git("commit-tree", tree, "-m", "last snapshot").decode().strip())
            if unsaved:
                tree = self._with_buffers(unsaved)
        return Snapshot(tree, frozenset(too_large))

    def _with_buffers(self, unsaved: dict[str, bytes]) -> str:
        """The tree of the index with the buffers' texts in place of their files, written from a copy
        of the index (the index itself keeps the disk's files, whose stat cache makes snapshots cheap)."""
        index = self.git_dir / "index.buffers"
        shutil.copyfile(self.git_dir / "index", index)
        try:
            for path, content in unsaved.items():
                blob = self._git("hash-object", "-w", "--stdin", input=content).decode().strip()
                mode = "100755" if os.access(self.root / path, os.X_OK) else "100644"
                self._git("update-index", "--add", "--cacheinfo", f"{mode},{blob},{path}", index=index)
            return self._git("write-tree", index=index).decode().strip()
        finally:
            index.unlink(missing_ok=True)

    def record(self, before: Snapshot, after: Snapshot, *, label: str = "", conversation: str | None = None) -> Checkpoint | None:
        """Keep a turn that changed files, numbered after the last one; None when it changed none."""
        if before.tree == after.tree:
            return None
        changes = self._changes(before.tree, after.tree)
        too_large = sorted(before.too_large | after.too_large)
        with self._locked():
            turn = max((c.turn for c in self.list()), default=0) + 1
            checkpoint = Checkpoint(turn, now(), label, conversation, [c.describe() for c in changes], too_large)
            parent = self._git("commit-tree", before.tree, "-m", f"before turn {turn}").decode().strip()
            message = json.dumps(checkpoint.describe(), ensure_ascii=False)
            commit = self._git("commit-tree", after.tree, "-p", parent, "-m", message).decode().strip()
            self._git("update-ref", f"{REFS}{turn}", commit)
        return checkpoint

    def _changes(self, before: str, after: str) -> list[FileChange]:
        raw = self._git("diff-tree", "-r", "-z", "--no-renames", "--no-commit-id", before, after).split(b"\0")
        changes = []
        for header, path in zip(raw[0::2], raw[1::2]):
            if not header.startswith(b":"):
                continue
            old_mode, new_mode, old_blob, new_blob, _ = header[1:].decode().split(" ")
            changes.append(FileChange(os.fsdecode(path), blob_or_none(old_blob), blob_or_none(new_blob), old_mode, new_mode))
        return changes

    # -- the kept turns --------------------------------------------------------------
    def list(self) -> list[Checkpoint]:
        """The kept turns, oldest first."""
        if not (self.git_dir / "HEAD").is_file():
            return []
        with self._locked():  # not while a snapshot makes the repository
            listed = self._git("for-each-ref", "--format=%(contents)%00", REFS).split(b"\0\n")
        checkpoints = []
        for message in listed:
            try:
                data = json.loads(message.decode("utf-8", "surrogateescape"))
                checkpoints.append(
                    Checkpoint(
                        int(data["turn"]),
                        str(data["at"]),
                        str(data.get("prompt") or ""),
                        data.get("conversation"),
                        list(data.get("files") or []),
                        list(data.get("tooLarge") or []),
                    )
                )
            except (ValueError, KeyError, TypeError):
                continue  # not one of ours
        return sorted(checkpoints, key=lambda c: c.turn)

    def prune(self, keep_turns: int = KEEP_TURNS, keep_days: float = KEEP_DAYS) -> builtins.list[int]:
        """Forget all but the last ``keep_turns`` turns and any older than ``keep_days``; the turns forgotten."""
        kept = self.list()
        oldest = (datetime.now(UTC) - timedelta(days=keep_days)).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        dropped = [c.turn for i, c in enumerate(kept) if i < len(kept) - keep_turns or c.at < oldest]
        if not dropped:
            return []
        with self._locked():
            for turn in dropped:
                self._git("update-ref", "-d", f"{REFS}{turn}")
            # what only the dropped turns held goes; the index's objects are kept as reachable
            self._git("reflog", "expire", "--expire=now", "--all")
            self._git("prune", "--expire=now")
        return dropped

    # -- rewinding ---------------------------------------------------------------------
    def plan(
        self, turn: int, files: Iterable[str] | None = None, *, force: bool = False, current: CurrentContent | None = None
    ) -> RewindPlan:
        """What rewinding the folder to before ``turn`` does to the files it and the later turns changed.

        Each file goes back to how it was before ``turn``. A file whose content now is not what
        the last of those turns left, or that someone changed between them, is a conflict (the
        person's work); with ``force`` it is restored all the same. ``files`` narrows the rewind
        to those paths; ``current`` gives an editor's unsaved text, which counts as the file's."""
        with self._locked():
            return self._plan(turn, files, force, current)

    def _plan(self, turn: int, files: Iterable[str] | None, force: bool, current: CurrentContent | None) -> RewindPlan:
        kept = {c.turn: c for c in self.list()}
        if turn not in kept:
            known = ", ".join(str(n) for n in kept) or "none"
            raise CheckpointError(f"turn: no checkpoint of turn {turn} in {self.root.name} (kept: {known})")
        turns = [n for n in sorted(kept) if n >= turn]
        expected: dict[str, str | None] = {}  # path -> the blob the last of the turns left (None: no file)
        first: dict[str, str | None] = {}  # path -> the blob before the first of the turns that changed it
        changed_between: set[str] = set()
        for number in turns:
            commit = f"{REFS}{number}"
            for change in self._changes(f"{commit}^^{{tree}}", f"{commit}^{{tree}}"):
                if change.path in expected and expected[change.path] != change.before:
                    changed_between.add(change.path)  # someone changed it after one turn, before the next
                first.setdefault(change.path, change.before)
                expected[change.path] = change.after
        chosen = sorted(expected) if files is None else list(dict.fromkeys(files))
        unknown = [path for path in chosen if path not in expected]
        if unknown:
            raise CheckpointError(f"files: {', '.join(unknown)} not changed by turn {turn} or a later one")
        before = self._entries(f"{REFS}{turn}^^{{tree}}", chosen)
        for path in chosen:  # changed after ``turn`` began, before the first turn that changed it
            if first[path] != before.get(path, (None, ""))[0]:
                changed_between.add(path)
        restores, conflicts = [], []
        blobs = self._read_blobs([blob for blob, _ in before.values()])
        for path in chosen:
            now_blob = self._current_blob(path, current)
            if path in changed_between:
                conflicts.append(Conflict(path, "changed by someone between the turns being rewound"))
            elif now_blob != expected[path]:
                conflicts.append(Conflict(path, changed_since(now_blob, expected[path], current, path)))
            if path in before:
                blob, mode = before[path]
                restores.append(Restore(path, "write", blobs[blob], mode == "100755", mode == "120000"))
            else:
                restores.append(Restore(path, "delete"))
        if force:
            conflicts = []
        return RewindPlan(turn, turns, restores, conflicts)

    def _entries(self, tree: str, paths: builtins.list[str]) -> dict[str, tuple[str, str]]:
        """path -> (blob, mode) in ``tree`` of those of ``paths`` it holds."""
        if not paths:
            return {}
        listed = self._git("ls-tree", "-r", "-z", "--full-tree", tree, "--", *paths)
        entries = {}
        for line in listed.split(b"\0"):
            if line:
                header, path = line.split(b"\t", 1)
                mode, _kind, blob = header.decode().split(" ")
                entries[os.fsdecode(path)] = (blob, mode)
        return entries

    def _read_blobs(self, blobs: builtins.list[str]) -> dict[str, bytes]:
        """Each blob's bytes, in one ``cat-file --batch``."""
        if not blobs:
            return {}
        output = self._git("cat-file", "--batch", input="".join(b + "\n" for b in blobs).encode())
        contents, at = {}, 0
        for _ in blobs:
            header_end = output.index(b"\n", at)
            name, _kind, size = output[at:header_end].decode().split(" ")
            start = header_end + 1
            contents[name] = output[start : start + int(size)]
            at = start + int(size) + 1
        return contents

    def _current_blob(self, path: str, current: CurrentContent | None) -> str | None:
        """The git blob id of the file's content now (the editor's unsaved text first); None when it is gone."""
        content = current(path) if current else None
        if content is None:
            full = self.root / path
            try:
                content = os.readlink(full).encode() if full.is_symlink() else full.read_bytes()
            except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
                return None
        return blob_id(content)

    def apply(self, plan: RewindPlan) -> None:
        """Carry out a plan on disk; the folders a deleted file leaves empty go too."""
        if plan.conflicts:
            raise CheckpointError("a plan with conflicts is not applied")
        for restore in plan.restores:
            path = self.root / restore.path
            if restore.action == "delete":
                if path.is_symlink() or path.is_file():
                    path.unlink()
                remove_empty_parents(path.parent, self.root)
            elif restore.symlink:
                path.parent.mkdir(parents=True, exist_ok=True)
                if path.is_symlink() or path.exists():
                    path.unlink()
                os.symlink(os.fsdecode(restore.content), path)
            else:
                if path.is_symlink():
                    path.unlink()
                write_atomically(path, restore.content)
                mode = path.stat().st_mode
                os.chmod(path, mode | 0o111 if restore.executable else mode & ~0o111)


@dataclass(frozen=True)
class FileChange:
    """One path's change between two trees (blobs None where the path is absent)."""

    path: str
    before: str | None
    after: str | None
    old_mode: str
    new_mode: str

    def describe(self) -> dict[str, str]:
        change = "added" if self.before is None else "deleted" if self.after is None else "modified"
        return {"path": self.path, "change": change}


def refuse_planted(directory: Path) -> None:
    """A store's folder, or the checkpoints folder holding it, that is a symlink (planted to
    redirect our writes): CheckpointError."""
    if directory.is_symlink() or directory.parent.is_symlink():
        raise CheckpointError(f"{directory} is a symlink; checkpoints are not kept through one")


class StoreLock:
    """One folder's store, for one thread and one process at a time (two servers may share a
    folder); reentrant, so a locked method may call another."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.thread_lock = threading.RLock()
        self.file_lock = FileLock(str(directory / "lock"), mode=0o600)

    def __enter__(self) -> None:
        self.thread_lock.acquire()
        try:
            refuse_planted(self.directory)  # before its lock file or its mode is written through one
            private_folder(self.directory)
            self.file_lock.acquire()
        except BaseException:
            self.thread_lock.release()
            raise

    def __exit__(self, *exc: object) -> None:
        try:
            self.file_lock.release()
        finally:
            self.thread_lock.release()


class TurnCheckpoint:
    """One turn's checkpoint: the snapshot before it, taken in the background, and the one after.

    ``ready`` is awaited before the first tool that may change files; a turn that never
    calls one records nothing (its snapshot still readies the next)."""

    def __init__(self, store: CheckpointStore, label: str, conversation: str | None, unsaved: UnsavedBuffers = dict) -> None:
        self.store = store
        self.label = label
        self.conversation = conversation
        self.unsaved = unsaved
        buffers = unsaved()  # as the turn starts, on the loop: the editor's buffers are read there
        self.before: asyncio.Future[Snapshot] = asyncio.ensure_future(store.worker.run(lambda: store.snapshot(buffers)))
        self.needed = False

    async def ready(self) -> None:
        """Wait for the snapshot before the turn (a failure is logged: the turn goes on unprotected)."""
        self.needed = True
        try:
            await asyncio.shield(self.before)
        except (CheckpointError, OSError) as error:
            log.warning("no checkpoint before this turn in %s: %s", self.store.root, error)

    async def finish(self, keep_turns: int = KEEP_TURNS, keep_days: float = KEEP_DAYS) -> Checkpoint | None:
        """Snapshot after the turn and keep what it changed, pruning old turns; None when nothing was changed."""
        if not self.needed or not self.before.done() or self.before.exception() is not None:
            self.before.add_done_callback(_log_failure)
            return None
        try:
            buffers = self.unsaved()
            after = await self.store.worker.run(lambda: self.store.snapshot(buffers))
            before = self.before.result()
            checkpoint = await self.store.worker.run(
                lambda: self.store.record(before, after, label=self.label, conversation=self.conversation)
            )
            if checkpoint is not None:
                await self.store.worker.run(lambda: self.store.prune(keep_turns, keep_days))
            return checkpoint
        except (CheckpointError, OSError) as error:
            log.warning("no checkpoint of this turn in %s: %s", self.store.root, error)
            return None


class Worker:
    """A daemon thread that does one folder's snapshots in order, started once (as the server
    prepares): a turn hands it work without waiting for a thread to start, and a server told to
    exit mid-snapshot does not wait for it (the next snapshot clears the lock git left)."""

    def __init__(self, name: str) -> None:
        self.jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        threading.Thread(target=self._serve, name=name, daemon=True).start()

    def _serve(self) -> None:
        while True:
            self.jobs.get()()

    async def run(self, work: Callable[[], T]) -> T:
        """``work()`` on the worker; its result or its exception here."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[T] = loop.create_future()

        def settle(result: Any, error: BaseException | None) -> None:
            if done.done():
                return
            if error is not None:
                done.set_exception(error)
            else:
                done.set_result(result)

        def job() -> None:
            outcome: tuple[Any, BaseException | None]
            try:
                outcome = (work(), None)
            except BaseException as error:  # reported on the loop, whatever it is
                outcome = (None, error)
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
                loop.call_soon_threadsafe(settle, *outcome)

        self.jobs.put(job)
        return await done


def snapshot_in_background(store: CheckpointStore) -> None:
    """A snapshot nobody waits for (it readies the next one, and starts the folder's worker); a
    failure is logged."""

    def job() -> None:
        try:
            store.snapshot()
        except (CheckpointError, OSError) as error:
            log.warning("checkpoint snapshot of %s failed: %s", store.root, error)

    store.worker.jobs.put(job)


def _log_failure(future: asyncio.Future[Snapshot]) -> None:
    if not future.cancelled() and future.exception() is not None:
        log.warning("checkpoint snapshot failed: %s", future.exception())


def global_excludes() -> str:
    """The person's global ignore file (``core.excludesFile``, else git's default place), honoured too."""
    try:
        named = subprocess.run(
            ["git", "config", "--global", "--path", "--get", "core.excludesFile"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
    except FileNotFoundError:
        return ""
    if named:
        return named
    config_home = os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
    default = Path(config_home) / "git" / "ignore"
    return str(default) if default.is_file() else ""


def blob_id(content: bytes) -> str:
    """The id git gives a blob of ``content`` (the shadow repository uses SHA-1)."""
    return hashlib.sha1(b"blob %d\0" % len(content) + content, usedforsecurity=False).hexdigest()


def blob_or_none(blob: str) -> str | None:
    return None if set(blob) == {"0"} else blob


def changed_since(now_blob: str | None, expected: str | None, current: CurrentContent | None, path: str) -> str:
    if current is not None and current(path) is not None:
        return "has unsaved changes in the editor"
    if now_blob is None:
        return "deleted since the turn"
    if expected is None:
        return "created again since the turn"
    return "changed since the turn"


def nul_joined(paths: list[str]) -> bytes:
    return b"".join(os.fsencode(path) + b"\0" for path in paths)


def remove_empty_parents(folder: Path, root: Path) -> None:
    """Remove ``folder`` and its parents below ``root`` while they are empty."""
    while folder != root and root in folder.parents:
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent
