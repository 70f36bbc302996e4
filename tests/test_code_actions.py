"""Code actions as a plain function: a "Fix with elelem" quickfix per diagnostic, "Explain with
elelem" for a selection, ``only`` honoured, and arguments the commands accept (end to end in
test_edits_actions.py)."""

from __future__ import annotations

import pytest
from lsprotocol import types as lsp

from elelem_lsp.server.actions import code_actions
from elelem_lsp.server.commands import COMMANDS, parse

URI = "file:///project/m.py"


def rng(a, b, c, d):
    return lsp.Range(start=lsp.Position(line=a, character=b), end=lsp.Position(line=c, character=d))


def params(selection, diagnostics=(), only=None):
    return lsp.CodeActionParams(
        text_document=lsp.TextDocumentIdentifier(uri=URI),
        range=selection,
        context=lsp.CodeActionContext(diagnostics=list(diagnostics), only=only),
    )


def diagnostic(message, **more):
    return lsp.Diagnostic(range=rng(1, 4, 1, 9), message=message, **more)


def test_each_diagnostic_gets_its_own_fix_carrying_it():
    first = diagnostic("undefined name 'x'", code="F821", source="pyflakes", severity=lsp.DiagnosticSeverity.Error)
    second = diagnostic("line too long\nsecond line", code=501)
    fixes = code_actions(params(rng(1, 4, 1, 4), [first, second]))
    assert [f.title for f in fixes] == ["Fix with elelem: undefined name 'x'", "Fix with elelem: line too long"]
    assert all(f.kind == lsp.CodeActionKind.QuickFix and f.command.command == "elelem.fix" for f in fixes)
    [argument] = fixes[0].command.arguments
    assert argument == {
        "uri": URI,
        "range": {"start": {"line": 1, "character": 4}, "end": {"line": 1, "character": 9}},
        "diagnostics": [{"message": "undefined name 'x'", "range": argument["range"], "code": "F821",
                         "source": "pyflakes", "severity": 1}],
    }
    assert fixes[1].command.arguments[0]["diagnostics"][0]["code"] == 501


def test_a_long_message_is_cut_in_the_title_and_an_empty_one_is_plain():
    [long] = code_actions(params(rng(0, 0, 0, 0), [diagnostic("x" * 200)]))
    assert long.title == "Fix with elelem: " + "x" * 60
    [empty] = code_actions(params(rng(0, 0, 0, 0), [diagnostic("")]))
    assert empty.title == "Fix with elelem"


def test_a_selection_can_be_explained_and_an_empty_one_cannot():
    assert code_actions(params(rng(2, 3, 2, 3))) == []
    [explain] = code_actions(params(rng(1, 0, 2, 5)))
    assert explain.title == "Explain with elelem" and explain.kind == lsp.CodeActionKind.Refactor
    assert explain.command.command == "elelem.ask"
    assert explain.command.arguments[0]["prompt"] == "Explain this code."


@pytest.mark.parametrize(
    ("only", "titles"),
    [
        (None, ["Fix with elelem: bad", "Explain with elelem"]),
        ([lsp.CodeActionKind.QuickFix], ["Fix with elelem: bad"]),
        ([lsp.CodeActionKind.Refactor], ["Explain with elelem"]),
        (["refactor.rewrite"], []),  # a sub-kind asked for does not include its parent
        ([lsp.CodeActionKind.Source], []),
    ],
)
def test_only_limits_the_kinds(only, titles):
    actions = code_actions(params(rng(1, 0, 1, 5), [diagnostic("bad")], only=only))
    assert [a.title for a in actions] == titles


def test_every_action_is_a_command_its_handler_accepts():
    actions = code_actions(params(rng(1, 0, 1, 5), [diagnostic("bad", code="E1", source="lint")]))
    for action in actions:
        model = COMMANDS[action.command.command][0]
        assert parse(model, tuple(action.command.arguments)) is not None
