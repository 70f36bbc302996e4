"""TurnCheckpoints: the part of a folder agent that checkpoints each of its turns (``checkpoints``).

Bridges a folder agent's turns to the folder's store of checkpoints. It snapshots the folder in
the background as the agent prepares, so the first turn's snapshot reads only what changed
since. A turn's checkpoint (``TurnCheckpoint``) starts its snapshot on the folder's worker as
the turn begins; the first tool that may change files waits for it (through the folder's
workspace), and the turn's end snapshots again: the difference of the two trees is what the
turn changed, commands included, kept for the turn's stored entry. What the person sees counts
as the files: an editor's unsaved buffer stands for its file. Rewinding a checkpoint is
``rewinding``.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .checkpoints import KEEP_DAYS, KEEP_TURNS, Checkpoint, CheckpointStore, Snapshot
from .settings import Settings
from .shadow_git import CheckpointError
from .transcript import preview
from .workspace import FrontendWorkspace

log = logging.getLogger(__name__)
LABEL_LENGTH = 80
SNAPSHOT_DELAY = 0.2  # seconds after a turn starts: its request is out, and a model rarely calls a tool sooner
# path -> the text of each editor buffer with unsaved changes (a turn's edits may wait there unsaved)
UnsavedBuffers = Callable[[], dict[str, bytes]]


class TurnCheckpoints:
    def __init__(self, root: Path, settings: Callable[[], Settings], workspace: FrontendWorkspace) -> None:
        self.root = root
        self.settings = settings  # the folder's current settings, read at each turn
        self.workspace = workspace

    @functools.cached_property
    def store(self) -> CheckpointStore:
        """The folder's store, made once: resolving the root and finding its folder is not for every turn's start."""
        return CheckpointStore(self.root)

    def warm(self) -> None:
        """Snapshot the folder in the background ahead of its first turn (nothing is recorded)."""
        if self.settings().checkpoints:
            snapshot_in_background(self.store)

    def begin(self, prompt: str, conversation: str | None) -> TurnCheckpoint | None:
        """Start the checkpoint of the turn that starts now (none with ``checkpoints`` off)."""
        if not self.settings().checkpoints:
            return None
        self.workspace.edited.clear()
        checkpoint = TurnCheckpoint(
            self.store,
            preview(prompt, LABEL_LENGTH),
            conversation,
            lambda: self.unsaved(with_turn_edits=True),
        )
        self.workspace.checkpoint_ready = checkpoint.ready
        return checkpoint

    async def end(self, checkpoint: TurnCheckpoint | None) -> dict[str, Any] | None:
        """Keep what the turn changed; its ``{turn, files, tooLarge}`` for the stored entry, None if nothing."""
        if checkpoint is None:
            return None
        self.workspace.checkpoint_ready = None
        settings = self.settings()
        kept = await checkpoint.finish(settings.checkpoint_turns, settings.checkpoint_days)
        return None if kept is None else {"turn": kept.turn, "files": kept.files, "tooLarge": kept.too_large}

    def unsaved(self, *, with_turn_edits: bool = False) -> dict[str, bytes]:
        """Each editor buffer of the folder whose text is not its file's (a turn's edits wait there until
        saved), by path relative to the folder. With ``with_turn_edits`` (for the turn's own snapshots),
        an edit of the turn the editor applied but has not reported yet (Neovim sends its changes a
        moment later) counts as made."""
        buffers = dict(self.workspace.unsaved_buffers(self.root))
        for path, (before, after) in self.workspace.edited.items() if with_turn_edits else ():
            document = self.workspace.documents.open_document(path)
            if document is None or document.text == before:
                buffers[path] = after
        return {path.relative_to(self.root).as_posix(): text.encode("utf-8") for path, text in buffers.items()}


class TurnCheckpoint:
    """One turn's checkpoint: the snapshot before it, taken in the background, and the one after.

    ``ready`` is awaited before the first tool that may change files; a turn that never
    calls one records nothing (its snapshot, if it began, still readies the next). The snapshot
    starts ``SNAPSHOT_DELAY`` after the turn, or at once when ``ready`` asks for it: its thread
    would otherwise take the interpreter from the turn's first request on its way to the model.
    A turn over sooner takes none."""

    def __init__(self, store: CheckpointStore, label: str, conversation: str | None, unsaved: UnsavedBuffers = dict) -> None:
        self.store = store
        self.label = label
        self.conversation = conversation
        self.unsaved = unsaved
        loop = asyncio.get_running_loop()
        self.before: asyncio.Future[Snapshot] = loop.create_future()
        self.starting = loop.call_later(SNAPSHOT_DELAY, self._start)
        self.started = self.needed = False

    def _start(self) -> None:
        """The snapshot before the turn, begun now (once)."""
        self.starting.cancel()
        if self.started:
            return
        self.started = True
        try:
            buffers = self.unsaved()  # on the loop, where the editor's buffers are read; before any change of the turn
        except Exception as error:  # ready() says it and the turn goes on, as for a failed snapshot
            self.before.set_exception(CheckpointError(f"the editor's buffers could not be read: {error}"))
            return
        taken = asyncio.ensure_future(self.store.worker.run(lambda: self.store.snapshot(buffers)))
        taken.add_done_callback(lambda done: _settle(self.before, done))

    async def ready(self) -> None:
        """Wait for the snapshot before the turn (a failure is logged: the turn goes on unprotected)."""
        self.needed = True
        self._start()
        try:
            await asyncio.shield(self.before)
        except (CheckpointError, OSError) as error:
            log.warning("no checkpoint before this turn in %s: %s", self.store.root, error)

    async def finish(self, keep_turns: int = KEEP_TURNS, keep_days: float = KEEP_DAYS) -> Checkpoint | None:
        """Snapshot after the turn and keep what it changed, pruning old turns; None when nothing was changed."""
        if not self.needed or not self.before.done() or self.before.exception() is not None:
            if not self.started:  # a turn over before its snapshot began needs none
                self.starting.cancel()
                self.before.cancel()
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


def snapshot_in_background(store: CheckpointStore) -> None:
    """A snapshot nobody waits for (it readies the next one, and starts the folder's worker); a
    failure is logged."""

    def job() -> None:
        try:
            store.snapshot()
        except (CheckpointError, OSError) as error:
            log.warning("checkpoint snapshot of %s failed: %s", store.root, error)

    store.worker.put(job)


def _settle(future: asyncio.Future[Snapshot], done: asyncio.Future[Snapshot]) -> None:
    """``future`` given the outcome of ``done``."""
    if future.done():
        return
    if done.cancelled():
        future.cancel()
    elif done.exception() is not None:
        future.set_exception(done.exception())  # type: ignore[arg-type]
    else:
        future.set_result(done.result())


def _log_failure(future: asyncio.Future[Snapshot]) -> None:
    if not future.cancelled() and future.exception() is not None:
        log.warning("checkpoint snapshot failed: %s", future.exception())
