"""A rewind planned and applied: the files a folder's kept turns changed, put back as they were.

Bridges the kept turns of a folder's shadow repository (``shadow_git``, written by
``checkpoints``) to the files on disk. A plan (``RewindPlan``) is plain data a face may apply as
an editor's edit (``rewinding``): each file the turns changed goes back to how it was before the
first of them. A file whose content now is not what the last of them left (the person's work,
an editor's unsaved buffer) or that someone changed between them is a conflict, left alone
unless forced.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..agent.workspace import write_atomically
from .shadow_git import REFS, CheckpointError, ShadowRepository, blob_id

# The current bytes of a file as the person sees it (an editor's unsaved buffer), or None to read the disk.
CurrentContent = Callable[[str], bytes | None]


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


def plan_rewind(
    repository: ShadowRepository,
    kept: Iterable[int],
    turn: int,
    files: Iterable[str] | None = None,
    *,
    force: bool = False,
    current: CurrentContent | None = None,
) -> RewindPlan:
    """What rewinding the folder to before ``turn`` does to the files it and the later ``kept``
    turns changed (see the module's docstring); ``files`` narrows the rewind to those paths;
    ``current`` gives an editor's unsaved text, which counts as the file's."""
    numbers = sorted(set(kept))
    if turn not in numbers:
        known = ", ".join(str(n) for n in numbers) or "none"
        raise CheckpointError(f"turn: no checkpoint of turn {turn} in {repository.root.name} (kept: {known})")
    turns = [n for n in numbers if n >= turn]
    expected: dict[str, str | None] = {}  # path -> the blob the last of the turns left (None: no file)
    first: dict[str, str | None] = {}  # path -> the blob before the first of the turns that changed it
    changed_between: set[str] = set()
    for number in turns:
        commit = f"{REFS}{number}"
        for change in repository.changes(f"{commit}^^{{tree}}", f"{commit}^{{tree}}"):
            if change.path in expected and expected[change.path] != change.before:
                changed_between.add(change.path)  # someone changed it after one turn, before the next
            first.setdefault(change.path, change.before)
            expected[change.path] = change.after
    chosen = sorted(expected) if files is None else list(dict.fromkeys(files))
    unknown = [path for path in chosen if path not in expected]
    if unknown:
        raise CheckpointError(f"files: {', '.join(unknown)} not changed by turn {turn} or a later one")
    before = repository.entries(f"{REFS}{turn}^^{{tree}}", chosen)
    for path in chosen:  # changed after ``turn`` began, before the first turn that changed it
        if first[path] != before.get(path, (None, ""))[0]:
            changed_between.add(path)
    restores, conflicts = [], []
    blobs = repository.read_blobs([blob for blob, _ in before.values()])
    for path in chosen:
        now_blob = current_blob(repository.root, path, current)
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


def apply_plan(root: Path, plan: RewindPlan) -> None:
    """Carry out a plan on disk; the folders a deleted file leaves empty go too."""
    if plan.conflicts:
        raise CheckpointError("a plan with conflicts is not applied")
    for restore in plan.restores:
        path = root / restore.path
        if restore.action == "delete":
            if path.is_symlink() or path.is_file():
                path.unlink()
            remove_empty_parents(path.parent, root)
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


def current_blob(root: Path, path: str, current: CurrentContent | None) -> str | None:
    """The git blob id of the file's content now (the editor's unsaved text first); None when it is gone."""
    content = current(path) if current else None
    if content is None:
        full = root / path
        try:
            content = os.readlink(full).encode() if full.is_symlink() else full.read_bytes()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None
    return blob_id(content)


def changed_since(now_blob: str | None, expected: str | None, current: CurrentContent | None, path: str) -> str:
    if current is not None and current(path) is not None:
        return "has unsaved changes in the editor"
    if now_blob is None:
        return "deleted since the turn"
    if expected is None:
        return "created again since the turn"
    return "changed since the turn"


def remove_empty_parents(folder: Path, root: Path) -> None:
    """Remove ``folder`` and its parents below ``root`` while they are empty."""
    while folder != root and root in folder.parents:
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent
