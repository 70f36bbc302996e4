"""Checkpoints: each turn's files as they were before it, and what it changed, so it can be rewound.

Bridges a workspace folder to its store of checkpoints, a shadow git repository of ours
(``shadow_git``) under the user's state directory (``checkpoints/<folder>-<hash>``). A snapshot
stages the folder into the shadow index and writes its tree; git's stat cache makes every
snapshot after the first cheap; an editor's unsaved buffers may stand for their files. Files
over ``MAX_FILE_BYTES`` are left out. Turns that changed files are kept as commits
(``refs/elelem/turns/<n>``), pruned to the last N turns or days; a rewind of them is planned
and applied by ``rewind_plan``. Each folder's snapshots run in order on one worker thread
(``agent/bridge.py``'s ``Worker``), as a turn's checkpoint (``turn_checkpoints``) hands them.
"""

from __future__ import annotations

import builtins
import json
import os
import shutil
import stat
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ..agent.bridge import Worker
from ..agent.private_files import state_dir
from .conversations import folder_key, now
from .rewind_plan import CurrentContent, RewindPlan, apply_plan, plan_rewind
from .shadow_git import REFS, ShadowRepository, StoreLock, nul_joined

MAX_FILE_BYTES = 1024 * 1024  # a larger file is not kept, so not restored (docs/checkpoints.md)
KEEP_TURNS = 50
KEEP_DAYS = 30


def checkpoints_dir() -> Path:
    return state_dir() / "checkpoints"


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


# each folder's lock and snapshot worker, shared by its stores in this process
_per_folder: dict[Path, tuple[StoreLock, Worker]] = {}
_per_folder_guard = threading.Lock()


class CheckpointStore(ShadowRepository):
    """One folder's checkpoints, in a shadow git repository keyed by the folder's resolved root."""

    def __init__(self, root: Path, *, base: Path | None = None, max_file_bytes: int = MAX_FILE_BYTES) -> None:
        root = root.resolve()
        self.base = base or checkpoints_dir()
        super().__init__(root, self.base / folder_key(root))
        self.max_file_bytes = max_file_bytes
        with _per_folder_guard:
            if self.directory not in _per_folder:
                _per_folder[self.directory] = (StoreLock(self.directory), Worker(f"elelem-checkpoint-{root.name}"))
            self._lock, self.worker = _per_folder[self.directory]

    def _locked(self) -> StoreLock:
        return self._lock

    # -- snapshots ------------------------------------------------------------------
    def snapshot(self, unsaved: dict[str, bytes] | None = None) -> Snapshot:
        """Stage the folder's files (changed ones only, after the first time) and write their tree;
        ``unsaved`` (path -> an editor buffer's text) stands for those files on disk in the tree."""
        with self._locked():
            self.ready()
            self.sync_excludes()
            # every git command of this store runs under our lock: a git lock found now was left by
            # a process that ended mid-snapshot
            (self.git_dir / "index.lock").unlink(missing_ok=True)
            # status refreshes the index's stat cache too, so the next snapshot reads only what changed
            listed = self.git(
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
                self.git("update-index", "--add", "--remove", "--replace", "-z", "--stdin", input=nul_joined(staged))
            if too_large:
                self.git("update-index", "--force-remove", "-z", "--stdin", input=nul_joined(too_large))
            tree = self.git("write-tree").decode().strip()
            if staged or not (self.git_dir / "refs" / "heads" / "main").is_file():
                # HEAD is the last snapshot, so that status lists only what changed since (not every file)
                self.git("update-ref", "HEAD", self.git("commit-tree", tree, "-m", "last snapshot").decode().strip())
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
                blob = self.git("hash-object", "-w", "--stdin", input=content).decode().strip()
                mode = "100755" if os.access(self.root / path, os.X_OK) else "100644"
                self.git("update-index", "--add", "--cacheinfo", f"{mode},{blob},{path}", index=index)
            return self.git("write-tree", index=index).decode().strip()
        finally:
            index.unlink(missing_ok=True)

    def record(self, before: Snapshot, after: Snapshot, *, label: str = "", conversation: str | None = None) -> Checkpoint | None:
        """Keep a turn that changed files, numbered after the last one; None when it changed none."""
        if before.tree == after.tree:
            return None
        changes = self.changes(before.tree, after.tree)
        too_large = sorted(before.too_large | after.too_large)
        with self._locked():
            turn = max((c.turn for c in self.list()), default=0) + 1
            checkpoint = Checkpoint(turn, now(), label, conversation, [c.describe() for c in changes], too_large)
            parent = self.git("commit-tree", before.tree, "-m", f"before turn {turn}").decode().strip()
            message = json.dumps(checkpoint.describe(), ensure_ascii=False)
            commit = self.git("commit-tree", after.tree, "-p", parent, "-m", message).decode().strip()
            self.git("update-ref", f"{REFS}{turn}", commit)
        return checkpoint

    # -- the kept turns --------------------------------------------------------------
    def list(self) -> list[Checkpoint]:
        """The kept turns, oldest first."""
        if not (self.git_dir / "HEAD").is_file():
            return []
        with self._locked():  # not while a snapshot makes the repository
            listed = self.git("for-each-ref", "--format=%(contents)%00", REFS).split(b"\0\n")
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
                self.git("update-ref", "-d", f"{REFS}{turn}")
            # what only the dropped turns held goes; the index's objects are kept as reachable
            self.git("reflog", "expire", "--expire=now", "--all")
            self.git("prune", "--expire=now")
        return dropped

    # -- rewinding ---------------------------------------------------------------------

    # -- rewinding (rewind_plan.py) ---------------------------------------------------
    def plan(
        self, turn: int, files: Iterable[str] | None = None, *, force: bool = False, current: CurrentContent | None = None
    ) -> RewindPlan:
        """What rewinding the folder to before ``turn`` does to the files it and the later turns
        changed (``rewind_plan.plan_rewind``)."""
        with self._locked():
            kept = [checkpoint.turn for checkpoint in self.list()]
            return plan_rewind(self, kept, turn, files, force=force, current=current)

    def apply(self, plan: RewindPlan) -> None:
        """Carry out a plan on disk (``rewind_plan.apply_plan``)."""
        apply_plan(self.root, plan)
