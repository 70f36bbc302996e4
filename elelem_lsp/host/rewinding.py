"""Rewinding: a folder's turns kept as checkpoints (``checkpoints``), in the host's terms.

Starts each turn's checkpoint and hands the wait for it to the folder's workspace (the
first tool that may change files waits there), keeps what the turn changed for its stored
entry, lists a folder's checkpoints, and rewinds to before one: the files (an editor's
unsaved buffer counts as a change of its file), and with ``conversation`` the model's
history too, as a ``rewind`` entry of the stored conversation (nothing stored is deleted).
A rewind is itself kept as a checkpoint, so that rewinding it undoes it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ..agent.textfile import for_model
from ..agent.workspace import WorkspaceError
from .checkpoints import (
    Checkpoint,
    CheckpointError,
    CheckpointStore,
    Restore,
    RewindPlan,
    TurnCheckpoint,
    remove_empty_parents,
    snapshot_in_background,
)
from .conversations import ConversationStore, checkpoint_of, history_from, now
from .folders import Folder
from .frontend import BadRequest, Refused, RestoredFile
from .transcript import preview

LABEL_LENGTH = 80


def warm(folder: Folder) -> None:
    """Snapshot the folder in the background ahead of its first turn (nothing is recorded), so that
    turn's snapshot reads only the files changed since, not every file."""
    if folder.settings.checkpoints:
        snapshot_in_background(CheckpointStore(folder.root))


def begin(folder: Folder, prompt: str) -> TurnCheckpoint | None:
    """Start the checkpoint of the turn that starts now (none with ``checkpoints`` off)."""
    if not folder.settings.checkpoints:
        return None
    folder.workspace.edited.clear()
    checkpoint = TurnCheckpoint(
        CheckpointStore(folder.root),
        preview(prompt, LABEL_LENGTH),
        folder.conversation,
        lambda: unsaved_buffers(folder, with_turn_edits=True),
    )
    folder.workspace.checkpoint_ready = checkpoint.ready
    return checkpoint


async def end(folder: Folder, checkpoint: TurnCheckpoint | None) -> dict[str, Any] | None:
    """Keep what the turn changed; its ``{turn, files, tooLarge}`` for the stored entry, None if nothing."""
    if checkpoint is None:
        return None
    folder.workspace.checkpoint_ready = None
    kept = await checkpoint.finish(folder.settings.checkpoint_turns, folder.settings.checkpoint_days)
    return None if kept is None else {"turn": kept.turn, "files": kept.files, "tooLarge": kept.too_large}


def unsaved_buffers(folder: Folder, *, with_turn_edits: bool = False) -> dict[str, bytes]:
    """Each editor buffer of the folder whose text is not its file's (a turn's edits wait there until
    saved), by path relative to the folder: what the person sees counts as the file. With
    ``with_turn_edits`` (for the turn's own snapshots), an edit of the turn the editor applied but
    has not reported yet (Neovim sends its changes a moment later) counts as made."""
    buffers = dict(folder.workspace.unsaved_buffers(folder.root))
    for path, (before, after) in folder.workspace.edited.items() if with_turn_edits else ():
        document = folder.frontend.open_document(path)
        if document is None or document.text == before:
            buffers[path] = after
    return {path.relative_to(folder.root).as_posix(): text.encode("utf-8") for path, text in buffers.items()}


async def listing(folder: Folder) -> list[dict[str, Any]]:
    """The folder's kept turns that changed files, newest first (none with ``checkpoints`` off)."""
    if not folder.settings.checkpoints:
        return []
    try:
        kept = await asyncio.to_thread(CheckpointStore(folder.root).list)
    except (CheckpointError, OSError) as error:
        raise Refused(f"the checkpoints of {folder.root.name} cannot be read: {error}") from None
    return [checkpoint.describe() for checkpoint in reversed(kept)]


async def rewind(
    folder: Folder,
    turn: int,
    files: list[str] | None,
    *,
    conversation: bool,
    force: bool,
    store_entry: Callable[[dict[str, Any]], None],
) -> dict[str, Any]:
    """Put the files (and with ``conversation`` the history) back to before ``turn``.

    With a conflict (a file changed since, an unsaved buffer) and no ``force``, nothing is
    done and the answer lists them; ``files`` narrows the rewind to those paths."""
    if not folder.settings.checkpoints:
        raise Refused(f"checkpoints are off in {folder.root.name} (the checkpoints setting)")
    entries = conversation_entries(folder, turn) if conversation else None
    unsaved = unsaved_buffers(folder)
    store = CheckpointStore(folder.root)
    try:
        plan = await asyncio.to_thread(store.plan, turn, files, force=force, current=unsaved.get)
        undo = None if plan.conflicts else await apply(folder, store, plan)
    except CheckpointError as error:
        if str(error).startswith(("turn:", "files:")):
            raise BadRequest(str(error)) from None
        raise Refused(f"could not rewind {folder.root.name}: {error}") from None
    except OSError as error:
        raise Refused(f"could not rewind {folder.root.name}: {error}") from None
    rewound = not plan.conflicts
    if rewound and entries is not None:
        entry = {"kind": "rewind", "checkpoint": turn, "at": now()}
        store_entry(entry)
        folder.continue_conversation(folder.conversation or "", history_from([*entries, entry]))
    return {
        **plan.describe(),
        "rewound": rewound,
        "conversation": rewound and entries is not None,
        "undo": undo.turn if undo else None,
    }


async def apply(folder: Folder, store: CheckpointStore, plan: RewindPlan) -> Checkpoint | None:
    """Carry out the plan: the text files through the editor when it can (its undo takes them
    back), the rest on disk, kept as a checkpoint (rewinding that undoes it)."""
    in_editor = {restore.path: file for restore in plan.restores if (file := editable(folder, restore)) is not None}
    if in_editor:
        label = f"elelem: rewind to before turn {plan.turn}"
        answer = await folder.frontend.restore_files(list(in_editor.values()), label)
        if answer is None:
            in_editor = await restore_open_buffers(folder, in_editor)
        elif not answer[0]:
            raise Refused(f"the editor did not rewind the files: {answer[1] or 'it refused the edit'}")
        for file in in_editor.values():
            if file.text is None:
                remove_empty_parents(file.path.parent, folder.root)
    rest = [restore for restore in plan.restores if restore.path not in in_editor]
    if not rest:
        return None
    return await asyncio.to_thread(apply_kept, store, replace(plan, restores=rest), folder.conversation)


async def restore_open_buffers(folder: Folder, files: dict[str, RestoredFile]) -> dict[str, RestoredFile]:
    """For an editor that cannot create or delete files (eglot, Helix): each open buffer goes back
    as an ordinary edit of it, undoable there (the disk is written when the person saves); the
    files it took."""
    taken: dict[str, RestoredFile] = {}
    if not folder.frontend.can_edit:
        return taken
    for path, file in files.items():
        if file.text is None or folder.frontend.open_document(file.path) is None:
            continue
        text = for_model(file.text)
        try:
            await folder.workspace.update(file.path, lambda _old, text=text: text, tool="rewind")
        except WorkspaceError as error:
            raise Refused(f"the editor did not rewind {path}: {error}") from None
        taken[path] = file
    return taken


def editable(folder: Folder, restore: Restore) -> RestoredFile | None:
    """The restore as an editor can make it (text in UTF-8, no link, the file's mode unchanged), or None."""
    path = folder.root / restore.path
    if path.is_symlink() or restore.symlink:
        return None
    if restore.action == "delete":
        return RestoredFile(path, None)
    try:
        text = restore.content.decode("utf-8")
        if (path.stat().st_mode & 0o100 != 0) != restore.executable:
            return None
        path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return None if restore.executable else RestoredFile(path, text)
    except (OSError, UnicodeDecodeError):
        return None
    return RestoredFile(path, text)


def apply_kept(store: CheckpointStore, plan: RewindPlan, conversation: str | None) -> Checkpoint | None:
    """Apply the plan between two snapshots, so the rewind is a checkpoint too (its undo)."""
    before = store.snapshot()
    store.apply(plan)
    return store.record(before, store.snapshot(), label=f"rewind to before turn {plan.turn}", conversation=conversation)


def conversation_entries(folder: Folder, turn: int) -> list[dict[str, Any]]:
    """The current conversation's entries, when its history can go back to before ``turn``."""
    if not folder.settings.history or folder.conversation is None:
        raise Refused(f"conversation: history is off in {folder.root.name}, so the conversation cannot be rewound")
    try:
        entries = ConversationStore(folder.root).entries(folder.conversation)
    except OSError as error:
        raise Refused(f"the conversation of {folder.root.name} cannot be read: {error}") from None
    at = next((i for i, e in enumerate(entries) if e["kind"] == "turn" and checkpoint_of(e) == turn), None)
    if at is None:
        raise Refused(f"conversation: turn {turn} is not in the current conversation; rewind its files alone")
    if any(entry["kind"] in ("compaction", "reset") for entry in entries[at:]):
        raise Refused(f"conversation: turn {turn} was compacted or reset away since; rewind its files alone")
    return entries
