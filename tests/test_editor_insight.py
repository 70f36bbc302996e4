"""The editor's language servers through a real server session (pytest-lsp): a client that
announces ``capabilities.experimental.elelem`` is asked ``elelem/diagnostics`` around the model's
changes and ``elelem/definition`` for the ``definition`` tool, and the model's next fetch holds
the answers; a client that announces nothing is never asked, nor offered those tools."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import pytest
from lsprotocol import types as lsp
from pytest_lsp import client_capabilities
from scaffold import add_plugin, wait_until, write_script

EDITOR_TOOLS = {"diagnostics", "definition", "references", "symbols"}
TYPE_ERROR = "Type 'string' is not assignable to type 'number'."


def announcing(**kinds: bool) -> lsp.ClientCapabilities:
    capabilities = client_capabilities("visual-studio-code")
    capabilities.experimental = {"elelem": kinds}
    return capabilities


def fetches(project) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (project / ".agents/fetches.jsonl").read_text().splitlines()]


def plain(params: Any) -> Any:
    """pygls hands a custom request's params over as an object with attributes: a dict again."""
    if isinstance(params, (list, tuple)) and not hasattr(params, "_fields"):
        return [plain(item) for item in params]
    if hasattr(params, "_asdict"):
        return {key: plain(value) for key, value in params._asdict().items()}
    if isinstance(params, dict):
        return {key: plain(value) for key, value in params.items()}
    return params


WRITE = {"type": "doing", "id": "w", "name": "write", "arguments": {"path": "app.ts", "content": "let n: number = 'one';\n"}}


@pytest.mark.parametrize("init_options", [None, {"client": "elelem-vscode"}], ids=["plain", "ours-announcing-nothing"])
async def test_a_client_that_announces_nothing_is_never_asked_and_not_offered_the_tools(project, start_editor, init_options):
    add_plugin(project, "scripted")
    write_script(project, [[WRITE], [{"type": "record"}]])
    asked: list[Any] = []
    editor = await start_editor(
        project,
        settings={"provider": "scripted"},
        init_options=init_options,
        handlers={method: lambda params: asked.append(params) for method in ("elelem/diagnostics", "elelem/definition")},
    )
    result = await editor.ask("write app.ts")
    assert result["error"] is None and len(editor.edits) == 1
    [fetch] = fetches(project)
    assert not {tool["function"]["name"] for tool in fetch["tools"]} & EDITOR_TOOLS
    assert "checked" not in json.loads(fetch["messages"][-1]["content"])
    assert asked == [] and not [e for e in editor.events() if e["type"] == "checked"]


async def test_the_models_next_fetch_holds_the_editors_new_problem_and_definitions(project, start_editor):
    add_plugin(project, "scripted")
    (project / "lib.ts").write_text("export function add(a: number, b: number) {\n  return a + b;\n}\n")
    (project / "app.ts").write_text("import { add } from './lib';\nadd(1, 2);\n")
    definition = {"type": "doing", "id": "d", "name": "definition", "arguments": {"path": "app.ts", "symbol": "add", "line": 2}}
    write = {"type": "doing", "id": "w", "name": "edit", "arguments": {"path": "app.ts", "old": "add(1, 2);", "new": "let n: number = 'one';"}}
    write_script(project, [[definition], [write], [{"type": "record"}]])
    asked: list[tuple[str, Any]] = []

    def diagnostics(params: Any) -> dict[str, Any]:
        params = plain(params)
        asked.append(("elelem/diagnostics", params))
        edited = bool(editor.edits)
        problem = {
            "range": {"start": {"line": 1, "character": 4}, "end": {"line": 1, "character": 5}},
            "severity": 1,
            "source": "ts",
            "code": 2322,
            "message": TYPE_ERROR,
        }
        return {"items": [{"uri": uri, "diagnostics": [problem] if edited else []} for uri in params["uris"]], "generation": len(asked)}

    def definition_of(params: Any) -> list[dict[str, Any]]:
        asked.append(("elelem/definition", plain(params)))
        return [{"uri": (project / "lib.ts").as_uri(), "range": {"start": {"line": 0, "character": 16}, "end": {"line": 0, "character": 19}}}]

    editor = await start_editor(
        project,
        client=announcing(diagnostics=True, definition=True),
        settings={"provider": "scripted", "checkWaitMs": 700},
        init_options={"client": "elelem-vscode"},
        handlers={"elelem/diagnostics": diagnostics, "elelem/definition": definition_of},
    )
    result = await editor.ask("break app.ts")
    assert result["error"] is None
    [fetch] = fetches(project)
    assert {tool["function"]["name"] for tool in fetch["tools"]} & EDITOR_TOOLS == {"diagnostics", "definition"}
    found, edited = (json.loads(message["content"]) for message in fetch["messages"][-3::2])
    assert found["definitions"] == ["lib.ts:1:17  export function add(a: number, b: number) {"]
    assert edited["checked"] == f"checked app.ts: 1 new error\napp.ts:2:5 error: {TYPE_ERROR} [ts 2322]"
    uri = (project / "app.ts").as_uri()
    assert asked == [
        ("elelem/definition", {"uri": uri, "position": {"line": 1, "character": 0}}),
        ("elelem/diagnostics", {"uris": [uri]}),
        ("elelem/diagnostics", {"uris": [uri], "waitMs": 700, "since": 2}),
    ]
    [checked] = [e for e in editor.events() if e["type"] == "checked"]
    assert checked["text"] == "checked app.ts: 1 new error" and checked["newProblems"][0]["line"] == 2


ANSWER_SECONDS = 0.5
# The server as started, with the editor's answer time cut from 30 s to ANSWER_SECONDS.
SHORT_ANSWER_SERVER = [
    sys.executable,
    "-c",
    f"import sys, elelem_lsp.server.insight as insight; insight.ANSWER_SECONDS = {ANSWER_SECONDS}; "
    "from elelem_lsp.cli import main; sys.exit(main(['serve']))",
]


async def test_an_editor_that_never_answers_the_check_holds_the_turn_for_the_wait_and_the_answer_time_then_it_goes_on(
    project, start_editor, capsys
):
    """The editor's language server may take the whole ``checkWaitMs`` to settle and then some
    more to answer; one that never answers costs the turn that much and no more: the step goes on
    unchecked and the model is asked again."""
    add_plugin(project, "scripted")
    write_script(project, [[WRITE], [{"type": "record"}, {"type": "saying", "text": "went on"}]])
    never: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    waits: list[Any] = []

    async def diagnostics(params: Any) -> dict[str, Any]:
        params = plain(params)
        if "waitMs" in params:  # the check after the change: no answer, ever
            waits.append(params["waitMs"])
            await never
        return {"items": [{"uri": uri, "diagnostics": []} for uri in params["uris"]], "generation": 1}

    editor = await start_editor(
        project,
        client=announcing(diagnostics=True),
        settings={"provider": "scripted", "checkWaitMs": 2000},
        init_options={"client": "elelem-vscode"},
        handlers={"elelem/diagnostics": diagnostics},
        server_command=SHORT_ANSWER_SERVER,
    )
    loop = asyncio.get_running_loop()
    started = loop.time()
    try:
        result = await asyncio.wait_for(editor.ask("write app.ts"), 20)
    finally:
        never.cancel()
    took = loop.time() - started
    assert result["error"] is None and result["reply"] == "went on"
    assert waits == [2000]
    assert took >= 2.0 + ANSWER_SECONDS  # the editor had its whole wait and its answer time
    [then] = fetches(project)  # the model's fetch after the step
    assert "checked" not in json.loads(then["messages"][-1]["content"])  # the step went on unchecked
    assert not [e for e in editor.events() if e["type"] == "checked"]
    await wait_until(lambda: "did not answer elelem/diagnostics within 2.5s" in capsys.readouterr().err, "the server's warning")
