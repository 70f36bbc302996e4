"""Inline completion end to end: a real server session (pytest-lsp) against the fake FIM server.

The capability announced; ghost text at the cursor with its acceptance command; the figures in
``elelem.context``; a newer request answering the older with nothing; ``$/cancelRequest``
answered and the model's stream closed; the suggestion in the completion menu when asked for.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import Future

import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcRequestCancelled
from pytest_lsp import LanguageClient

from fim_server import FimServer
from test_engine import wait_for


@pytest.fixture
def announced(monkeypatch) -> list[lsp.InitializeResult]:
    """The server's answers to initialize, as the sessions the test starts receive them."""
    answers: list[lsp.InitializeResult] = []
    initialize = LanguageClient.initialize_session

    async def recorded(self, params):
        answers.append(await initialize(self, params))
        return answers[-1]

    monkeypatch.setattr(LanguageClient, "initialize_session", recorded)
    return answers


@pytest.fixture
def fim_server():
    server = FimServer().start()
    yield server
    server.stop()


async def start(start_editor, project, fim_server, **completion):
    settings = {"provider": "llamacpp", "completion": {"api": "completions", **completion}}
    return await start_editor(project, settings=settings, env={"LLAMACPP_BASE_URL": f"{fim_server.url}/v1"})


def inline_params(uri: str, line: int, character: int) -> lsp.InlineCompletionParams:
    return lsp.InlineCompletionParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri),
        position=lsp.Position(line=line, character=character),
        context=lsp.InlineCompletionContext(trigger_kind=lsp.InlineCompletionTriggerKind.Automatic),
    )


async def test_ghost_text_at_the_cursor_and_its_acceptance_counted(announced, start_editor, project, fim_server):
    fim_server.answer = ["b", ")"]
    editor = await start(start_editor, project, fim_server)
    assert announced[0].capabilities.inline_completion_provider is not None
    uri = editor.open("calc.py", "def add(a, b):\n    return max(a, )\n", "python")

    result = await editor.client.text_document_inline_completion_async(inline_params(uri, 1, 18))

    [item] = result.items
    assert item.insert_text == "b"  # the ")" after the cursor is not written twice
    assert item.range == lsp.Range(start=lsp.Position(line=1, character=18), end=lsp.Position(line=1, character=18))
    assert item.command.command == "elelem.completionAccepted"
    [body] = fim_server.bodies("/v1/completions")
    assert body["prompt"].endswith("def add(a, b):\n    return max(a, ") and body["suffix"] == ")\n"

    assert await editor.command("elelem.completionAccepted", *item.command.arguments) == {"recorded": True}
    figures = (await editor.command("elelem.context", {}))["completion"]
    assert (figures["shown"], figures["accepted"], figures["charsAccepted"], figures["requests"]) == (1, 1, 1, 1)


async def test_a_newer_request_answers_the_older_with_nothing(start_editor, project, fim_server):
    fim_server.answer, fim_server.delay = ["x"] * 30, 0.05
    editor = await start(start_editor, project, fim_server, debounceMs=0)
    uri = editor.open("slow.py", "value = \n", "python")
    older = asyncio.ensure_future(editor.client.text_document_inline_completion_async(inline_params(uri, 0, 8)))
    await wait_for(lambda: fim_server.requests, "the first model request")
    fim_server.answer, fim_server.delay = ["42"], 0.0
    editor.type_text("slow.py", "value = 4\n")
    newer = await editor.client.text_document_inline_completion_async(inline_params(uri, 0, 9))
    assert list((await older).items) == []
    assert [item.insert_text for item in newer.items] == ["42"]
    await wait_for(lambda: fim_server.closed >= 1, "the older stream to be closed")


async def test_cancel_request_is_answered_and_closes_the_model_stream(start_editor, project, fim_server):
    fim_server.answer, fim_server.delay = ["x"] * 40, 0.05
    editor = await start(start_editor, project, fim_server)
    uri = editor.open("c.py", "x = \n", "python")
    protocol = editor.client.protocol
    reply: Future = protocol.send_request(lsp.TEXT_DOCUMENT_INLINE_COMPLETION, inline_params(uri, 0, 4), msg_id="inline-1")
    await wait_for(lambda: fim_server.requests, "the model request")
    protocol.notify(lsp.CANCEL_REQUEST, lsp.CancelParams(id="inline-1"))
    with pytest.raises(JsonRpcRequestCancelled):
        await asyncio.wait_for(asyncio.wrap_future(reply), 5)
    await wait_for(lambda: fim_server.closed == 1, "the model stream to be closed")
    assert fim_server.finished == 0


async def test_the_suggestion_in_the_completion_menu_when_asked(start_editor, project, fim_server):
    fim_server.answer = ["total"]
    editor = await start(start_editor, project, fim_server, menu=True)
    uri = editor.open("m.py", "x = \n", "python")
    result = await editor.client.text_document_completion_async(
        lsp.CompletionParams(text_document=lsp.TextDocumentIdentifier(uri=uri), position=lsp.Position(line=0, character=4))
    )
    [item] = result.items
    assert item.text_edit.new_text == "total" and item.command.command == "elelem.completionAccepted"


async def test_the_menu_item_starts_at_the_word_being_typed(start_editor, project, fim_server):
    fim_server.answer = ["_count = 0"]
    editor = await start(start_editor, project, fim_server, menu=True)
    uri = editor.open("w.py", "total\n", "python")
    result = await editor.client.text_document_completion_async(
        lsp.CompletionParams(text_document=lsp.TextDocumentIdentifier(uri=uri), position=lsp.Position(line=0, character=5))
    )
    [item] = result.items
    assert item.text_edit.new_text == "total_count = 0" and item.filter_text == "total_count = 0"
    assert item.text_edit.range.start == lsp.Position(line=0, character=0)


async def test_no_menu_item_without_the_setting(start_editor, project, fim_server):
    editor = await start(start_editor, project, fim_server)
    uri = editor.open("w.py", "x = \n", "python")
    result = await editor.client.text_document_completion_async(
        lsp.CompletionParams(text_document=lsp.TextDocumentIdentifier(uri=uri), position=lsp.Position(line=0, character=4))
    )
    assert list(result.items) == [] and fim_server.requests == []


async def test_other_open_documents_go_most_recently_edited_first_and_a_private_one_never(start_editor, project, fim_server):
    fim_server.answer = ["1"]
    editor = await start(start_editor, project, fim_server)
    editor.open("first.py", "FIRST = 1\n", "python")
    editor.open("second.py", "SECOND = 2\n", "python")
    editor.open(".env", "TOKEN=do-not-send\n", "dotenv")
    editor.type_text("first.py", "FIRST = 11\n")  # edited last
    uri = editor.open("main.py", "x = \n", "python")
    await editor.client.text_document_inline_completion_async(inline_params(uri, 0, 4))
    [body] = fim_server.bodies("/v1/completions")
    assert body["prompt"].index("FIRST = 11") < body["prompt"].index("SECOND = 2")
    assert "do-not-send" not in body["prompt"]

    env = editor.uri(".env")
    result = await editor.client.text_document_inline_completion_async(inline_params(env, 0, 6))
    assert list(result.items) == [] and len(fim_server.requests) == 1  # no request inside a private file


async def test_a_document_outside_every_folder_gets_no_suggestion_and_no_error(start_editor, project, fim_server, tmp_path):
    editor = await start(start_editor, project, fim_server)
    outside = tmp_path / "elsewhere.py"
    outside.write_text("x = \n")
    uri = outside.as_uri()
    editor.client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(text_document=lsp.TextDocumentItem(uri=uri, language_id="python", version=1, text="x = \n"))
    )
    result = await editor.client.text_document_inline_completion_async(inline_params(uri, 0, 4))
    assert list(result.items) == [] and fim_server.requests == []


async def test_completion_can_use_another_provider_and_model_than_the_folder(start_editor, project, fim_server):
    fim_server.answer = ["42"]
    settings = {"provider": "ollama", "model": "big-chat-model", "completion": {"provider": "llamacpp", "model": "tiny-coder", "api": "completions"}}
    editor = await start_editor(project, settings=settings, env={"LLAMACPP_BASE_URL": f"{fim_server.url}/v1", "OLLAMA_HOST": "127.0.0.1:9"})
    uri = editor.open("m.py", "answer = \n", "python")
    result = await editor.client.text_document_inline_completion_async(inline_params(uri, 0, 9))
    assert [item.insert_text for item in result.items] == ["42"]
    [body] = fim_server.bodies("/v1/completions")
    assert body["model"] == "tiny-coder"
