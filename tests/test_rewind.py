"""Rewind through each face that has it: ``elelem.checkpoints``/``elelem.rewind`` over LSP (an unsaved
buffer in the way, refused then forced, bad arguments, a server restarted), ``elelem-lsp rewind``
and chat's ``/rewind`` (a file changed since: refused, then forced), each against a real server process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlparse

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


BEFORE = {"README.md": "# hello\n", "app.py": "x = 1\n", "old.txt": "old\n"}  # the workspace before the turn


def files(root: Path) -> dict[str, str | None]:
    """Every file of the workspace (but its .agents) with its text, and every folder (None)."""
    found: dict[str, str | None] = {}
    for path in sorted(root.rglob("*")):
        name = path.relative_to(root).as_posix()
        if name != ".agents" and not name.startswith(".agents/"):
            found[name] = path.read_text() if path.is_file() else None
    return found


async def test_rewind_over_lsp_after_a_restart_refuses_an_unsaved_buffer_then_forces_and_puts_every_file_back(
    workspace, start_editor
):
    editor = await start_editor(workspace, settings=SCRIPTED)
    answer = await editor.ask("change things")
    assert answer["reply"] == "Changed." and answer["checkpoint"] == 1
    await editor.client.shutdown_session()

    again = await start_editor(workspace, settings=SCRIPTED)  # a new server rewinds what the last one kept
    buffers = EditorBuffers(again)
    [listed] = await again.command("elelem.checkpoints", {})
    assert listed["turn"] == 1 and listed["prompt"] == "change things"
    assert [(f["path"], f["change"]) for f in listed["files"]] == [  # in path order, as the person reads them
        ("app.py", "modified"), ("made/new.txt", "added"), ("old.txt", "deleted"), ("renamed.txt", "added")]

    buffers.open("app.py", "x = 2\ny = 'typed, not saved'\n")
    refused = await again.command("elelem.rewind", {"turn": 1})
    assert refused["rewound"] is False and refused["text"] == "not rewound: 1 file(s) changed since turn 1"
    assert refused["conflicts"] == [{"path": "app.py", "reason": "has unsaved changes in the editor"}]
    assert again.edits == [] and (workspace / "renamed.txt").read_text() == "old\n"  # nothing was touched

    for bad, field in (({"turn": 0}, "turn"), ({"turn": "1"}, "turn"), ({"turn": 1, "files": []}, "files"),
                       ({"turn": 9}, "turn: no checkpoint of turn 9")):
        with pytest.raises(JsonRpcException) as error:
            await again.command("elelem.rewind", bad)
        assert error.value.code == -32602 and field in error.value.message

    forced = await again.command("elelem.rewind", {"turn": 1, "force": True})
    assert forced["rewound"] is True and forced["undo"] is None  # the editor's undo takes it back
    assert forced["text"] == "rewound turn 1"  # what a client shows of it (the conversation stayed)
    [edit] = again.edits
    assert edit.label == "elelem: rewind to before turn 1"
    assert sent(again, edit) == [  # by path, in the order the editor applies them: old.txt made before it is written
        ("edit", "app.py", 1, "x = 1\n"), ("delete", "made/new.txt"), ("create", "old.txt"),
        ("edit", "old.txt", None, "old\n"), ("delete", "renamed.txt")]
    assert buffers.texts[again.uri("app.py")] == "x = 1\n"  # the unsaved buffer took the old text
    assert files(workspace) == BEFORE  # and every file, saved, is as it was before the turn


class EditorBuffers:
    """What an editor does with the server's workspace edits: each change applied in its order to
    the open buffer (its version checked) or the file, a file created or deleted, then all saved."""

    def __init__(self, editor) -> None:
        self.editor = editor
        self.texts: dict[str, str] = {}  # uri -> the open buffer's text
        editor.answer_edit = self.apply

    def open(self, name: str, text: str) -> None:
        self.texts[self.editor.open(name, text)] = text

    def apply(self, params: lsp.ApplyWorkspaceEditParams) -> bool:
        for change in params.edit.document_changes:
            if isinstance(change, lsp.CreateFile):
                path = document_path(change.uri)
                assert change.options.overwrite or not path.exists()
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text("")
            elif isinstance(change, lsp.DeleteFile):
                path = document_path(change.uri)
                assert change.options.ignore_if_not_exists or path.exists()
                path.unlink(missing_ok=True)
            else:
                uri = change.text_document.uri
                if change.text_document.version is not None:
                    assert change.text_document.version == self.editor.versions[uri], "an edit of another version"
                text = self.texts[uri] if uri in self.texts else document_path(uri).read_text()
                for text_edit in change.edits:
                    text = text[: offset(text, text_edit.range.start)] + text_edit.new_text + text[offset(text, text_edit.range.end) :]
                if uri in self.texts:
                    self.texts[uri] = text
                document_path(uri).write_text(text)  # saved
        return True


def document_path(uri: str) -> Path:
    return Path(unquote(urlparse(uri).path))


def offset(text: str, position: lsp.Position) -> int:
    """Where ``position`` (ASCII text: code units are characters) is in ``text``; past the end is its end."""
    lines = text.splitlines(keepends=True)
    return min(len(text), sum(len(line) for line in lines[: position.line]) + position.character)


def sent(editor, params: lsp.ApplyWorkspaceEditParams) -> list[tuple]:
    """A workspace edit's changes in order, as (kind, path, version, new text) for a text edit."""
    changes = []
    for change in params.edit.document_changes:
        if isinstance(change, lsp.TextDocumentEdit):
            [text_edit] = change.edits
            path = document_path(change.text_document.uri).relative_to(editor.root).as_posix()
            changes.append(("edit", path, change.text_document.version, text_edit.new_text))
        else:
            path = document_path(change.uri).relative_to(editor.root).as_posix()
            changes.append((type(change).__name__.removesuffix("File").lower(), path))
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
    assert files(workspace) == BEFORE
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
    assert files(workspace) == BEFORE
    child.sendline("/context")
    child.expect("elelem> ")
    assert "change things" not in child.before
    child.sendline("/exit")
    child.expect(pexpect.EOF)
