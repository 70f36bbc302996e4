"""ShadowRepository: a workspace folder's shadow git repository, driven with the ``git`` command.

Bridges a folder to a git repository of ours under the user's state directory, never the
person's own ``.git``, index or stash: the store of checkpoints (``checkpoints``) writes its
snapshots and kept turns there, and a rewind (``rewind_plan``) reads them back. The person's
settings play no part (no global or system config, no hooks, no filter: the bytes on disk are
the bytes kept); their ``.gitignore`` files, ``.git/info/exclude`` and global excludes are
honoured. One store is used by one thread and one process at a time (``StoreLock``); its
folders are 0700 and its files 0600 or stricter, and a store planted as a symlink is refused.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock

from ..agent.private_files import private_folder, write_private

REFS = "refs/elelem/turns/"  # one commit a kept turn: its tree after the turn, its parent's before
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


class CheckpointError(Exception):
    """The store cannot do what was asked (no git, no such turn, a path not in the turn)."""


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


class ShadowRepository:
    """The git repository of one folder's checkpoints, kept in ``directory``."""

    def __init__(self, root: Path, directory: Path) -> None:
        self.root = root
        self.directory = directory
        self.git_dir = directory / "git"

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

    def git(self, *args: str, input: bytes | None = None, index: Path | None = None) -> bytes:
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

    def ready(self) -> None:
        """Make the private folders and the shadow repository, once."""
        refuse_planted(self.directory)
        if (self.git_dir / "HEAD").is_file():
            return
        self.git("init", "--quiet", "--template=", "--initial-branch=main")  # no template: no executable hook samples
        for key, value in {**CONFIG, "core.excludesFile": global_excludes()}.items():
            if value:
                self.git("config", key, value)
        private_folder(self.git_dir / "info")
        write_private(self.git_dir / "info" / "attributes", RAW_ATTRIBUTES.encode())

    def sync_excludes(self) -> None:
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

    def changes(self, before: str, after: str) -> list[FileChange]:
        raw = self.git("diff-tree", "-r", "-z", "--no-renames", "--no-commit-id", before, after).split(b"\0")
        changes = []
        for header, path in zip(raw[0::2], raw[1::2]):
            if not header.startswith(b":"):
                continue
            old_mode, new_mode, old_blob, new_blob, _ = header[1:].decode().split(" ")
            changes.append(FileChange(os.fsdecode(path), blob_or_none(old_blob), blob_or_none(new_blob), old_mode, new_mode))
        return changes

    def entries(self, tree: str, paths: list[str]) -> dict[str, tuple[str, str]]:
        """path -> (blob, mode) in ``tree`` of those of ``paths`` it holds."""
        if not paths:
            return {}
        listed = self.git("ls-tree", "-r", "-z", "--full-tree", tree, "--", *paths)
        entries = {}
        for line in listed.split(b"\0"):
            if line:
                header, path = line.split(b"\t", 1)
                mode, _kind, blob = header.decode().split(" ")
                entries[os.fsdecode(path)] = (blob, mode)
        return entries

    def read_blobs(self, blobs: list[str]) -> dict[str, bytes]:
        """Each blob's bytes, in one ``cat-file --batch``."""
        if not blobs:
            return {}
        output = self.git("cat-file", "--batch", input="".join(b + "\n" for b in blobs).encode())
        contents, at = {}, 0
        for _ in blobs:
            header_end = output.index(b"\n", at)
            name, _kind, size = output[at:header_end].decode().split(" ")
            start = header_end + 1
            contents[name] = output[start : start + int(size)]
            at = start + int(size) + 1
        return contents


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


def nul_joined(paths: list[str]) -> bytes:
    return b"".join(os.fsencode(path) + b"\0" for path in paths)
