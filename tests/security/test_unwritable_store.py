"""A conversation store that cannot be written: the person is told once, and every turn goes on.

Each way the store can be unusable is made before the host starts (tests run as root here, so
a read-only folder is made immutable with ``chattr +i`` when permissions would not stop root),
then several turns are run through the host: each ends with its reply, and one warning is shown.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from elelem_lsp.host.conversations import ConversationStore, conversations_dir
from elelem_lsp.host.host import Host
from optional_parts import require
from scaffold import add_plugin

from host.memory_frontend import MemoryFrontend

SCRIPTED = {"workspacePlugins": True, "provider": "scripted"}
TURNS = 4


@contextlib.contextmanager
def read_only(folder: Path) -> Iterator[None]:
    """``folder`` that nothing can be written into, not even by root; skipped when that cannot be made."""
    folder.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        folder.chmod(0o500)
        undo = ["chmod", "700", str(folder)]
    elif shutil.which("chattr") and subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode == 0:
        undo = ["chattr", "-i", str(folder)]
    else:
        why = "a way to make a folder read-only for root (chattr +i, refused here)"
        require(False, "chattr", why, "run as a normal user, or where chattr +i is allowed (CAP_LINUX_IMMUTABLE)")
    try:
        yield
    finally:
        subprocess.run(undo, check=True)


def state_is_a_file(store: ConversationStore) -> None:
    store.base.parent.mkdir(parents=True)
    store.base.write_text("a file where the conversations folder goes")


def folder_is_a_file(store: ConversationStore) -> None:
    store.base.mkdir(parents=True)
    store.directory.write_text("a file where the folder's conversations go")


def folder_is_a_symlink(store: ConversationStore) -> None:
    store.base.mkdir(parents=True)
    elsewhere = store.base.parent / "elsewhere"
    elsewhere.mkdir()
    store.directory.symlink_to(elsewhere)


def conversations_is_a_symlink(store: ConversationStore) -> None:
    store.base.parent.mkdir(parents=True)
    elsewhere = store.base.parent / "elsewhere"
    elsewhere.mkdir()
    store.base.symlink_to(elsewhere)


BROKEN: dict[str, Callable[[ConversationStore], None]] = {
    "the conversations folder is a file": state_is_a_file,
    "the folder's conversations folder is a file": folder_is_a_file,
    "the folder's conversations folder is a symlink": folder_is_a_symlink,
    "the conversations folder is a symlink": conversations_is_a_symlink,
}


async def turns_told(root: Path) -> list[str]:
    """Run ``TURNS`` turns on a fresh host; the warnings it showed about storing."""
    frontend = MemoryFrontend(settings_by_folder={root.as_uri(): SCRIPTED})
    host = Host(frontend)
    host.sync_folders({root.as_uri(): root})
    folder = next(iter(host.agents.values()))
    for n in range(TURNS):
        result = await folder.turn(f"turn {n}")
        assert result["reply"] == "done." and result["error"] is None
    assert [m["content"] for m in folder.session.history][-2:] == [f"turn {TURNS - 1}", "done."]
    return [text for level, text in frontend.messages if "is not stored" in text and level == "warning"]


@pytest.mark.parametrize("broken", BROKEN.values(), ids=BROKEN.keys())
async def test_a_store_that_cannot_be_written_is_told_once_and_turns_go_on(project, broken):
    add_plugin(project, "scripted")
    broken(ConversationStore(project.resolve()))
    told = await turns_told(project)
    assert len(told) == 1, told


@pytest.mark.parametrize("where", ["state", "conversations", "folder"])
async def test_a_read_only_folder_is_told_once_and_turns_go_on(project, where):
    add_plugin(project, "scripted")
    store = ConversationStore(project.resolve())
    folder = {"state": conversations_dir().parent, "conversations": store.base, "folder": store.directory}[where]
    with read_only(folder):
        told = await turns_told(project)
    assert len(told) == 1, told
    assert not list(folder.rglob("*.jsonl"))


async def test_a_conversation_file_that_cannot_be_written_is_told_once(project):
    """The folder is fine but the conversation's file cannot be appended to (a folder in its place)."""
    add_plugin(project, "scripted")
    frontend = MemoryFrontend(settings_by_folder={project.as_uri(): SCRIPTED})
    host = Host(frontend)
    host.sync_folders({project.as_uri(): project})
    folder = next(iter(host.agents.values()))
    folder.open_conversation()
    ConversationStore(project.resolve()).path(folder.current.id).mkdir(parents=True)
    for n in range(TURNS):
        assert (await folder.turn(f"turn {n}"))["reply"] == "done."
    assert len([text for _, text in frontend.messages if "is not stored" in text]) == 1
