"""An editor that answers the server's own requests with results that do not fit them.

For each request the server makes of the editor (``workspace/applyEdit``, ``window/showDocument``,
``window/showMessageRequest``, ``workspace/configuration``, ``window/workDoneProgress/create``,
``elelem/input``) a real server is answered with many invalid results: ``{}``, ``null`` where it
is not allowed, a number, a string, an array, ``true``, fields of the wrong type. Each time the
turn finishes, what needed the editor's yes is taken as a no (the edit refused, the command not
run), the server answers the next request, and the editor never gets a message without an id
(an error answered to its answer).
"""

from __future__ import annotations

from typing import Any

from lsprotocol import types as lsp

from scaffold import add_plugin, wait_until, write_script

WRONG_EVERYWHERE = [{}, 5, "yes", [1], True, [{}]]
INVALID = {
    lsp.WORKSPACE_APPLY_EDIT: [{}, 5, "yes", [1], [{}], None,  # (true is taken by the test client for a yes) {"applied": "true"}, {"applied": "false"}, {"applied": 1},
                               {"applied": None}, {"applied": True, "failureReason": 5},
                               {"applied": True, "failedChange": "x"}],
    lsp.WINDOW_SHOW_DOCUMENT: [*WRONG_EVERYWHERE, None, {"success": "true"}, {"success": 1}],
    lsp.WINDOW_SHOW_MESSAGE_REQUEST: [*WRONG_EVERYWHERE, {"title": 5}, {"title": None}, {"title": ["Allow once"]}],
    lsp.WORKSPACE_CONFIGURATION: [{}, 5, "provider", True, None, {"elelem": {"provider": "scripted"}}],
    lsp.WINDOW_WORK_DONE_PROGRESS_CREATE: WRONG_EVERYWHERE,
    "elelem/input": [5, "a reply", [1], True, {"text": 5}, {"text": ["a"]}, {"text": {"x": 1}}],
}


def record_raw(editor) -> list[dict[str, Any]]:
    """Every message the server sends the editor from now on, as it came."""
    received: list[dict[str, Any]] = []
    protocol = editor.client.protocol
    structure = protocol.structure_message

    def recording(data: dict[str, Any]) -> Any:
        received.append(data)
        return structure(data)

    protocol.structure_message = recording
    return received


def without_id(received: list[dict[str, Any]]) -> list[dict[str, Any]]:
    messages = [m for m in received if "jsonrpc" in m]  # structure_message also sees their parts
    assert messages, "nothing was recorded"
    return [m for m in messages if "method" not in m and m.get("id") is None]


async def answering(start_editor, project, method: str, **options: Any):
    """A server whose ``method`` requests the editor answers with INVALID[method] in turn (then
    ``[{}]``), and the list the editor's raw input is recorded in."""
    add_plugin(project, "scripted")
    results = iter(INVALID[method])
    editor = await start_editor(project, handlers={method: lambda params: next(results, [{}])}, **options)
    return editor, record_raw(editor)


async def one_call(editor, number: int, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Turn ``number``: the model calls ``tool`` once, then says "done."; the call's result event."""
    write_script(editor.root, [[{"type": "doing", "id": f"c{number}", "name": tool, "arguments": arguments}]])
    answer = await editor.ask(f"call {tool}", token=f"t{number}")
    assert answer["reply"] == "done." and answer["error"] is None, answer
    [outcome] = [e for e in editor.events(f"t{number}") if e["type"] == "result"]
    return outcome


async def still_answers(editor) -> None:
    """The server goes on: another turn, answered."""
    write_script(editor.root, [])
    assert (await editor.ask("again", token="again"))["reply"] == "done."


async def test_an_invalid_answer_to_apply_edit_is_a_refused_edit(project, start_editor):
    add_plugin(project, "scripted")
    (project / "a.txt").write_text("old\n")
    editor = await start_editor(project, settings={"provider": "scripted"})
    received = record_raw(editor)
    for number, result in enumerate(INVALID[lsp.WORKSPACE_APPLY_EDIT]):
        editor.answer_edit = lambda params, result=result: result
        outcome = await one_call(editor, number, "write", {"path": "a.txt", "content": "new\n"})
        assert not outcome["ok"] and "refused" in outcome["error"] and "invalid" in outcome["error"], (result, outcome)
        assert (project / "a.txt").read_text() == "old\n"
    await still_answers(editor)
    assert without_id(received) == []


async def test_a_valid_answer_to_apply_edit_still_applies(project, start_editor):
    """The check takes what is right: a plain yes, with the optional fields null."""
    add_plugin(project, "scripted")
    write_script(project, [[{"type": "doing", "id": "w", "name": "write", "arguments": {"path": "b.txt", "content": "x\n"}}]])
    editor = await start_editor(project, settings={"provider": "scripted"})
    editor.answer_edit = lambda params: {"applied": True, "failureReason": None, "failedChange": None}
    await editor.ask("write it")
    [outcome] = [e for e in editor.events() if e["type"] == "result"]
    assert outcome["ok"], outcome


PLAIN_CLIENT = lsp.ClientCapabilities(
    window=lsp.WindowClientCapabilities(show_document=lsp.ShowDocumentClientCapabilities(support=True)),
    workspace=lsp.WorkspaceClientCapabilities(configuration=True, apply_edit=True),
)


async def test_invalid_answers_to_show_document_leave_the_turns_going(project, start_editor):
    add_plugin(project, "scripted")
    results = iter(INVALID[lsp.WINDOW_SHOW_DOCUMENT])
    asked: list[Any] = []

    def show(params: lsp.ShowDocumentParams) -> Any:
        asked.append(params)
        return next(results)

    editor = await start_editor(project, client=PLAIN_CLIENT, settings={"provider": "scripted"},
                                handlers={lsp.WINDOW_SHOW_DOCUMENT: show})
    received = record_raw(editor)
    for number, _ in enumerate(INVALID[lsp.WINDOW_SHOW_DOCUMENT]):
        assert (await editor.ask(f"turn {number}", token=f"t{number}"))["reply"] == "done."
        await wait_until(lambda: len(asked) == number + 1, "the transcript shown")
    await still_answers(editor)
    await wait_until(lambda: len(asked) == len(INVALID[lsp.WINDOW_SHOW_DOCUMENT]) + 1, "the last transcript shown")
    assert without_id(received) == []


async def test_an_invalid_answer_to_a_permission_question_runs_nothing(project, start_editor):
    editor, received = await answering(start_editor, project, lsp.WINDOW_SHOW_MESSAGE_REQUEST, settings={"provider": "scripted"})
    for number, result in enumerate(INVALID[lsp.WINDOW_SHOW_MESSAGE_REQUEST]):
        outcome = await one_call(editor, number, "execute", {"command": "touch ran.txt"})
        assert not outcome["ok"], (result, outcome)
        assert not (project / "ran.txt").exists(), result
    await still_answers(editor)
    assert without_id(received) == []


async def test_invalid_settings_from_the_editor_leave_the_defaults(project, start_editor):
    """No settings: the provider is the environment's (the stub here), and each turn is answered."""
    editor, received = await answering(start_editor, project, lsp.WORKSPACE_CONFIGURATION)
    for number, result in enumerate(INVALID[lsp.WORKSPACE_CONFIGURATION]):
        answer = await editor.ask("hello", token=f"t{number}")
        assert answer["provider"] == "stub" and answer["error"] is None, (result, answer)
    assert without_id(received) == []


async def test_an_invalid_answer_to_progress_create_tells_the_turn_in_the_log(project, start_editor):
    editor, received = await answering(
        start_editor, project, lsp.WINDOW_WORK_DONE_PROGRESS_CREATE, settings={"provider": "scripted"}
    )
    for number, result in enumerate(INVALID[lsp.WINDOW_WORK_DONE_PROGRESS_CREATE]):
        write_script(project, [[{"type": "saying", "text": f"the words of turn {number}"}]])
        answer = await editor.command("elelem.ask", {"prompt": f"turn {number}"})  # no token: the server asks for one
        assert answer["reply"] == f"the words of turn {number}", result
        told = lambda: [m.message for m in editor.client.log_messages]  # noqa: E731
        await wait_until(lambda: f"elelem: turn {number}" in told() and told()[-1] == "elelem: done", "the turn in the log")
    assert not editor.progress  # nothing on a token the editor never made
    assert without_id(received) == []


async def test_an_invalid_answer_to_elelem_input_ends_the_turn_with_an_error(project, start_editor):
    editor, received = await answering(start_editor, project, "elelem/input", settings={"provider": "human"})
    for number, result in enumerate(INVALID["elelem/input"]):
        answer = await editor.ask("hello", token=f"t{number}")
        assert answer["reply"].startswith("Error: ") and "invalid" in answer["reply"], (result, answer)
    assert without_id(received) == []


def test_the_checks_name_the_field_that_is_wrong():
    from elelem_lsp.server.protocol import ANSWER_CHECKS

    check = ANSWER_CHECKS[lsp.WORKSPACE_APPLY_EDIT]
    assert check({"applied": "false"}) == "applied: must be a boolean, not a string"
    assert check({}) == "applied: missing"
    assert check([1]) == "must be an object, not an array"
    assert check({"applied": False, "failedChange": True}) == "failedChange: must be an integer or null, not a boolean"
    assert check({"applied": False, "failureReason": "read-only"}) is None
    assert ANSWER_CHECKS[lsp.WORKSPACE_CONFIGURATION]({"a": 1}) == "must be an array, not an object"
