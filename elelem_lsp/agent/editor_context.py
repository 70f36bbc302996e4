"""The editor's context of a turn: what the person was looking at when they asked, as the model
reads it after their words.

A face fills an ``EditorContext`` with what it knows (the LSP server: the document asked from,
the selection, the documents open in the editor; ACP and the terminal: the folder alone) and
``render`` turns it into a few lines: the active document and the selected lines (when they are
short), the other open documents, and git's branch and uncommitted changes. The block is bounded
(``CONTEXT_TOKENS`` by the budget's estimate): long lists are cut with a count of what was left
out, a long selection is named by its lines for the model to read, never pasted whole.

The branch is read from ``.git/HEAD`` itself; the changes come from ``git status``, with a short
timeout, and only in a folder the editor trusts: git runs commands a repository's own
configuration names, which a folder from elsewhere may carry. A face that keeps a folder's
``KnownChanges`` never waits for git on an ask: the block says what git said when last asked,
and git is asked again in the background when something may have changed it (the end of a turn,
a saved file, and an ask, once its request is on its way), so the next ask sees it. Without one,
``render`` runs git itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path

from .budget import cut_text, estimate_tokens

log = logging.getLogger(__name__)

CONTEXT_TOKENS = 2000  # the most the block may take, by the budget's estimate
SELECTION_TOKENS = 1200  # the most of it selected lines may take; longer ones are named, not shown
OPEN_NAMED = 20  # open documents named before "and N more"
CHANGES_NAMED = 10  # changed files named before "and N more": git's status kept short
BACKTICKS = re.compile(r"`{3,}")
HEAD_BYTES = 4096  # of .git/HEAD, which holds one line
GIT_TIMEOUT = 2.0  # seconds git status may take before the block goes without it
READ_AGAIN_AFTER_ASK = 0.2  # seconds: starting git holds the event loop, so not before the ask's request is out
# Git may not start a file-system monitor or take the index lock for a status someone else is not waiting for.
GIT_STATUS = ["git", "-c", "core.fsmonitor=false", "--no-optional-locks", "status", "--porcelain=v1", "-z"]


@dataclass
class ActiveDocument:
    """The document the person asked from: how it is named, and the lines selected in it."""

    name: str  # workspace-relative path, or the URI of a document that is not a file
    label: str = "File"  # "Buffer" for a document that is not a file
    language: str | None = None
    lines: tuple[int, int] | None = None  # the first and last selected line, from 1 (the cursor's line alone)
    text: str | None = None  # those lines' text
    note: str | None = None  # why there is no text, when it could not be had


class KnownChanges:
    """A folder's uncommitted changes as git last gave them, read again in the background on
    ``refresh`` (one ``git status`` at a time; a refresh asked meanwhile runs once it ends)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.changes: list[str] | None = None  # None: git could not say
        self.known = False  # whether git has answered once
        self.reading: asyncio.Task[None] | None = None
        self.stale = False  # a refresh was asked while git ran

    def refresh(self, delay: float = 0.0) -> None:
        """Read git's state again, ``delay`` seconds from now (none outside a repository)."""
        loop = asyncio.get_running_loop()
        if delay:
            loop.call_later(delay, self.refresh)
        elif self.reading is not None and not self.reading.done() and self.reading.get_loop() is loop:
            self.stale = True
        elif git_branch(self.root) is not None:
            self.reading = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        self.stale = True
        while self.stale:
            self.stale = False
            self.changes, self.known = await git_changes(self.root), True


_known_changes: dict[Path, KnownChanges] = {}


def known_changes(root: Path) -> KnownChanges:
    """The folder's ``KnownChanges``, one per folder for the process."""
    if root not in _known_changes:
        _known_changes[root] = KnownChanges(root)
    return _known_changes[root]


@dataclass
class EditorContext:
    """What a face knows of the editor when the person asks."""

    root: Path
    active: ActiveDocument | None = None
    open_documents: list[str] = field(default_factory=list)  # the others, named as ``ActiveDocument.name``
    trusted: bool = True  # whether git may be run in the folder
    known: KnownChanges | None = None  # git's state as last read; None: git status is run now


def named(names: list[str], limit: int) -> str:
    """``a, b, c`` and, past ``limit``, how many more."""
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def describe_active(active: ActiveDocument, with_text: bool = True) -> str:
    """``File: src/app.py (lines 3-4)`` and the lines in a fence, or why they are not shown."""
    if active.note:
        return f"{active.label}: {active.name} ({active.note})"
    if active.lines is None:
        return f"{active.label}: {active.name}" + (f" ({active.language})" if active.language else "")
    first, last = active.lines
    where = f"lines {first}-{last}" if last > first else f"line {first}"
    text = (active.text or "").rstrip()
    if with_text and estimate_tokens(text) <= SELECTION_TOKENS:
        fence = "`" * max(3, 1 + max(map(len, BACKTICKS.findall(text)), default=0))  # longer than any run inside
        return f"{active.label}: {active.name} ({where})\n{fence}{active.language or ''}\n{text}\n{fence}"
    hint = f"; read it with offset={first} and limit={last - first + 1}" if active.label == "File" else ""
    return f"{active.label}: {active.name} ({where}: too long to show here{hint})"


def small_file(path: Path) -> str | None:
    """The start of a regular file's text (never a FIFO or a device a link may lead to); None if there is none."""
    try:
        if not path.is_file():  # raises for a folder on the way it may not enter
            return None
        with path.open("rb") as handle:
            return handle.read(HEAD_BYTES).decode("utf-8", "replace").partition("\n")[0].strip()
    except OSError:
        return None


def git_branch(root: Path) -> str | None:
    """``branch main`` (or ``detached HEAD at 1a2b3c4d5e6f``) of the repository ``root`` is in,
    read from its ``HEAD``; None outside a repository."""
    for top in (root, *root.parents):
        dot_git = top / ".git"
        link = small_file(dot_git)  # a worktree or submodule: "gitdir: <path>"
        if link is not None:
            dot_git = top / link.removeprefix("gitdir:").strip()
        head = small_file(dot_git / "HEAD")
        if head is not None:
            if head.startswith("ref: refs/heads/"):
                return f"branch {head.removeprefix('ref: refs/heads/')}"
            return f"detached HEAD at {head[:12]}"
    return None


async def git_changes(root: Path) -> list[str] | None:
    """``git status --porcelain`` of ``root``: ``M src/app.py``, ``?? new.txt``... None when git
    could not say (not installed, failed, too slow)."""
    try:
        process = await asyncio.create_subprocess_exec(
            *GIT_STATUS,
            cwd=root,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
    except OSError:
        return None
    try:
        output, _ = await asyncio.wait_for(process.communicate(), GIT_TIMEOUT)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()
        return None
    if process.returncode != 0:
        return None
    entries = output.decode("utf-8", "replace").split("\0")
    changes, skip = [], False
    for entry in entries:
        if skip or not entry:  # a rename's second path: its old name, already counted
            skip = False
            continue
        changes.append(f"{entry[:2].strip()} {entry[3:]}")
        skip = entry[0] in "RC"
    return changes


async def describe_git(context: EditorContext) -> str:
    """``Git: branch main; 2 uncommitted changes: M a.py, ?? b.txt``; empty outside a repository."""
    branch = git_branch(context.root)
    if branch is None:
        return ""
    if not context.trusted:
        return f"Git: {branch} (changes not listed: the folder is not trusted)"
    if context.known is None:
        changes = await git_changes(context.root)
    elif context.known.known:
        changes = context.known.changes
    else:
        return f"Git: {branch} (git status has not answered yet)"
    if changes is None:
        return f"Git: {branch} (git status could not say what changed)"
    if not changes:
        return f"Git: {branch}; no uncommitted changes"
    counted = f"{len(changes)} uncommitted change" + ("" if len(changes) == 1 else "s")
    return f"Git: {branch}; {counted}: {named(changes, CHANGES_NAMED)}"


async def render(context: EditorContext, limit: int = CONTEXT_TOKENS) -> str:
    """The block the model reads after the person's words; empty when there is nothing to say."""
    try:
        git = await describe_git(context)
    except Exception:  # git's state is a nicety: the ask goes on without it
        log.exception("could not describe git's state of %s", context.root)
        git = ""
    others = [name for name in context.open_documents if context.active is None or name != context.active.name]
    parts = [
        describe_active(context.active) if context.active else "",
        f"Open in the editor: {named(others, OPEN_NAMED)}" if others else "",
        git,
    ]
    block = "\n".join(part for part in parts if part)
    if estimate_tokens(block) > limit and context.active is not None:
        parts[0] = describe_active(context.active, with_text=False)
        block = "\n".join(part for part in parts if part)
    return cut_text(block, limit, estimate_tokens)
