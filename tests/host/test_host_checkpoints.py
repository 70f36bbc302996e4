"""Checkpoints through the host: a turn's edits, writes and commands are kept and listed per turn,
rewound (the files, and the conversation too), a change the person made since is refused then
forced, a rewind survives a restart and can itself be rewound, and ``checkpoints: false`` keeps none."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from scaffold import add_plugin, make_tree, wait_until, write_script

from elelem_lsp.host import rewinding, stored
from elelem_lsp.host.checkpoints import CheckpointStore
from elelem_lsp.host.conversations import ConversationStore
from elelem_lsp.host.frontend import BadRequest, Refused
from elelem_lsp.host.host import Host

from .memory_frontend import MemoryFrontend

SETTINGS = {"workspacePlugins": True, "provider": "scripted", "execute": "allow"}


def call(name: str, **arguments) -> dict:
    return {"type": "doing", "id": f"c-{name}-{len(arguments)}", "name": name, "arguments": arguments}


CHANGING_TURN = [
    [
        call("edit", path="app.py", old="x = 1", new="x = 2"),
        call("write", path="new.md", content="# new\n"),
        call("execute", command="mv old.txt renamed.txt && rm gone.txt && printf '\\x00\\x01' > data.bin"),
    ],
    [{"type": "saying", "text": "Changed."}],
]


def host_for(root: Path, settings=None) -> tuple[Host, MemoryFrontend]:
    frontend = MemoryFrontend(settings_by_folder={root.as_uri(): settings or SETTINGS})
    host = Host(frontend)
    host.sync_folders({root.as_uri(): root})
    return host, frontend


@pytest.fixture
def workspace(project: Path) -> Path:
    add_plugin(project, "scripted")
    (project / "app.py").write_text("x = 1\n")
    (project / "old.txt").write_text("old\n")
    (project / "gone.txt").write_text("gone\n")
    (project / "data.bin").write_bytes(bytes(range(256)))
    return project


def files_of(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".agents" not in p.relative_to(root).parts
    }


async def test_a_turn_s_changes_are_listed_and_rewound_with_the_conversation(workspace):
    host, _ = host_for(workspace)
    agent = host.agents[workspace.as_uri()]
    await agent.turn("first, no change")
    before = files_of(workspace)
    write_script(workspace, CHANGING_TURN)
    answer = await agent.turn("change things")
    assert answer["reply"] == "Changed." and answer["checkpoint"] == 1
    changed = {("app.py", "modified"), ("new.md", "added"), ("old.txt", "deleted"),
               ("renamed.txt", "added"), ("gone.txt", "deleted"), ("data.bin", "modified")}
    [listed] = await rewinding.checkpoints(agent)
    assert listed["turn"] == 1 and listed["prompt"] == "change things"
    assert {(f["path"], f["change"]) for f in listed["files"]} == changed
    stored = ConversationStore(workspace).entries(agent.current.id)[-1]
    assert {(f["path"], f["change"]) for f in stored["checkpoint"]["files"]} == changed

    result = await rewinding.rewind(agent, 1, conversation=True)
    assert result["rewound"] is True and result["conversation"] is True and result["conflicts"] == []
    assert files_of(workspace) == before
    assert [m["content"] for m in agent.session.history if m["role"] == "user"] == ["first, no change"]
    assert ConversationStore(workspace).entries(agent.current.id)[-1]["kind"] == "rewind"

    restarted, _ = host_for(workspace)  # a new server continues the rewound conversation
    again = restarted.agents[workspace.as_uri()]
    again.open_conversation()
    assert [m["content"] for m in again.current.history if m["role"] == "user"] == ["first, no change"]
    undone = await rewinding.rewind(again, result["undo"])  # the rewind, rewound
    assert undone["rewound"] is True and (workspace / "renamed.txt").read_text() == "old\n"


async def test_a_change_the_person_made_since_is_refused_then_forced(workspace):
    host, frontend = host_for(workspace)
    agent = host.agents[workspace.as_uri()]
    write_script(workspace, CHANGING_TURN)
    await agent.turn("change things")
    frontend.open(workspace / "app.py", "x = 2\ny = 'typed, unsaved'\n")
    (workspace / "new.md").write_text("# the person's own words\n")

    refused = await rewinding.rewind(agent, 1)
    assert refused["rewound"] is False and refused["undo"] is None
    assert refused["conflicts"] == [
        {"path": "app.py", "reason": "has unsaved changes in the editor"},
        {"path": "new.md", "reason": "changed since the turn"},
    ]
    assert (workspace / "new.md").read_text() == "# the person's own words\n"
    assert (workspace / "renamed.txt").exists(), "nothing is rewound while anything conflicts"

    chosen = await rewinding.rewind(agent, 1, ["renamed.txt", "old.txt"])  # a per-file choice
    assert chosen["rewound"] is True and (workspace / "old.txt").exists() and not (workspace / "renamed.txt").exists()
    forced = await rewinding.rewind(agent, 1, force=True)
    assert forced["rewound"] is True
    assert frontend.documents[workspace / "app.py"].text == "x = 1\n", "the open buffer is what goes back"
    assert not (workspace / "new.md").exists()


async def test_a_turn_that_only_reads_keeps_no_checkpoint(workspace):
    write_script(workspace, [[call("read", path="app.py")], [{"type": "saying", "text": "Read."}]])
    host, _ = host_for(workspace)
    agent = host.agents[workspace.as_uri()]
    (workspace / "app.py").write_text("x = 'the person typed this'\n")
    assert (await agent.turn("look"))["checkpoint"] is None
    assert await rewinding.checkpoints(agent) == []


async def test_bad_rewinds_name_what_is_wrong(workspace):
    host, _ = host_for(workspace)
    agent = host.agents[workspace.as_uri()]
    write_script(workspace, CHANGING_TURN)
    await agent.turn("change things")
    with pytest.raises(BadRequest, match=r"^turn: no checkpoint of turn 7 in project \(kept: 1\)$"):
        await rewinding.rewind(agent, 7)
    with pytest.raises(BadRequest, match="^files: README.md not changed by turn 1 or a later one$"):
        await rewinding.rewind(agent, 1, ["README.md"])


async def test_the_conversation_goes_back_only_where_it_still_holds_the_turn(workspace):
    host, _ = host_for(workspace)
    agent = host.agents[workspace.as_uri()]
    write_script(workspace, CHANGING_TURN * 2)
    await agent.turn("change things")
    changed = files_of(workspace)
    await stored.start_over(agent)  # the model forgot the turn: a reset entry follows it
    with pytest.raises(Refused, match=r"^conversation: turn 1 was compacted or reset away since; rewind its files alone$"):
        await rewinding.rewind(agent, 1, conversation=True)
    await stored.new_conversation(agent)
    with pytest.raises(Refused, match=r"^conversation: turn 1 is not in the current conversation; rewind its files alone$"):
        await rewinding.rewind(agent, 1, conversation=True)
    assert files_of(workspace) == changed  # refused before anything was put back
    assert (await rewinding.rewind(agent, 1))["rewound"] is True  # the files alone go back


async def test_with_history_off_only_the_files_go_back(workspace):
    host, _ = host_for(workspace, {**SETTINGS, "history": False})
    agent = host.agents[workspace.as_uri()]
    write_script(workspace, CHANGING_TURN)
    await agent.turn("change things")
    with pytest.raises(Refused, match=r"^conversation: history is off in project, so the conversation cannot be rewound$"):
        await rewinding.rewind(agent, 1, conversation=True)
    assert (await rewinding.rewind(agent, 1))["rewound"] is True


async def test_an_editor_that_refuses_the_rewind_leaves_every_file_as_it_is(workspace):
    host, frontend = host_for(workspace)
    frontend.restores_in_editor = True
    agent = host.agents[workspace.as_uri()]
    write_script(workspace, CHANGING_TURN)
    await agent.turn("change things")
    changed = files_of(workspace)
    frontend.refuse_edits = "the person pressed Discard"
    with pytest.raises(Refused, match="^the editor did not rewind the files: the person pressed Discard$"):
        await rewinding.rewind(agent, 1)
    assert files_of(workspace) == changed and frontend.restores == []


async def test_a_file_deleted_or_made_again_since_the_turn_is_a_conflict_named_so(workspace):
    host, _ = host_for(workspace)
    agent = host.agents[workspace.as_uri()]
    write_script(workspace, CHANGING_TURN)
    await agent.turn("change things")
    (workspace / "app.py").unlink()  # the turn changed it; the person deleted it since
    (workspace / "gone.txt").write_text("made again\n")  # the turn deleted it; the person made it again
    result = await rewinding.rewind(agent, 1)
    assert result["rewound"] is False
    assert [(c["path"], c["reason"]) for c in result["conflicts"]] == [  # in path order, as the person reads them
        ("app.py", "deleted since the turn"), ("gone.txt", "created again since the turn")]
    assert (workspace / "gone.txt").read_text() == "made again\n" and not (workspace / "app.py").exists()


async def test_a_planted_store_keeps_no_checkpoint_and_the_turn_goes_on(workspace, tmp_path, caplog):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    store = CheckpointStore(workspace)
    store.base.mkdir(parents=True, exist_ok=True)
    store.directory.symlink_to(elsewhere)  # someone else's folder: checkpoints are not kept through it
    host, _ = host_for(workspace)
    agent = host.agents[workspace.as_uri()]
    write_script(workspace, CHANGING_TURN)
    answer = await agent.turn("change things")
    assert answer["reply"] == "Changed." and answer["checkpoint"] is None
    assert (workspace / "app.py").read_text() == "x = 2\n" and list(elsewhere.iterdir()) == []
    assert "is a symlink; checkpoints are not kept through one" in caplog.text


async def test_checkpoints_false_keeps_none(workspace):
    host, _ = host_for(workspace, {**SETTINGS, "checkpoints": False})
    agent = host.agents[workspace.as_uri()]
    write_script(workspace, CHANGING_TURN)
    assert (await agent.turn("change things"))["checkpoint"] is None
    assert await rewinding.checkpoints(agent) == []
    with pytest.raises(Refused, match=r"checkpoints are off in project \(the checkpoints setting\)"):
        await rewinding.rewind(agent, 1)


async def test_the_model_is_asked_while_the_snapshot_before_the_turn_still_runs(workspace):
    """The folder's checkpoint worker is held, so the snapshot before the turn cannot have run: the
    first model request goes out all the same, and the turn's change still waits for the snapshot
    (else its checkpoint would hold no change). The figures on a 20,000-file tree:
    bench/checkpoints.py."""
    files = make_tree(workspace / "src", 20)
    original = files[0].read_bytes()
    write_script(workspace, [
        [{"type": "record"}, call("write", path="src/pkg000/mod000.py", content="rewritten\n")],
        [{"type": "saying", "text": "Rewrote it."}],
    ])
    host, _ = host_for(workspace)
    agent = host.agents[workspace.as_uri()]
    held = threading.Event()
    CheckpointStore(workspace).worker.put(lambda: held.wait(60))
    turn = asyncio.ensure_future(agent.turn("rewrite one file"))
    try:
        await wait_until(lambda: (workspace / ".agents" / "fetches.jsonl").exists(), "the first model request", timeout=30)
        snapshot = agent.workspace.checkpoint_ready.__self__.before
        assert not snapshot.done(), "the first model request waited for the snapshot"
    finally:
        held.set()
    answer = await asyncio.wait_for(turn, 60)
    [listed] = await rewinding.checkpoints(agent)
    assert answer["checkpoint"] == 1 and listed["files"] == [{"path": "src/pkg000/mod000.py", "change": "modified"}]
    assert files[0].read_bytes() == b"rewritten\n"
    assert (await rewinding.rewind(agent, 1))["rewound"] is True
    assert files[0].read_bytes() == original


async def test_the_snapshot_ahead_of_the_first_turn_leaves_the_person_s_later_changes_out_of_it(workspace):
    host, _ = host_for(workspace)
    agent = host.agents[workspace.as_uri()]
    await host.prepare()
    index = CheckpointStore(workspace).git_dir / "index"
    await wait_until(index.exists, "the snapshot taken ahead of the first turn", timeout=30)
    (workspace / "gone.txt").write_text("the person's change, before the turn\n")
    write_script(workspace, CHANGING_TURN)
    await agent.turn("change things")
    [listed] = await rewinding.checkpoints(agent)
    assert "gone.txt" in {f["path"] for f in listed["files"]}  # the turn's command removed it
    await rewinding.rewind(agent, 1)
    assert (workspace / "gone.txt").read_text() == "the person's change, before the turn\n"


@pytest.mark.parametrize("in_one_edit", [True, False], ids=["one workspace edit", "an edit of each open buffer"])
async def test_an_edit_left_unsaved_in_the_editor_is_checkpointed_and_rewound_in_the_buffer(workspace, in_one_edit):
    host, frontend = host_for(workspace)
    frontend.restores_in_editor = in_one_edit
    agent = host.agents[workspace.as_uri()]
    frontend.open(workspace / "app.py", "x = 1\n")
    write_script(workspace, [[call("edit", path="app.py", old="x = 1", new="x = 2")], [{"type": "saying", "text": "Edited."}]])
    answer = await agent.turn("edit it")
    assert frontend.documents[workspace / "app.py"].text == "x = 2\n" and (workspace / "app.py").read_text() == "x = 1\n"
    assert answer["checkpoint"] == 1
    assert (await rewinding.checkpoints(agent))[0]["files"] == [{"path": "app.py", "change": "modified"}]

    frontend.open(workspace / "app.py", "x = 2\n# typed after the turn\n")
    assert (await rewinding.rewind(agent, 1))["conflicts"] == [{"path": "app.py", "reason": "has unsaved changes in the editor"}]
    frontend.open(workspace / "app.py", "x = 2\n")
    result = await rewinding.rewind(agent, 1)
    assert result["rewound"] is True and result["undo"] is None
    if in_one_edit:
        [(label, [restored])] = frontend.restores
        assert label == "elelem: rewind to before turn 1" and restored.text == "x = 1\n"
    else:
        assert frontend.edits[-1].label == "elelem: rewind app.py"
    assert frontend.documents[workspace / "app.py"].text == "x = 1\n"
