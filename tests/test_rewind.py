"""Rewind through each face that has it: ``elelem.checkpoints``/``elelem.rewind`` over LSP (an unsaved
buffer in the way, refused then forced, bad arguments, a server restarted), ``elelem-lsp rewind``
and chat's ``/rewind`` (a file changed since: refused, then forced), each against a real server process."""

from __future__ import annotations

import os
import subprocess
import sys

import pexpect
import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException

from scaffold import add_plugin, run_ask, write_script

SCRIPTED = {"provider": "scripted", "execute": "allow"}
COMMAND = "printf 'x = 2\\n' > app.py && mv old.txt renamed.txt && mkdir -p made && echo new > made/new.txt"
CHANGING_TURN = [
    [{"type": "doing", "id": "c1", "name": "execute", "arguments": {"command": COMMAND}}],
    [{"type": "saying", "text": "Changed."}],
]


@pytest.fixture
def workspace(project):
    add_plugin(project, "scripted")
    write_script(project, CHANGING_TURN)
    (project / "app.py").write_text("x = 1\n")
    (project / "old.txt").write_text("old\n")
    return project


def as_before(root) -> bool:
    return (
        (root / "app.py").read_text() == "x = 1\n"
        and (root / "old.txt").read_text() == "old\n"
        and not (root / "renamed.txt").exists()
        and not (root / "made").exists()
    )


async def test_rewind_over_lsp_refuses_an_unsaved_buffer_then_forces_and_survives_a_restart(workspace, start_editor):
    editor = await start_editor(workspace, settings=SCRIPTED)
    answer = await editor.ask("change things")
    assert answer["reply"] == "Changed." and answer["checkpoint"] == 1
    [listed] = await editor.command("elelem.checkpoints", {})
    assert listed["turn"] == 1 and listed["prompt"] == "change things"
    assert {(f["path"], f["change"]) for f in listed["files"]} == {
        ("app.py", "modified"), ("old.txt", "deleted"), ("renamed.txt", "added"), ("made/new.txt", "added")}

    editor.open("app.py", "x = 2\ny = 'typed, not saved'\n")
    refused = await editor.command("elelem.rewind", {"turn": 1})
    assert refused["rewound"] is False
    assert refused["conflicts"] == [{"path": "app.py", "reason": "has unsaved changes in the editor"}]
    assert (workspace / "renamed.txt").exists()

    for bad, field in (({"turn": 0}, "turn"), ({"turn": "1"}, "turn"), ({"turn": 1, "files": []}, "files"),
                       ({"turn": 9}, "turn: no checkpoint of turn 9")):
        with pytest.raises(JsonRpcException) as error:
            await editor.command("elelem.rewind", bad)
        assert error.value.code == -32602 and field in error.value.message

    forced = await editor.command("elelem.rewind", {"turn": 1, "force": True})
    assert forced["rewound"] is True and forced["undo"] is None  # the editor's undo takes it back
    assert sent_edit(editor) == {
        ("edit", "app.py", 1, "x = 1\n"), ("create", "old.txt"), ("edit", "old.txt", None, "old\n"),
        ("delete", "renamed.txt"), ("delete", "made/new.txt")}
    await editor.client.shutdown_session()

    again = await start_editor(workspace, settings=SCRIPTED)  # a new server rewinds it as well
    assert (await again.command("elelem.rewind", {"turn": 1}))["rewound"] is True
    assert ("edit", "app.py", None, "x = 1\n") in sent_edit(again)


def sent_edit(editor) -> set[tuple]:
    """The last workspace edit the server sent, as (kind, path, version, new text) for a text edit."""
    [params] = editor.edits[-1:]
    assert params.label == "elelem: rewind to before turn 1"
    changes = set()
    for change in params.edit.document_changes:
        if isinstance(change, lsp.TextDocumentEdit):
            [text_edit] = change.edits
            path = editor.root.joinpath(change.text_document.uri.removeprefix(editor.root.as_uri() + "/"))
            changes.add(("edit", path.relative_to(editor.root).as_posix(), change.text_document.version, text_edit.new_text))
        else:
            path = change.uri.removeprefix(editor.root.as_uri() + "/")
            changes.add((type(change).__name__.removesuffix("File").lower(), path))
    return changes


def rewind(cwd, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "elelem_lsp", "rewind", "--trust", *args],
        cwd=cwd, capture_output=True, text=True, timeout=60, env=os.environ,
    )


def test_elelem_lsp_rewind_lists_refuses_a_change_made_since_and_forces(workspace):
    assert run_ask(workspace, "-y", "-p", "scripted", "change things").returncode == 0
    listing = rewind(workspace)
    assert listing.returncode == 0, listing.stderr
    assert "turn 1" in listing.stdout and "change things" in listing.stdout and "added    renamed.txt" in listing.stdout

    (workspace / "made" / "new.txt").write_text("the person's\n")
    refused = rewind(workspace, "1")
    assert refused.returncode == 1
    assert "made/new.txt: changed since the turn" in refused.stdout and "--force" in refused.stderr
    assert (workspace / "made" / "new.txt").read_text() == "the person's\n"

    forced = rewind(workspace, "1", "--force")
    assert forced.returncode == 0, forced.stderr
    assert "restored app.py" in forced.stdout and "deleted  renamed.txt" in forced.stdout
    assert as_before(workspace)
    unknown = rewind(workspace, "7")
    assert unknown.returncode == 2 and "no checkpoint of turn 7" in unknown.stderr


def test_chat_rewinds_the_files_and_the_conversation_asking_before_overwriting_a_change(workspace):
    child = pexpect.spawn(
        sys.executable, ["-m", "elelem_lsp", "chat", "--trust", "-y", "-p", "scripted"], cwd=str(workspace),
        encoding="utf-8", timeout=20, env={**os.environ, "TERM": "dumb"}, dimensions=(40, 200),
    )
    child.expect("elelem> ")
    child.sendline("change things")
    child.expect("Changed.")
    child.expect("elelem> ")
    child.sendline("/rewind")
    child.expect("elelem> ")
    assert "turn 1" in child.before and "modified app.py" in child.before
    (workspace / "made" / "new.txt").write_text("the person's\n")  # changed since the turn: asked about
    child.sendline("/rewind 1")
    child.expect(r"overwrite them with how they were before the turn\? \[y/N\] ")
    assert "made/new.txt: changed since the turn" in child.before
    child.sendline("n")
    child.expect("nothing rewound")
    child.expect("elelem> ")
    assert (workspace / "made" / "new.txt").read_text() == "the person's\n" and (workspace / "renamed.txt").exists()
    child.sendline("/rewind 1")
    child.expect(r"\[y/N\] ")
    child.sendline("y")
    child.expect("rewound turn 1 and the conversation:")
    child.expect("elelem> ")
    assert as_before(workspace)
    child.sendline("/context")
    child.expect("elelem> ")
    assert "change things" not in child.before
    child.sendline("/exit")
    child.expect(pexpect.EOF)
