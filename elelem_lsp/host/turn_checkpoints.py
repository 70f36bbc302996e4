"""TurnCheckpoints: the part of a folder agent that checkpoints each of its turns (``checkpoints``).

Snapshots the folder in the background as the agent prepares, so the first turn's snapshot
reads only what changed since; starts each turn's checkpoint and hands the wait for it to the
folder's workspace (the first tool that may change files waits there); keeps what the turn
changed for its stored entry. What the person sees counts as the files: an editor's unsaved
buffer stands for its file. Rewinding a checkpoint is ``rewinding``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from .checkpoints import CheckpointStore, TurnCheckpoint, snapshot_in_background
from .settings import Settings
from .transcript import preview
from .workspace import FrontendWorkspace

LABEL_LENGTH = 80


class TurnCheckpoints:
    def __init__(self, root: Path, settings: Callable[[], Settings], workspace: FrontendWorkspace) -> None:
        self.root = root
        self.settings = settings  # the folder's current settings, read at each turn
        self.workspace = workspace

    def warm(self) -> None:
        """Snapshot the folder in the background ahead of its first turn (nothing is recorded)."""
        if self.settings().checkpoints:
            snapshot_in_background(CheckpointStore(self.root))

    def begin(self, prompt: str, conversation: str | None) -> TurnCheckpoint | None:
        """Start the checkpoint of the turn that starts now (none with ``checkpoints`` off)."""
        if not self.settings().checkpoints:
            return None
        self.workspace.edited.clear()
        checkpoint = TurnCheckpoint(
            CheckpointStore(self.root),
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
