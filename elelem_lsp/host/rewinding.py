"""The operations on a folder's checkpoints (``checkpoints``), as a face asks for them: list the
turns kept, and rewind to before one.

Each takes the folder's agent (whose ``turn_checkpoints`` keeps each turn's checkpoint). A rewind
puts back the files (an editor's unsaved buffer counts as a change of its file, also one the editor
is asked for, as an ACP client's; the editor makes the change where it can, so its undo takes it
back, and the disk takes what it cannot, such as a deletion for an ACP client), and with ``conversation`` the model's history
too, as a ``rewind`` entry of the stored conversation (nothing stored is deleted). A rewind is
itself kept as a checkpoint, so that rewinding it undoes it. The store's work runs on the folder's
worker, in order with the turns' snapshots. What names no turn or file is
``BadRequest``; what cannot be done now is ``Refused``.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from ..agent.textfile import for_model
from ..agent.wording import rewind_text
from ..agent.workspace import WorkspaceError
from .checkpoints import Checkpoint, CheckpointStore
from .conversations import ConversationStore, checkpoint_of, history_from, now
from .folder_agent import FolderAgent
from .frontend import BadRequest, Refused, RestoredFile
from .rewind_plan import Restore, RewindPlan, remove_empty_parents
from .shadow_git import CheckpointError


async def checkpoints(agent: FolderAgent) -> list[dict[str, Any]]:
    """The folder's kept turns that changed files, newest first, with the files (none with
    ``checkpoints`` off)."""
    await agent.refresh_settings()
    if not agent.settings.checkpoints:
        return []
    try:
        store = CheckpointStore(agent.root)
        kept = await store.worker.run(store.list)
    except (CheckpointError, OSError) as error:
        raise Refused(f"the checkpoints of {agent.root.name} cannot be read: {error}") from None
    return [checkpoint.describe() for checkpoint in reversed(kept)]


async def rewind(
    agent: FolderAgent, turn: int, files: list[str] | None = None, *, conversation: bool = False, force: bool = False
) -> dict[str, Any]:
    """Put the files (and with ``conversation`` the history) back to before ``turn``.

    With a conflict (a file changed since, an unsaved buffer) and no ``force``, nothing is
    done and the answer lists them; ``files`` narrows the rewind to those paths."""
    await agent.ready_conversation()
    agent.refuse_while_running("rewinding")
    if not agent.settings.checkpoints:
        raise Refused(f"checkpoints are off in {agent.root.name} (the checkpoints setting)")
    entries = conversation_entries(agent, turn) if conversation else None
    unsaved = agent.turn_checkpoints.unsaved()
    store = CheckpointStore(agent.root)
    try:
        plan = await store.worker.run(lambda: store.plan(turn, files, force=force, current=unsaved.get))
        asked = await unsaved_in_editor(agent, [restore.path for restore in plan.restores if restore.path not in unsaved])
        if asked:  # buffers the editor is asked for (an ACP client's): each counts as a change of its file
            unsaved |= asked
            plan = await store.worker.run(lambda: store.plan(turn, files, force=force, current=unsaved.get))
        undo = None if plan.conflicts else await apply(agent, store, plan)
    except CheckpointError as error:
        if str(error).startswith(("turn:", "files:")):
            raise BadRequest(str(error)) from None
        raise Refused(f"could not rewind {agent.root.name}: {error}") from None
    except OSError as error:
        raise Refused(f"could not rewind {agent.root.name}: {error}") from None
    rewound = not plan.conflicts
    if rewound and entries is not None:
        entry = {"kind": "rewind", "checkpoint": turn, "at": now()}
        agent.current.store_entry(entry)
        agent.continue_conversation(agent.current.id or "", history_from([*entries, entry]))
    answer = {
        **plan.describe(),
        "rewound": rewound,
        "conversation": rewound and entries is not None,
        "undo": undo.turn if undo else None,
    }
    return answer | {"text": rewind_text(answer)}


async def apply(agent: FolderAgent, store: CheckpointStore, plan: RewindPlan) -> Checkpoint | None:
    """Carry out the plan: the text files through the editor when it can (its undo takes them
    back), the rest on disk, kept as a checkpoint (rewinding that undoes it)."""
    in_editor = {restore.path: file for restore in plan.restores if (file := editable(agent.root, restore)) is not None}
    if in_editor:
        label = f"elelem: rewind to before turn {plan.turn}"
        answer = await agent.frontend.restore_files(list(in_editor.values()), label)
        if answer is None:
            in_editor = await restore_open_buffers(agent, in_editor)
        elif not answer[0]:
            raise Refused(f"the editor did not rewind the files: {answer[1] or 'it refused the edit'}")
        for file in in_editor.values():
            if file.text is None:
                remove_empty_parents(file.path.parent, agent.root)
    rest = [restore for restore in plan.restores if restore.path not in in_editor]
    if not rest:
        return None
    kept = replace(plan, restores=rest)
    return await store.worker.run(lambda: apply_kept(store, kept, agent.current.id))


async def restore_open_buffers(agent: FolderAgent, files: dict[str, RestoredFile]) -> dict[str, RestoredFile]:
    """For an editor that cannot create or delete files (eglot, Helix, an ACP client): each file it
    has (an open buffer; any file an ACP client reads) goes back as an ordinary edit of it, undoable
    there (the disk is written when the person saves); the files it took."""
    taken: dict[str, RestoredFile] = {}
    if not agent.frontend.can_edit:
        return taken
    for path, file in files.items():
        if file.text is None or await agent.frontend.read_document(file.path) is None:
            continue
        text = for_model(file.text)

        def as_it_was(_now: str | None, text: str = text) -> str:
            return text

        try:
            await agent.workspace.update(file.path, as_it_was, tool="rewind")
        except WorkspaceError as error:
            raise Refused(f"the editor did not rewind {path}: {error}") from None
        taken[path] = file
    return taken


async def unsaved_in_editor(agent: FolderAgent, paths: list[str]) -> dict[str, bytes]:
    """Those of ``paths`` (relative to the folder) whose text in the editor, asked for where it must
    be (``read_document``: an ACP client's ``fs/read_text_file``), is not their file's; line endings
    alone are no change (an editor may show CRLF as LF)."""
    found: dict[str, bytes] = {}
    for relative in paths:
        path = agent.root / relative
        if path.is_symlink():
            continue
        document = await agent.frontend.read_document(path)
        if document is None:
            continue
        try:
            on_disk: str | None = path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            on_disk = None
        if on_disk is None or for_model(document.text) != for_model(on_disk):
            found[relative] = document.text.encode("utf-8")
    return found


def editable(root: Path, restore: Restore) -> RestoredFile | None:
    """The restore as an editor can make it (text in UTF-8, no link, the file's mode unchanged), or None."""
    path = root / restore.path
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


def conversation_entries(agent: FolderAgent, turn: int) -> list[dict[str, Any]]:
    """The current conversation's entries, when its history can go back to before ``turn``."""
    if not agent.settings.history or agent.current.id is None:
        raise Refused(f"conversation: history is off in {agent.root.name}, so the conversation cannot be rewound")
    try:
        entries = ConversationStore(agent.root).entries(agent.current.id)
    except OSError as error:
        raise Refused(f"the conversation of {agent.root.name} cannot be read: {error}") from None
    at = next((i for i, e in enumerate(entries) if e["kind"] == "turn" and checkpoint_of(e) == turn), None)
    if at is None:
        raise Refused(f"conversation: turn {turn} is not in the current conversation; rewind its files alone")
    if any(entry["kind"] in ("compaction", "reset") for entry in entries[at:]):
        raise Refused(f"conversation: turn {turn} was compacted or reset away since; rewind its files alone")
    return entries
