"""The checkpoint store on real files with real git: what a turn changed, and rewinding it.

A "turn" here is what the host does around one: a snapshot, the turn's changes (edits,
writes, a shell command's doings), a snapshot again, recorded."""

from __future__ import annotations

import asyncio
import os
import stat
import subprocess
from pathlib import Path

import pytest

from elelem_lsp.host.checkpoints import CheckpointStore, checkpoints_dir
from elelem_lsp.host.shadow_git import CheckpointError
from elelem_lsp.host.turn_checkpoints import TurnCheckpoint


def turn(store: CheckpointStore, change, label: str = "a turn"):
    """Run ``change`` between two snapshots and keep what it did."""
    before = store.snapshot()
    change()
    return store.record(before, store.snapshot(), label=label)


def files_of(root: Path) -> dict[str, bytes]:
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and ".git" not in path.relative_to(root).parts
    }


@pytest.fixture
def store(project) -> CheckpointStore:
    return CheckpointStore(project)


def test_an_edit_and_a_write_are_listed_and_rewound(project, store):
    (project / "a.py").write_text("x = 1\n")
    before = files_of(project)
    checkpoint = turn(store, lambda: ((project / "a.py").write_text("x = 2\n"), (project / "b.py").write_text("new\n")))
    assert checkpoint.turn == 1
    assert checkpoint.files == [{"path": "a.py", "change": "modified"}, {"path": "b.py", "change": "added"}]
    plan = store.plan(1)
    assert plan.conflicts == [] and plan.describe()["files"] == [
        {"path": "a.py", "action": "write"},
        {"path": "b.py", "action": "delete"},
    ]
    store.apply(plan)
    assert files_of(project) == before


def test_a_command_that_edits_creates_renames_and_deletes_is_rewound(project, store):
    (project / "src").mkdir()
    (project / "src" / "old.txt").write_text("old\n")
    (project / "gone.txt").write_text("gone\n")
    (project / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (project / "run.sh").chmod(0o755)
    before = files_of(project)
    script = "echo more >> README.md && mv src/old.txt src/renamed.txt && rm gone.txt && mkdir -p out/deep && echo x > out/deep/made.txt && chmod -x run.sh"
    checkpoint = turn(store, lambda: subprocess.run(script, shell=True, cwd=project, check=True))
    # in path order, as the rewind list shows them (wording.py prints them as kept)
    assert [(f["path"], f["change"]) for f in checkpoint.files] == [
        ("README.md", "modified"),
        ("gone.txt", "deleted"),
        ("out/deep/made.txt", "added"),
        ("run.sh", "modified"),
        ("src/old.txt", "deleted"),
        ("src/renamed.txt", "added"),
    ]
    store.apply(store.plan(checkpoint.turn))
    assert files_of(project) == before
    assert not (project / "out").exists(), "the folders the turn made go with its files"
    assert os.stat(project / "run.sh").st_mode & stat.S_IXUSR


def test_a_binary_file_comes_back_byte_for_byte(project, store):
    data = bytes(range(256)) * 40 + b"\r\n\x00"
    (project / "image.bin").write_bytes(data)
    (project / ".gitattributes").write_text("* text=auto eol=crlf\n*.bin filter=lfs\n")
    turn(store, lambda: (project / "image.bin").write_bytes(b"\x89PNG broken"))
    store.apply(store.plan(1))
    assert (project / "image.bin").read_bytes() == data


def test_a_change_the_person_made_after_the_turn_is_refused_then_forced(project, store):
    (project / "a.py").write_text("v1\n")
    turn(store, lambda: ((project / "a.py").write_text("v2\n"), (project / "b.py").write_text("b\n")))
    (project / "a.py").write_text("the person's v3\n")
    plan = store.plan(1)
    assert plan.describe()["conflicts"] == [{"path": "a.py", "reason": "changed since the turn"}]
    with pytest.raises(CheckpointError):
        store.apply(plan)
    assert (project / "a.py").read_text() == "the person's v3\n" and (project / "b.py").exists()
    store.apply(store.plan(1, force=True))
    assert (project / "a.py").read_text() == "v1\n" and not (project / "b.py").exists()


def test_a_per_file_choice_rewinds_those_files_only(project, store):
    (project / "a.py").write_text("v1\n")
    turn(store, lambda: ((project / "a.py").write_text("v2\n"), (project / "b.py").write_text("b\n")))
    (project / "a.py").write_text("mine\n")
    plan = store.plan(1, ["b.py"])
    assert plan.conflicts == []
    store.apply(plan)
    assert (project / "a.py").read_text() == "mine\n" and not (project / "b.py").exists()
    with pytest.raises(CheckpointError, match="^files: README.md not changed by turn 1 or a later one$"):
        store.plan(1, ["README.md"])


def test_unsaved_editor_text_counts_as_a_change(project, store):
    turn(store, lambda: (project / "README.md").write_text("# by the turn\n"))
    unsaved = {"README.md": b"# typed, not saved\n"}
    plan = store.plan(1, current=unsaved.get)
    assert plan.describe()["conflicts"] == [{"path": "README.md", "reason": "has unsaved changes in the editor"}]
    assert store.plan(1, current={}.get).conflicts == []


def test_rewinding_an_earlier_turn_undoes_the_later_ones_and_sees_changes_between_them(project, store):
    turn(store, lambda: (project / "a.py").write_text("turn 1\n"))
    turn(store, lambda: ((project / "a.py").write_text("turn 2\n"), (project / "b.py").write_text("b\n")))
    assert [c.turn for c in store.list()] == [1, 2]
    plan = store.plan(1)
    assert plan.turns == [1, 2] and plan.conflicts == []
    assert [(r.path, r.action) for r in plan.restores] == [("a.py", "delete"), ("b.py", "delete")]  # in path order
    (project / "c.py").write_text("c\n")
    turn(store, lambda: (project / "c.py").write_text("turn 3\n"))
    # c.py was the person's, made between turns 2 and 3: going back to before turn 2 would lose it
    assert store.plan(2).describe()["conflicts"] == [
        {"path": "c.py", "reason": "changed by someone between the turns being rewound"}
    ]


def test_a_rewind_after_a_restart(project, store):
    (project / "a.py").write_text("kept\n")
    turn(store, lambda: (project / "a.py").write_text("changed\n"))
    restarted = CheckpointStore(project)
    assert [c.turn for c in restarted.list()] == [1]
    restarted.apply(restarted.plan(1))
    assert (project / "a.py").read_text() == "kept\n"


def test_ignored_files_the_git_folder_and_large_files_are_left_alone(project):
    store = CheckpointStore(project, max_file_bytes=1000)
    (project / ".gitignore").write_text("build/\n")
    (project / "build").mkdir()
    (project / ".git").mkdir()
    (project / ".git" / "config").write_text("[core]\n")
    (project / "big.dat").write_bytes(b"0" * 2000)
    checkpoint = turn(
        store,
        lambda: (
            (project / "build" / "out.o").write_text("object"),
            (project / ".git" / "config").write_text("changed"),
            (project / "big.dat").write_bytes(b"1" * 3000),
            (project / "small.txt").write_text("s"),
        ),
    )
    assert checkpoint.files == [{"path": "small.txt", "change": "added"}]
    assert checkpoint.too_large == ["big.dat"]
    store.apply(store.plan(1))
    assert (project / "build" / "out.o").exists() and (project / ".git" / "config").read_text() == "changed"
    assert (project / "big.dat").read_bytes() == b"1" * 3000


def test_the_person_s_info_exclude_is_honoured(project, store):
    (project / ".git" / "info").mkdir(parents=True)
    (project / ".git" / "info" / "exclude").write_text("secret.txt\n")
    checkpoint = turn(store, lambda: ((project / "secret.txt").write_text("s"), (project / "open.txt").write_text("o")))
    assert checkpoint.files == [{"path": "open.txt", "change": "added"}]


def test_a_turn_that_changes_nothing_keeps_nothing(project, store):
    assert turn(store, lambda: None) is None
    assert store.list() == []


def test_old_turns_are_pruned(project, store):
    for number in range(4):
        turn(store, lambda number=number: (project / "a.txt").write_text(f"{number}\n"))
    assert store.prune(keep_turns=2) == [1, 2]
    assert [c.turn for c in store.list()] == [3, 4]
    with pytest.raises(CheckpointError, match=r"^turn: no checkpoint of turn 1 in project \(kept: 3, 4\)$"):
        store.plan(1)
    store.apply(store.plan(3))
    assert (project / "a.txt").read_text() == "1\n"
    assert store.prune(keep_days=-1) == [3, 4]


def test_the_store_is_private(project, store):
    turn(store, lambda: (project / "a.txt").write_text("secret\n"))
    where = checkpoints_dir()
    assert store.directory.parent == where and not (project / ".git").exists()
    for path in [where, *where.rglob("*")]:
        mode = path.lstat().st_mode
        assert not mode & 0o077, f"{path} is {stat.filemode(mode)}"


async def test_the_turn_s_snapshot_runs_in_the_background_and_a_change_waits_for_it(project, store):
    (project / "a.py").write_text("before\n")
    checkpoint = TurnCheckpoint(store, "change a.py", "conversation-1")
    assert not checkpoint.before.done(), "the snapshot must not hold up the turn's start"
    await checkpoint.ready()
    (project / "a.py").write_text("after\n")
    kept = await checkpoint.finish()
    assert kept is not None and kept.describe()["files"] == [{"path": "a.py", "change": "modified"}]
    assert kept.conversation == "conversation-1" and kept.label == "change a.py"


async def test_a_turn_that_changes_no_file_records_nothing(project, store):
    checkpoint = TurnCheckpoint(store, "just reading", None)
    (project / "README.md").write_text("the person typed\n")
    assert await checkpoint.finish() is None
    assert checkpoint.before.cancelled()  # over before its snapshot began (SNAPSHOT_DELAY): none is taken
    assert store.list() == []


def test_odd_names_and_symlinks_come_back(project, store):
    (project / "naïve file.txt").write_text("before\n")
    os.symlink("README.md", project / "link")
    before = files_of(project)

    def change():
        (project / "naïve file.txt").write_text("after\n")
        (project / "link").unlink()
        os.symlink("elsewhere", project / "link")
        (project / "new\tname.txt").write_text("tab\n")

    checkpoint = turn(store, change)
    assert [f["path"] for f in checkpoint.files] == ["link", "naïve file.txt", "new\tname.txt"]  # in path order
    store.apply(store.plan(checkpoint.turn))
    assert files_of(project) == before and os.readlink(project / "link") == "README.md"
