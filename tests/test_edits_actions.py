"""Code actions, confirmation annotations and edits that went stale while the person typed."""

from __future__ import annotations

from typing import Union

from lsprotocol import types as lsp

from scaffold import add_plugin, write_script
from elelem_lsp.textedits import Change, Position, apply_changes


def read_code_actions_as_code_actions(editor) -> None:
    """lsprotocol's client converter reads a CodeAction with a `command` as a Command: say which it is."""
    converter = editor.client.protocol._converter

    def structure(value, _):
        is_action = "kind" in value or "diagnostics" in value or isinstance(value.get("command"), dict)
        return converter.structure(value, lsp.CodeAction if is_action else lsp.Command)

    converter.register_structure_hook(Union[lsp.Command, lsp.CodeAction], structure)


def apply(text, edit):
    r = edit.range
    change = Change(Position(r.start.line, r.start.character), Position(r.end.line, r.end.character), edit.new_text)
    return apply_changes(text, [change])


def code_action_params(uri, start, end, diagnostics=()):
    return lsp.CodeActionParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri),
        range=lsp.Range(start=lsp.Position(**start), end=lsp.Position(**end)),
        context=lsp.CodeActionContext(diagnostics=list(diagnostics)),
    )


async def test_fix_with_elelem_for_a_diagnostic_edits_through_the_editor(project, start_editor):
    add_plugin(project, "scripted")
    source = "def f():\n    return undefined_name\n"
    (project / "m.py").write_text(source)
    write_script(project, [[{"type": "doing", "id": "e", "name": "edit",
                             "arguments": {"path": "m.py", "old": "undefined_name", "new": "None"}}]])
    editor = await start_editor(project, settings={"provider": "scripted"})
    read_code_actions_as_code_actions(editor)
    uri = editor.open("m.py", language="python")
    diagnostic = lsp.Diagnostic(
        range=lsp.Range(start=lsp.Position(line=1, character=11), end=lsp.Position(line=1, character=25)),
        message="undefined name 'undefined_name'", code="F821", source="pyflakes", severity=lsp.DiagnosticSeverity.Error,
    )

    actions = await editor.client.text_document_code_action_async(
        code_action_params(uri, {"line": 1, "character": 11}, {"line": 1, "character": 11}, [diagnostic]))

    [fix] = actions
    assert fix.title == "Fix with elelem: undefined name 'undefined_name'"
    assert fix.kind == lsp.CodeActionKind.QuickFix and list(fix.diagnostics) == [diagnostic]
    assert fix.command.command == "elelem.fix"
    result = await editor.command(fix.command.command, *fix.command.arguments)
    assert result["error"] is None
    [params] = editor.edits
    [change] = params.edit.document_changes
    assert change.text_document.version == 1
    [edit] = change.edits
    assert (edit.range.start.line, edit.range.end.line) == (1, 1)  # only the changed part of line 2
    assert apply(source, edit) == "def f():\n    return None\n"
    assert (project / "m.py").read_text() == source  # only the editor changes the file


async def test_fix_prompt_carries_the_diagnostic_and_the_code(project, start_editor):
    add_plugin(project, "echo")
    (project / "m.py").write_text("a = 1\nb = c\nd = 3\n")
    editor = await start_editor(project, settings={"provider": "echo"})
    result = await editor.command("elelem.fix", {
        "uri": editor.uri("m.py"),
        "range": {"start": {"line": 1, "character": 4}, "end": {"line": 1, "character": 5}},
        "diagnostics": [{"message": "undefined name 'c'", "code": "F821", "source": "pyflakes",
                         "range": {"start": {"line": 1, "character": 4}, "end": {"line": 1, "character": 5}}}],
    })
    reply = result["reply"]
    assert "line 2: undefined name 'c' [pyflakes F821]" in reply
    assert "File: m.py (lines 1-3)" in reply and "a = 1\nb = c\nd = 3" in reply


async def test_explain_with_elelem_for_a_selection(project, start_editor):
    add_plugin(project, "echo")
    (project / "m.py").write_text("x = 1\ny = 2\n")
    editor = await start_editor(project, settings={"provider": "echo"})
    read_code_actions_as_code_actions(editor)
    uri = editor.open("m.py")
    assert not await editor.client.text_document_code_action_async(
        code_action_params(uri, {"line": 0, "character": 0}, {"line": 0, "character": 0}))

    [explain] = await editor.client.text_document_code_action_async(
        code_action_params(uri, {"line": 1, "character": 0}, {"line": 1, "character": 5}))

    assert explain.title == "Explain with elelem" and explain.kind == lsp.CodeActionKind.Refactor
    quickfixes_only = code_action_params(uri, {"line": 1, "character": 0}, {"line": 1, "character": 5})
    quickfixes_only.context.only = [lsp.CodeActionKind.QuickFix]
    assert not await editor.client.text_document_code_action_async(quickfixes_only)
    result = await editor.command(explain.command.command, *explain.command.arguments)
    assert result["reply"] == "Explain this code.\n\nFile: m.py (line 2)\n```plaintext\ny = 2\n```"


async def test_confirm_edits_marks_each_edit_as_needing_confirmation(project, start_editor):
    add_plugin(project, "scripted")
    (project / "a.txt").write_text("old\n")
    write_script(project, [[{"type": "doing", "id": "w", "name": "write", "arguments": {"path": "a.txt", "content": "new\n"}}]])
    editor = await start_editor(project, settings={"provider": "scripted", "confirmEdits": True})
    await editor.ask("change it")
    [params] = editor.edits
    [change] = params.edit.document_changes
    [edit] = change.edits
    annotation = params.edit.change_annotations[edit.annotation_id]
    assert annotation.needs_confirmation is True and annotation.label == "elelem: write a.txt"


async def test_stale_edit_is_recomputed_and_retried_once(project, start_editor):
    add_plugin(project, "scripted")
    (project / "s.txt").write_text("one\ntwo\n")
    write_script(project, [[{"type": "doing", "id": "e", "name": "edit", "arguments": {"path": "s.txt", "old": "two", "new": "TWO"}}]])
    editor = await start_editor(project, settings={"provider": "scripted"})
    editor.open("s.txt")

    def person_types_first(params):
        if len(editor.edits) == 1:
            editor.type_text("s.txt", "zero\none\ntwo\n")  # the editor is now at version 2
            return False
        return True

    editor.answer_edit = person_types_first
    await editor.ask("edit")

    first, second = editor.edits
    assert first.edit.document_changes[0].text_document.version == 1
    retry = second.edit.document_changes[0]
    assert retry.text_document.version == 2
    assert retry.edits[0].range.start == lsp.Position(line=2, character=0)
    assert apply("zero\none\ntwo\n", retry.edits[0]) == "zero\none\nTWO\n"  # the retry, applied to the typed text
    assert [e["ok"] for e in editor.events() if e["type"] == "result"] == [True]


async def test_edit_that_stays_stale_is_reported(project, start_editor):
    add_plugin(project, "scripted")
    (project / "s.txt").write_text("one\n")
    write_script(project, [[{"type": "doing", "id": "e", "name": "edit", "arguments": {"path": "s.txt", "old": "one", "new": "1"}}]])
    editor = await start_editor(project, settings={"provider": "scripted"})
    editor.open("s.txt")

    def person_keeps_typing(params):
        editor.type_text("s.txt", f"one {len(editor.edits)}\n")
        return False

    editor.answer_edit = person_keeps_typing
    await editor.ask("edit")
    assert len(editor.edits) == 2
    [outcome] = [e for e in editor.events() if e["type"] == "result"]
    assert outcome["ok"] is False and "the file changed in the editor" in outcome["error"]
    assert (project / "s.txt").read_text() == "one\n"
