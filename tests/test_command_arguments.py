"""Command arguments as plain functions: each elelem.* command's one object argument is
validated by its model, and a bad one is InvalidParams naming the field (end to end in
test_commands.py)."""

from __future__ import annotations

import pytest
from pygls.exceptions import JsonRpcInvalidParams

from elelem_lsp.server.commands import COMMANDS, fix_request, parse

RANGE = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}


def parsed(name, *arguments):
    return parse(COMMANDS[name][0], arguments)


@pytest.mark.parametrize("name, arguments, field", [
    ("elelem.ask", [{"prompt": 5}], "prompt"),
    ("elelem.ask", [{}], "prompt"),
    ("elelem.ask", [{"prompt": ""}], "prompt"),
    ("elelem.ask", [{"prompt": "x", "range": {"start": {"line": 0}}}], "range.start.character"),
    ("elelem.ask", [{"prompt": "x", "range": {"start": {"line": -1, "character": 0}, "end": RANGE["end"]}}], "range.start.line"),
    ("elelem.ask", [{"prompt": "x", "range": {"start": {"line": 2**31, "character": 0}, "end": RANGE["end"]}}], "range.start.line"),
    ("elelem.ask", [{"prompt": "x", "progressToken": 1.5}], "progressToken"),
    ("elelem.ask", [{"prompt": "x", "colour": "red"}], "colour"),
    ("elelem.ask", ["just a string"], "one object argument"),
    ("elelem.ask", [{"prompt": "x"}, {"prompt": "y"}], "one object argument"),
    ("elelem.fix", [{"range": RANGE}], "uri"),
    ("elelem.fix", [{"uri": "file:///a", "range": RANGE, "diagnostics": [{"range": RANGE}]}], "diagnostics.0.message"),
    ("elelem.selectProvider", [{"model": "m"}], "name"),
    ("elelem.selectProvider", [{"name": ""}], "name"),
    ("elelem.providers", [{"uri": 3}], "uri"),
    ("elelem.cancel", [[]], "one object argument"),
    ("elelem.tools", [{"extra": 1}], "extra"),
    ("elelem.reload", [{"uri": "file:///a"}], "uri"),
    ("elelem.resume", [{}], "id"),
    ("elelem.resume", [{"id": 7}], "id"),
    ("elelem.resume", [{"id": "../../etc/passwd"}], "id"),
    ("elelem.resume", [{"id": "ok\n"}], "id"),
    ("elelem.deleteConversation", [{"id": ""}], "id"),
    ("elelem.deleteConversation", [{"id": "a" * 65}], "id"),
    ("elelem.transcript", [{"id": "a/b"}], "id"),
    ("elelem.conversations", [{"id": "x"}], "id"),
    ("elelem.compact", [{"turns": 3}], "turns"),
])
def test_bad_arguments_are_invalid_params_naming_the_field(name, arguments, field):
    with pytest.raises(JsonRpcInvalidParams) as error:
        parsed(name, *arguments)
    assert field in error.value.message


@pytest.mark.parametrize("arguments", [(), (None,), ({},)])
def test_no_argument_is_an_empty_object(arguments):
    assert parse(COMMANDS["elelem.tools"][0], arguments) is not None
    assert parse(COMMANDS["elelem.providers"][0], arguments).uri is None


def test_good_arguments_are_read_with_their_wire_names():
    args = parsed("elelem.ask", {"prompt": "why?", "uri": "file:///a.py", "range": RANGE, "progressToken": "t"})
    assert (args.prompt, args.uri, args.progress_token, args.range.end.character) == ("why?", "file:///a.py", "t", 1)
    assert parsed("elelem.ask", {"prompt": "x", "progressToken": 7}).progress_token == 7
    fix = parsed("elelem.fix", {"uri": "file:///a", "range": RANGE, "diagnostics": [
        {"message": "bad", "range": RANGE, "code": "E1", "source": "lint", "data": {"kept": True}}]})
    assert fix.diagnostics[0].code == "E1"
    assert parsed("elelem.selectProvider", {"name": "echo", "model": "m"}).model == "m"
    assert parsed("elelem.resume", {"id": "20260101T000000-abcd1234", "uri": "file:///a"}).id == "20260101T000000-abcd1234"
    assert parsed("elelem.transcript", {}).id is None


def test_the_fix_prompt_names_each_problem_its_line_and_source():
    fix = parsed("elelem.fix", {"uri": "file:///a", "range": RANGE, "diagnostics": [
        {"message": "undefined name", "range": {"start": {"line": 4, "character": 0}, "end": RANGE["end"]},
         "source": "pyflakes", "code": "F821"},
        {"message": "no source", "range": RANGE, "code": 7},
        {"message": "plain", "range": RANGE}]})
    assert fix_request(fix.diagnostics) == (
        "Fix the problems reported here:\n"
        "- line 5: undefined name [pyflakes F821]\n"
        "- line 1: no source [7]\n"
        "- line 1: plain"
    )
    assert fix_request([]) == "Fix the problem in the selected code."
