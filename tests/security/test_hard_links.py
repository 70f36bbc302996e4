"""A file with a second hard link is never written: the link may lead outside the workspace.

Each test links a file that lives outside the workspace into it and checks that
write and edit refuse it by name and reason, on disk, through the editor (closed
and open documents) and through `elelem-lsp ask`, and that the outside file keeps
its bytes. A file with one link next to it is still written.
"""

from __future__ import annotations

import os

import pytest
from lsprotocol import types as lsp

from elelem_lsp.agent.toolbox import Toolbox
from elelem_lsp.agent.workspace import Workspace, WorkspaceError
from elelem_lsp.client.disk import apply_workspace_edit
from scaffold import add_plugin, run_ask, write_script

SECRET = b"token = s3cr3t\r\n"
CALLS = [("write", {"content": "pwned\n"}), ("edit", {"old": "s3cr3t", "new": "pwned"})]


@pytest.fixture
def outside(tmp_path):
    target = tmp_path / "elsewhere" / "credentials"
    target.parent.mkdir()
    target.write_bytes(SECRET)
    return target


def link_into(root, outside, name="linked.txt"):
    os.link(outside, root / name)
    return root / name


def refused(result, name="linked.txt"):
    return result["ok"] is False and f"{name} has 2 hard links" in result["error"] and "not changed" in result["error"]


@pytest.mark.parametrize("tool, arguments", CALLS)
async def test_disk_workspace_refuses_a_hard_linked_file(tmp_path, outside, tool, arguments):
    root = tmp_path / "ws"
    root.mkdir()
    link_into(root, outside)
    (root / "single.txt").write_bytes(SECRET)

    result = await Toolbox().call(tool, {"path": "linked.txt", **arguments}, Workspace(root))

    assert refused(result), result
    assert outside.read_bytes() == SECRET and (root / "linked.txt").read_bytes() == SECRET
    assert os.stat(outside).st_nlink == 2  # the link was not replaced either
    single = await Toolbox().call(tool, {"path": "single.txt", **arguments}, Workspace(root))
    assert single["ok"] is True and (root / "single.txt").read_bytes() != SECRET


async def test_a_symlink_to_a_hard_linked_file_is_refused_too(tmp_path, outside):
    root = tmp_path / "ws"
    root.mkdir()
    link_into(root, outside, "hidden.txt")
    (root / "nice.txt").symlink_to(root / "hidden.txt")
    result = await Toolbox().call("write", {"path": "nice.txt", "content": "x"}, Workspace(root))
    assert refused(result, "hidden.txt"), result
    assert outside.read_bytes() == SECRET


async def test_reading_a_hard_linked_file_still_works(tmp_path, outside):
    root = tmp_path / "ws"
    root.mkdir()
    link_into(root, outside)
    result = await Toolbox().call("read", {"path": "linked.txt"}, Workspace(root))
    assert result["content"] == "1\ttoken = s3cr3t"


def test_terminal_client_refuses_to_apply_an_edit_to_a_hard_linked_file(tmp_path, outside):
    linked = link_into(tmp_path, outside)
    edit = lsp.TextEdit(range=lsp.Range(start=lsp.Position(line=0, character=0), end=lsp.Position(line=0, character=5)),
                        new_text="pwned")
    with pytest.raises(WorkspaceError, match="has 2 hard links"):
        apply_workspace_edit(lsp.WorkspaceEdit(changes={linked.as_uri(): [edit]}))
    assert outside.read_bytes() == SECRET and os.stat(outside).st_nlink == 2


@pytest.mark.parametrize("tool, arguments", CALLS)
@pytest.mark.parametrize("opened", [False, True], ids=["closed-file", "open-document"])
async def test_editor_is_never_sent_an_edit_to_a_hard_linked_file(project, outside, start_editor, tool, arguments, opened):
    add_plugin(project, "scripted")
    link_into(project, outside)
    write_script(project, [[{"type": "doing", "id": "x", "name": tool, "arguments": {"path": "linked.txt", **arguments}}]])
    editor = await start_editor(project, settings={"provider": "scripted"})
    if opened:
        # An open buffer is saved through the same link, so it is refused as well.
        editor.open("linked.txt", text=SECRET.decode())

    await editor.ask("change it")

    [outcome] = [e for e in editor.events() if e["type"] == "result"]
    assert refused(outcome), outcome
    assert editor.edits == []
    assert outside.read_bytes() == SECRET


def test_ask_leaves_the_outside_file_alone(project, outside):
    add_plugin(project, "scripted")
    link_into(project, outside)
    (project / "mine.txt").write_bytes(b"mine\n")
    write_script(project, [[
        {"type": "doing", "id": "w", "name": "write", "arguments": {"path": "linked.txt", "content": "pwned\n"}},
        {"type": "doing", "id": "e", "name": "edit", "arguments": {"path": "linked.txt", "old": "s3cr3t", "new": "x"}},
        {"type": "doing", "id": "m", "name": "write", "arguments": {"path": "mine.txt", "content": "still mine\n"}},
    ]])

    run = run_ask(project, "-p", "scripted", "change it")

    assert run.returncode == 0, run.stderr
    assert outside.read_bytes() == SECRET and (project / "linked.txt").read_bytes() == SECRET
    assert run.stderr.count("linked.txt has 2 hard links") == 2
    assert (project / "mine.txt").read_bytes() == b"still mine\n"
