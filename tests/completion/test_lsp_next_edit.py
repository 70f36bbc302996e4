"""Next edit end to end: a real server session (pytest-lsp), the fake model server answering in Zeta's form.

A parameter renamed keystroke by keystroke: the model is asked with the rename as a diff and the
cursor marked, and the request returns edits for the remaining uses only, which applied as an
editor applies them leave the file renamed; acceptance counted beside completion's. A private
file: no model request. A plain client is sent nothing new and its changes are not kept.
"""

from __future__ import annotations

import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcInvalidParams
from pytest_lsp import client_capabilities

from elelem_lsp.nextedit.zeta import CURSOR, EDITABLE_END, EDITABLE_START

SOURCE = "def total(values, scale):\n    result = 0\n    for value in values:\n        result += value * scale\n    return result * scale\n"
RENAMED = SOURCE.replace("scale", "factor")


@pytest.fixture
def model(fim):
    """The fake server answering the Zeta form: the region with every ``scale`` renamed."""
    region = RENAMED.rstrip("\n")
    fim.answer = ["```calc.py\n", EDITABLE_START + "\n", region[:30], region[30:], "\n" + EDITABLE_END, "\n```"]
    return fim


def announcing(next_edit: bool = True) -> lsp.ClientCapabilities:
    capabilities = client_capabilities("neovim")
    capabilities.experimental = {"elelem": {"nextEdit": True}} if next_edit else None
    return capabilities


async def start(start_editor, project, fim, client):
    settings = {"provider": "llamacpp", "completion": {"api": "chat"}}
    return await start_editor(project, client=client, settings=settings, env={"LLAMACPP_BASE_URL": f"{fim.url}/v1"})


def rename_keystrokes(editor, uri: str) -> None:
    """Select ``scale`` in the signature and type ``factor`` over it, as an editor sends the changes."""
    version = 1

    def change(start: int, end: int, text: str) -> None:
        nonlocal version
        version += 1
        editor.client.text_document_did_change(
            lsp.DidChangeTextDocumentParams(
                text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[
                    lsp.TextDocumentContentChangePartial(
                        range=lsp.Range(start=lsp.Position(line=0, character=start), end=lsp.Position(line=0, character=end)),
                        text=text,
                    )
                ],
            )
        )

    change(18, 23, "")
    for at, letter in enumerate("factor"):
        change(18 + at, 18 + at, letter)


def applied(text: str, edits: list[dict]) -> str:
    lines = text.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    for edit in sorted(edits, key=lambda e: (e["range"]["start"]["line"], e["range"]["start"]["character"]), reverse=True):
        start = starts[edit["range"]["start"]["line"]] + edit["range"]["start"]["character"]
        end = starts[edit["range"]["end"]["line"]] + edit["range"]["end"]["character"]
        text = text[:start] + edit["newText"] + text[end:]
    return text


async def next_edit(editor, uri: str, line: int, character: int):
    return await editor.client.protocol.send_request_async(
        "elelem/nextEdit", {"textDocument": {"uri": uri}, "position": {"line": line, "character": character}}
    )


async def test_a_renamed_parameter_gives_edits_for_the_remaining_uses(start_editor, project, model):
    editor = await start(start_editor, project, model, announcing())
    uri = editor.open("calc.py", SOURCE, "python")
    rename_keystrokes(editor, uri)

    result = await next_edit(editor, uri, 0, 24)

    [body] = model.bodies("/v1/chat/completions")
    prompt = body["messages"][-1]["content"]
    assert "```diff\n@@ -1,4 +1,4 @@\n-def total(values, scale):\n+def total(values, factor):\n" in prompt
    assert f"{EDITABLE_START}\ndef total(values, factor{CURSOR}):\n" in prompt
    assert "tools" not in body or not body["tools"]
    edits = [plain(edit) for edit in result.edits]
    assert all(edit["range"]["start"]["line"] > 0 for edit in edits)  # the line being typed is left alone
    assert applied(SOURCE.replace("scale", "factor", 1), edits) == RENAMED

    assert await editor.command("elelem.completionAccepted", {"id": result.id}) == {"recorded": True}
    figures = (await editor.command("elelem.context", {}))["nextEdit"]
    assert (figures["shown"], figures["accepted"], figures["requests"]) == (1, 1, 1)


async def test_a_private_file_is_never_sent(start_editor, project, model):
    editor = await start(start_editor, project, model, announcing())
    uri = editor.open(".env", "TOKEN=scale\n", "plaintext")
    assert await next_edit(editor, uri, 0, 3) is None
    assert model.requests == []


async def test_a_malformed_request_names_the_field(start_editor, project, model):
    editor = await start(start_editor, project, model, announcing())
    uri = editor.open("calc.py", SOURCE, "python")
    with pytest.raises(JsonRpcInvalidParams, match="position.line"):
        await editor.client.protocol.send_request_async(
            "elelem/nextEdit", {"textDocument": {"uri": uri}, "position": {"line": -1, "character": 0}}
        )


async def test_a_plain_client_is_sent_nothing_new(start_editor, project, model):
    editor = await start(start_editor, project, model, announcing(next_edit=False))
    uri = editor.open("calc.py", SOURCE, "python")
    rename_keystrokes(editor, uri)
    await editor.command("elelem.context", {})  # every change handled before this answer
    assert editor.client.log_messages == [] and editor.client.messages == []
    assert model.requests == []


def plain(value):
    """pygls hands a custom result over as nested objects: back to dicts for the test."""
    if hasattr(value, "_asdict"):
        return {key: plain(item) for key, item in value._asdict().items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    return value
