"""FrontendWorkspace through in-memory documents and person (the ports it uses): reads see unsaved buffers, writes become
one proposed edit each (the span that changes), a refused or stale edit leaves the file as it
was, a hard-linked file is refused, and a front end that cannot edit leaves writes to the disk."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from elelem_lsp.agent.textfile import Replacement
from elelem_lsp.agent.workspace import WorkspaceError
from elelem_lsp.host.frontend import Unanswered
from elelem_lsp.host.settings import Settings
from elelem_lsp.host.workspace import STALE, FrontendWorkspace

from .memory_frontend import MemoryDocuments, MemoryFace, MemoryPerson, MemoryProgress


@dataclass
class Editor(MemoryDocuments, MemoryPerson):
    """The documents and the person in one, as an editor is."""


def workspace(root: Path, editor: Editor, settings: Settings | None = None) -> FrontendWorkspace:
    return FrontendWorkspace(
        root, lambda: settings or Settings(), documents=editor, person=editor, progress=MemoryProgress(), face=MemoryFace(), client="memory"
    )


def replace(old: str, new: str):
    return lambda text: text.replace(old, new)


async def test_read_sees_the_unsaved_buffer_not_the_disk(tmp_path):
    path = tmp_path / "a.py"
    path.write_text("on disk\n")
    frontend = Editor()
    ws = workspace(tmp_path, frontend)
    assert await ws.read_text(path) == "on disk\n"
    frontend.open(path, "unsaved\r\nbuffer\r\n")
    assert await ws.read_text(path) == "unsaved\nbuffer\n"  # the model sees "\n" breaks


async def test_unsaved_buffers_are_those_that_differ_from_disk_inside_the_folder(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "node_modules").mkdir()
    same, changed, skipped = tmp_path / "src" / "same.py", tmp_path / "src" / "changed.py", tmp_path / "node_modules" / "x.js"
    outside = tmp_path.parent / f"{tmp_path.name}-outside.py"
    for path in (same, changed, skipped, outside):
        path.write_text("disk\n")
    frontend = Editor()
    frontend.open(same, "disk\n")
    frontend.open(changed, "typed\n")
    frontend.open(skipped, "typed\n")
    frontend.open(outside, "typed\n")
    assert workspace(tmp_path, frontend).unsaved_buffers(tmp_path) == {changed: "typed\n"}
    assert workspace(tmp_path, frontend).unsaved_buffers(tmp_path / "node_modules") == {}


async def test_an_edit_is_the_span_that_changes_named_by_the_tool(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("one\ntwo\nthree\n")
    frontend = Editor()
    await workspace(tmp_path, frontend, Settings(confirmEdits=True)).update(path, replace("two", "TWO"), tool="edit")
    [edit] = frontend.edits
    assert edit.replacement == Replacement(4, 7, "TWO") and edit.before == "one\ntwo\nthree\n"
    assert edit.label == "elelem: edit a.txt" and edit.tool == "edit" and edit.confirm is True
    assert edit.document is None
    assert path.read_text() == "one\nTWO\nthree\n"


async def test_the_edit_keeps_the_files_line_endings(tmp_path):
    path = tmp_path / "a.txt"
    path.write_bytes(b"one\r\ntwo\r\n")
    frontend = Editor()
    await workspace(tmp_path, frontend).update(path, replace("one\n", "one\nnew\n"), tool="edit")
    [edit] = frontend.edits
    assert "\r\n" in edit.replacement.text and "\n" not in edit.replacement.text.replace("\r\n", "")


async def test_a_new_file_is_a_whole_text_with_no_before(tmp_path):
    frontend = Editor()
    await workspace(tmp_path, frontend).update(tmp_path / "new.txt", lambda text: "hello\n", tool="write")
    [edit] = frontend.edits
    assert edit.before is None and edit.replacement == Replacement(0, 0, "hello\n")


async def test_no_change_proposes_nothing(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("same\n")
    frontend = Editor()
    await workspace(tmp_path, frontend).update(path, lambda text: text, tool="edit")
    assert frontend.edits == []


async def test_an_open_document_is_edited_with_its_version(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("disk\n")
    frontend = Editor()
    frontend.open(path, "buffer\n", version=7)
    await workspace(tmp_path, frontend).update(path, replace("buffer", "changed"), tool="edit")
    [edit] = frontend.edits
    assert edit.document is not None and edit.document.version == 7 and edit.before == "buffer\n"
    assert frontend.documents[path].text == "changed\n" and path.read_text() == "disk\n"


@pytest.mark.parametrize("reason", ["the person said no", ""])
async def test_a_refused_edit_is_an_error_and_leaves_the_file(tmp_path, reason):
    path = tmp_path / "a.txt"
    path.write_text("keep\n")
    frontend = Editor(refuse_edits=reason)
    with pytest.raises(WorkspaceError) as refused:
        await workspace(tmp_path, frontend).update(path, replace("keep", "lose"), tool="edit")
    assert str(refused.value) == "the editor refused the edit to a.txt" + (f": {reason}" if reason else "")
    assert path.read_text() == "keep\n" and len(frontend.edits) == 1


async def test_when_the_person_typed_the_change_is_made_again_on_the_new_text(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("x\n")
    frontend = Editor(type_before_edit="typed first\nold line\n")
    frontend.open(path, "old line\n", version=1)
    await workspace(tmp_path, frontend).update(path, replace("old line", "new line"), tool="edit")
    assert [e.before for e in frontend.edits] == ["old line\n", "typed first\nold line\n"]
    assert frontend.documents[path].text == "typed first\nnew line\n"


async def test_typing_again_during_the_retry_gives_up_with_the_file_unchanged(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("x\n")

    class Typist(Editor):
        async def apply_edit(self, edit):
            self.edits.append(edit)
            self.open(path, f"typed {len(self.edits)}\n", len(self.edits) + 1)
            return False, None

    frontend = Typist()
    frontend.open(path, "typed 0\n", 1)
    with pytest.raises(WorkspaceError, match=f"{STALE}: a.txt was not changed"):
        await workspace(tmp_path, frontend).update(path, replace("typed", "mine"), tool="edit")
    assert len(frontend.edits) == 2


@pytest.mark.parametrize("open_in_editor", [False, True])
async def test_a_hard_linked_file_is_refused(tmp_path, open_in_editor):
    outside = tmp_path.parent / f"{tmp_path.name}-secret.txt"
    outside.write_text("secret\n")
    path = tmp_path / "link.txt"
    os.link(outside, path)
    frontend = Editor()
    if open_in_editor:
        frontend.open(path, "secret\n")
    with pytest.raises(WorkspaceError, match="hard link"):
        await workspace(tmp_path, frontend).update(path, replace("secret", "owned"), tool="edit")
    assert frontend.edits == [] and outside.read_text() == "secret\n"


async def test_a_front_end_that_cannot_edit_writes_to_the_disk(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("one\n")
    frontend = Editor(editing=False)
    await workspace(tmp_path, frontend).update(path, replace("one", "two"), tool="edit")
    assert frontend.edits == [] and path.read_text() == "two\n"


async def test_execute_goes_through_the_folders_current_settings(tmp_path):
    settings = {"now": Settings(execute="deny")}
    frontend = Editor(answers=["Allow once"])
    ws = FrontendWorkspace(
        tmp_path, lambda: settings["now"], documents=frontend, person=frontend, progress=MemoryProgress(), face=MemoryFace(), client="memory"
    )
    assert await ws.allow_command("ls") == (False, "denied by the elelem.execute setting (and not allowed by elelem.allowCommands)")
    settings["now"] = Settings(sandbox="off")  # asked by default; off, the question says it runs bare
    assert await ws.allow_command("ls") == (True, "")
    assert frontend.questions == ["elelem wants to run: ls (no sandbox)"]


@pytest.mark.parametrize(
    ("answer", "expected"),
    [("42", "42"), (Unanswered("the input was dismissed"), None)],
)
async def test_the_human_provider_asks_through_the_front_end(tmp_path, answer, expected):
    ws = workspace(tmp_path, Editor(answers=[answer]))
    if expected is None:
        with pytest.raises(WorkspaceError, match="the input was dismissed"):
            await ws.ask_user("number?")
    else:
        assert await ws.ask_user("number?") == expected
