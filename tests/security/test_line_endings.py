"""Line endings, byte-order marks and encodings survive every edit, on every path an edit takes.

The same table of files and tool calls runs through the disk workspace, a server whose
client cannot apply edits, an editor (open and closed documents: the exact TextEdit it
receives, applied here to the buffer by an independent reader of positions) and
`elelem-lsp ask`. Disk results are compared as bytes.
"""

from __future__ import annotations

import codecs
import json
import re

import pytest
from lsprotocol import types as lsp

from elelem_lsp.agent.textfile import ModelView, decode, for_model
from elelem_lsp.agent.toolbox import Toolbox
from elelem_lsp.agent.workspace import Workspace, WorkspaceError
from elelem_lsp.client.disk import apply_workspace_edit
from scaffold import add_plugin, run_ask, write_script

BOM = codecs.BOM_UTF8

# (case, stored bytes, tool, arguments without the path, expected bytes)
CASES = [
    ("crlf-edit-middle", b"one\r\ntwo\r\nthree\r\n", "edit", {"old": "two", "new": "TWO"}, b"one\r\nTWO\r\nthree\r\n"),
    ("crlf-edit-across-lines", b"one\r\ntwo\r\nthree\r\n", "edit", {"old": "one\ntwo", "new": "ONE\nTWO"},
     b"ONE\r\nTWO\r\nthree\r\n"),
    ("crlf-edit-old-sent-with-crlf", b"one\r\ntwo\r\nthree\r\n", "edit", {"old": "one\r\ntwo", "new": "1\n2"},
     b"1\r\n2\r\nthree\r\n"),
    ("crlf-edit-adds-a-line", b"one\r\ntwo\r\nthree\r\n", "edit", {"old": "two", "new": "two\nand a half"},
     b"one\r\ntwo\r\nand a half\r\nthree\r\n"),
    ("crlf-edit-new-text-has-crlf", b"one\r\ntwo\r\nthree\r\n", "edit", {"old": "two", "new": "2a\r\n2b"},
     b"one\r\n2a\r\n2b\r\nthree\r\n"),
    ("crlf-edit-deletes-a-line", b"one\r\ntwo\r\nthree\r\n", "edit", {"old": "two\n", "new": ""}, b"one\r\nthree\r\n"),
    ("lf-edit-new-text-has-crlf", b"one\ntwo\n", "edit", {"old": "two", "new": "2a\r\n2b"}, b"one\n2a\n2b\n"),
    ("mixed-edit-keeps-the-odd-line", b"a\r\nb\nc\r\nd\r\n", "edit", {"old": "c", "new": "C\nC2"},
     b"a\r\nb\nC\r\nC2\r\nd\r\n"),
    ("mixed-edit-on-the-odd-line", b"a\r\nb\nc\r\n", "edit", {"old": "b", "new": "B"}, b"a\r\nB\nc\r\n"),
    ("mixed-write-changes-two-distant-lines", b"a\r\nb\nc\r\nd\r\ne\r\n", "write", {"content": "A\nb\nc\nd\nE\n"},
     b"A\r\nb\nc\r\nd\r\nE\r\n"),
    ("mixed-write-deletes-a-line", b"a\r\nb\nc\r\n", "write", {"content": "a\nc\n"}, b"a\r\nc\r\n"),
    ("cr-only-edit", b"one\rtwo\rthree\r", "edit", {"old": "two", "new": "TWO"}, b"one\rTWO\rthree\r"),
    ("cr-only-edit-adds-a-line", b"one\rtwo\r", "edit", {"old": "two", "new": "two\n2.5"}, b"one\rtwo\r2.5\r"),
    ("cr-only-write", b"one\rtwo\r", "write", {"content": "one\nTWO\nthree\n"}, b"one\rTWO\rthree\r"),
    ("bom-crlf-edit-at-the-start", BOM + b"x = 1\r\ny = 2\r\n", "edit", {"old": "x", "new": "z"},
     BOM + b"z = 1\r\ny = 2\r\n"),
    ("bom-crlf-write", BOM + b"one\r\ntwo\r\n", "write", {"content": "first\nsecond\n"}, BOM + b"first\r\nsecond\r\n"),
    ("no-trailing-newline-edit", b"one\r\ntwo", "edit", {"old": "two", "new": "two\nthree"}, b"one\r\ntwo\r\nthree"),
    ("no-trailing-newline-write", b"one\r\ntwo", "write", {"content": "one\ntwo\n"}, b"one\r\ntwo\r\n"),
    ("empty-write", b"", "write", {"content": "a\nb\n"}, b"a\nb\n"),
    ("empty-write-crlf", b"", "write", {"content": "a\r\nb\r\n"}, b"a\r\nb\r\n"),
    ("crlf-write-whole-new-text", b"one\r\ntwo\r\nthree\r\n", "write", {"content": "alpha\nbeta\n"},
     b"alpha\r\nbeta\r\n"),
    ("crlf-write-same-text", b"one\r\ntwo\r\n", "write", {"content": "one\ntwo\n"}, b"one\r\ntwo\r\n"),
    ("crlf-astral", "é😀 one\r\ntwo 😀 x\r\n".encode(), "edit", {"old": "😀 x", "new": "😀😀 y"},
     "é😀 one\r\ntwo 😀😀 y\r\n".encode()),
]
IDS = [case[0] for case in CASES]


def file_name(case: str) -> str:
    return f"{case}.txt"


def put_files(root) -> None:
    for case, stored, *_ in CASES:
        (root / file_name(case)).write_bytes(stored)


def script_of_every_case() -> list[list[dict]]:
    return [[{"type": "doing", "id": case, "name": tool, "arguments": {"path": file_name(case), **arguments}}
             for case, _stored, tool, arguments, _expected in CASES]]


def buffer_text(data: bytes) -> str:
    """What an editor holds for a file: the decoded text, without the byte-order mark."""
    return decode(data).text


def apply_text_edit(text: str, edit: lsp.TextEdit) -> str:
    """Apply a TextEdit as an editor does, reading positions on its own (UTF-16, LSP line breaks).

    A position past a line's end or inside a character is an error here, not clamped.
    """
    pieces = re.split(r"(\r\n|\r|\n)", text)
    lines, breaks = pieces[0::2], pieces[1::2] + [""]

    def offset(position: lsp.Position) -> int:
        before = sum(len(line) + len(end) for line, end in zip(lines[: position.line], breaks))
        encoded = lines[position.line].encode("utf-16-le")
        assert 2 * position.character <= len(encoded), f"{position} is past the end of its line"
        head = encoded[: 2 * position.character].decode("utf-16-le")  # raises inside a surrogate pair
        return before + len(head)

    return text[: offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end) :]


# -- plain functions ------------------------------------------------------------


@pytest.mark.parametrize("stored, model", [
    ("a\r\nb\r\n", "a\nb\n"), ("a\rb\r", "a\nb\n"), ("a\r\nb\nc\rd", "a\nb\nc\nd"), ("a\n\r\n\r", "a\n\n\n"),
    ("plain\n", "plain\n"), ("", ""),
])
def test_the_model_sees_every_line_break_as_lf(stored, model):
    assert for_model(stored) == model


@pytest.mark.parametrize("text, newline", [
    ("a\r\nb\r\nc\n", "\r\n"), ("a\nb\nc\r\n", "\n"), ("a\rb\rc\n", "\r"), ("a\r\nb\n", "\n"), ("one line", None), ("", None),
])
def test_the_dominant_line_ending(text, newline):
    assert ModelView.of(text).newline == newline


@pytest.mark.parametrize("data, text, encoding", [
    (b"a\r\n", "a\r\n", "utf-8"),
    (BOM + b"a\r\n", "a\r\n", "utf-8"),
    (codecs.BOM_UTF16_LE + "a😀\r\n".encode("utf-16-le"), "a😀\r\n", "utf-16-le"),
    (codecs.BOM_UTF16_BE + "a\n".encode("utf-16-be"), "a\n", "utf-16-be"),
    (codecs.BOM_UTF32_LE + "a\n".encode("utf-32-le"), "a\n", "utf-32-le"),
])
def test_decoding_strips_the_byte_order_mark_and_keeps_the_endings(data, text, encoding):
    stored = decode(data)
    assert (stored.text, stored.encoding) == (text, encoding)
    assert stored.encode(stored.text) == data


def test_a_change_that_keeps_everything_is_no_change():
    assert ModelView.of("a\r\nb\r\n").carry("a\nb\n") is None
    assert ModelView.of("a\rb").carry("a\r\nb") is None  # the model's own \r\n is a line break too


# -- disk: the workspace of a headless run ------------------------------------------


@pytest.mark.parametrize("case, stored, tool, arguments, expected", CASES, ids=IDS)
async def test_disk_workspace_keeps_the_bytes(tmp_path, case, stored, tool, arguments, expected):
    workspace = Workspace(tmp_path)
    (tmp_path / "f.txt").write_bytes(stored)
    result = await Toolbox().call(tool, {"path": "f.txt", **arguments}, workspace)
    assert result["ok"] is True, result
    assert (tmp_path / "f.txt").read_bytes() == expected


@pytest.mark.parametrize("data, seen", [
    (b"one\r\ntwo\r\n", "1\tone\n2\ttwo"),
    (b"one\rtwo\r", "1\tone\n2\ttwo"),
    (BOM + b"one\r\ntwo\n", "1\tone\n2\ttwo"),
    (codecs.BOM_UTF16_LE + "one\r\ntwo 😀\r\n".encode("utf-16-le"), "1\tone\n2\ttwo 😀"),
])
async def test_read_gives_the_model_decoded_text_with_lf(tmp_path, data, seen):
    (tmp_path / "f.txt").write_bytes(data)
    result = await Toolbox().call("read", {"path": "f.txt"}, Workspace(tmp_path))
    assert result["content"] == seen


UTF16_FILES = [
    ("utf-16-le", codecs.BOM_UTF16_LE + "one\r\ntwo\r\n".encode("utf-16-le")),
    ("utf-16-be", codecs.BOM_UTF16_BE + "one\ntwo\n".encode("utf-16-be")),
    ("utf-32-le", codecs.BOM_UTF32_LE + "one\ntwo\n".encode("utf-32-le")),
]


@pytest.mark.parametrize("encoding, data", UTF16_FILES, ids=[e for e, _ in UTF16_FILES])
@pytest.mark.parametrize("tool, arguments", [("edit", {"old": "two", "new": "TWO"}), ("write", {"content": "new\n"})])
async def test_utf16_files_are_read_but_never_rewritten(tmp_path, encoding, data, tool, arguments):
    (tmp_path / "wide.txt").write_bytes(data)
    result = await Toolbox().call(tool, {"path": "wide.txt", **arguments}, Workspace(tmp_path))
    assert result["ok"] is False
    assert f"wide.txt is {encoding.upper()} text: only UTF-8 files are written" in result["error"]
    assert (tmp_path / "wide.txt").read_bytes() == data


async def test_a_file_that_is_not_utf8_is_refused_by_name(tmp_path):
    (tmp_path / "latin.txt").write_bytes(b"caf\xe9\r\n")
    for tool, arguments in (("read", {}), ("edit", {"old": "caf", "new": "x"}), ("write", {"content": "x"})):
        result = await Toolbox().call(tool, {"path": "latin.txt", **arguments}, Workspace(tmp_path))
        assert result == {"ok": False, "error": "latin.txt is not UTF-8 text"}
    assert (tmp_path / "latin.txt").read_bytes() == b"caf\xe9\r\n"


def test_terminal_client_applies_an_edit_to_a_crlf_file_with_a_bom(tmp_path):
    target = tmp_path / "t.txt"
    target.write_bytes(BOM + b"one\r\ntwo\r\nthree\r\n")
    edit = lsp.TextEdit(range=lsp.Range(start=lsp.Position(line=1, character=0), end=lsp.Position(line=1, character=3)),
                        new_text="TWO")
    apply_workspace_edit(lsp.WorkspaceEdit(changes={target.as_uri(): [edit]}))
    assert target.read_bytes() == BOM + b"one\r\nTWO\r\nthree\r\n"
    lone_cr = tmp_path / "mac.txt"
    lone_cr.write_bytes(b"one\rtwo\r")
    edit.new_text = "2"
    apply_workspace_edit(lsp.WorkspaceEdit(changes={lone_cr.as_uri(): [edit]}))
    assert lone_cr.read_bytes() == b"one\r2\r"


def test_terminal_client_refuses_a_utf16_file(tmp_path):
    target = tmp_path / "wide.txt"
    data = codecs.BOM_UTF16_LE + "one\r\n".encode("utf-16-le")
    target.write_bytes(data)
    edit = lsp.TextEdit(range=lsp.Range(start=lsp.Position(line=0, character=0), end=lsp.Position(line=0, character=3)),
                        new_text="ONE")
    with pytest.raises(WorkspaceError, match="UTF-16-LE text"):
        apply_workspace_edit(lsp.WorkspaceEdit(changes={target.as_uri(): [edit]}))
    assert target.read_bytes() == data


# -- through the server ----------------------------------------------------------------


async def test_client_without_apply_edit_gets_the_bytes_kept(project, start_editor):
    add_plugin(project, "scripted")
    put_files(project)
    write_script(project, script_of_every_case())
    plain = lsp.ClientCapabilities(workspace=lsp.WorkspaceClientCapabilities(configuration=True))
    editor = await start_editor(project, client=plain, settings={"provider": "scripted"})
    result = await editor.command("elelem.ask", {"prompt": "edit them all"})
    assert result["error"] is None and editor.edits == []
    assert {case: (project / file_name(case)).read_bytes() for case, *_ in CASES} == {
        case: expected for case, *_, expected in CASES
    }


@pytest.mark.parametrize("opened", [True, False], ids=["open-documents", "closed-files"])
async def test_editor_receives_edits_that_keep_the_endings(project, start_editor, opened):
    add_plugin(project, "scripted")
    put_files(project)
    write_script(project, script_of_every_case())
    editor = await start_editor(project, settings={"provider": "scripted"})
    if opened:
        for case, stored, *_ in CASES:
            editor.open(file_name(case), text=buffer_text(stored))
    await editor.ask("edit them all")

    assert [e["ok"] for e in editor.events() if e["type"] == "result"] == [True] * len(CASES)
    received = {}
    for params in editor.edits:
        [change] = params.edit.document_changes
        [edit] = change.edits
        received[change.text_document.uri] = edit
        assert change.text_document.version == (1 if opened else None)
    assert editor.uri(file_name("crlf-write-same-text")) not in received  # nothing to change, nothing sent
    for case, stored, _tool, _arguments, expected in CASES:
        buffer = buffer_text(stored)
        edit = received.get(editor.uri(file_name(case)))
        after = buffer if edit is None else apply_text_edit(buffer, edit)
        assert after == buffer_text(expected), case
        assert (project / file_name(case)).read_bytes() == stored  # only the editor changes files


async def test_editor_edit_range_covers_only_the_changed_characters(project, start_editor):
    add_plugin(project, "scripted")
    (project / "c.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    write_script(project, [[{"type": "doing", "id": "e", "name": "edit",
                             "arguments": {"path": "c.txt", "old": "one\ntwo\nthree", "new": "one\nTWO\nthree"}}]])
    editor = await start_editor(project, settings={"provider": "scripted"})
    editor.open("c.txt", text="one\r\ntwo\r\nthree\r\n")
    await editor.ask("edit")
    [params] = editor.edits
    [edit] = params.edit.document_changes[0].edits
    assert (edit.range.start, edit.range.end, edit.new_text) == (
        lsp.Position(line=1, character=0), lsp.Position(line=1, character=3), "TWO")


async def test_fix_prompt_shows_the_model_lf_breaks(project, start_editor):
    add_plugin(project, "echo")
    (project / "m.py").write_bytes(b"a = 1\r\nb = c\r\nd = 3\r\n")
    editor = await start_editor(project, settings={"provider": "echo"})
    editor.open("m.py", text="a = 1\r\nb = c\r\nd = 3\r\n")
    result = await editor.command("elelem.fix", {
        "uri": editor.uri("m.py"),
        "range": {"start": {"line": 1, "character": 4}, "end": {"line": 1, "character": 5}},
    })
    assert "a = 1\nb = c\nd = 3" in result["reply"] and "\r" not in result["reply"]


async def test_editor_refuses_a_closed_utf16_file_without_sending_an_edit(project, start_editor):
    add_plugin(project, "scripted")
    data = codecs.BOM_UTF16_LE + "one\r\ntwo\r\n".encode("utf-16-le")
    (project / "wide.txt").write_bytes(data)
    write_script(project, [[{"type": "doing", "id": "e", "name": "edit",
                             "arguments": {"path": "wide.txt", "old": "two", "new": "TWO"}}]])
    editor = await start_editor(project, settings={"provider": "scripted"})
    await editor.ask("edit")
    [outcome] = [e for e in editor.events() if e["type"] == "result"]
    assert outcome["ok"] is False and "UTF-16-LE text" in outcome["error"]
    assert editor.edits == [] and (project / "wide.txt").read_bytes() == data


async def test_editor_may_change_its_own_open_buffer_of_a_utf16_file(project, start_editor):
    # The editor decoded the file and saves it in its own encoding: only elelem's own writes are refused.
    add_plugin(project, "scripted")
    data = codecs.BOM_UTF16_LE + "one\r\ntwo\r\n".encode("utf-16-le")
    (project / "wide.txt").write_bytes(data)
    write_script(project, [[{"type": "doing", "id": "e", "name": "edit",
                             "arguments": {"path": "wide.txt", "old": "two", "new": "TWO"}}]])
    editor = await start_editor(project, settings={"provider": "scripted"})
    editor.open("wide.txt", text="one\r\ntwo\r\n")
    await editor.ask("edit")
    [params] = editor.edits
    [edit] = params.edit.document_changes[0].edits
    assert apply_text_edit("one\r\ntwo\r\n", edit) == "one\r\nTWO\r\n"
    assert (project / "wide.txt").read_bytes() == data


def test_ask_keeps_the_bytes_on_disk(project):
    add_plugin(project, "scripted")
    put_files(project)
    (project / "wide.txt").write_bytes(UTF16_FILES[0][1])
    script = script_of_every_case()
    script[0].append({"type": "doing", "id": "wide", "name": "write", "arguments": {"path": "wide.txt", "content": "x"}})
    write_script(project, script)

    run = run_ask(project, "-p", "scripted", "edit them all")

    assert run.returncode == 0, run.stderr
    assert {case: (project / file_name(case)).read_bytes() for case, *_ in CASES} == {
        case: expected for case, *_, expected in CASES
    }
    assert (project / "wide.txt").read_bytes() == UTF16_FILES[0][1]
    assert "UTF-16-LE text: only UTF-8 files are written" in run.stderr + json.dumps(run.stdout)
