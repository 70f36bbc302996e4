"""Next edit at its edges, through a real server session (pytest-lsp) and the fake model server.

Positions as editors send them (the last empty line, past a line's end, astral characters in
UTF-16 and UTF-8, a document changed while the model answers), malformed params, the recent
edits of private files kept out of other files' prompts, a burst of requests, cancellation, and
providers that fail, ramble or never answer: every request is answered or cancelled, none hangs.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import Future

import pytest
from fim_server import FimServer
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcInvalidParams, JsonRpcRequestCancelled
from pytest_lsp import ClientServerConfig
from test_engine import wait_for
from test_lsp_next_edit import announcing, next_edit, plain, start

from elelem_lsp.nextedit.zeta import CURSOR, EDITABLE_END, EDITABLE_START

# Many real server sessions each (about a minute and a half on one core): with the slow suites, which
# .ci/run runs too; the features' own end-to-end cases stay in test_lsp_inline.py and test_lsp_next_edit.py.
pytestmark = pytest.mark.slow

CHAT = "/v1/chat/completions"


def zeta_answer(region: str) -> list[str]:
    """The fake model's answer: ``region`` between the markers, in a fence, in a few pieces."""
    half = len(region) // 2
    return ["```a.py\n", EDITABLE_START + "\n", region[:half], region[half:], "\n" + EDITABLE_END, "\n```"]


def prompt_of(fim) -> str:
    return fim.bodies(CHAT)[-1]["messages"][-1]["content"]


def change(editor, uri: str, start: tuple[int, int], end: tuple[int, int], text: str) -> None:
    """One incremental change, as an editor sends a keystroke."""
    editor.versions[uri] = editor.versions.get(uri, 1) + 1
    editor.client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=editor.versions[uri]),
            content_changes=[
                lsp.TextDocumentContentChangePartial(range=lsp.Range(start=position(*start), end=position(*end)), text=text)
            ],
        )
    )


def position(line: int, character: int) -> lsp.Position:
    return lsp.Position(line=line, character=character)


def units(text: str, encoding: str) -> int:
    if encoding == "utf-8":
        return len(text.encode("utf-8"))
    if encoding == "utf-16":
        return len(text.encode("utf-16-le")) // 2
    return len(text)


def applied_in(text: str, edits: list[dict], encoding: str) -> str:
    """``edits`` applied as an editor whose positions count ``encoding``'s code units applies them."""
    lines = text.split("\n")

    def offset(position: dict) -> int:
        line = lines[position["line"]]
        column = next(i for i in range(len(line) + 1) if units(line[:i], encoding) >= position["character"])
        return sum(len(previous) + 1 for previous in lines[: position["line"]]) + column

    for edit in sorted(edits, key=lambda e: (e["range"]["start"]["line"], e["range"]["start"]["character"]), reverse=True):
        text = text[: offset(edit["range"]["start"])] + edit["newText"] + text[offset(edit["range"]["end"]) :]
    return text


def encoding_client(encoding: str) -> lsp.ClientCapabilities:
    capabilities = announcing()
    capabilities.general = lsp.GeneralClientCapabilities(position_encodings=[lsp.PositionEncodingKind(encoding)])
    return capabilities


# -- positions ---------------------------------------------------------------------------


async def test_the_cursor_on_the_last_empty_line_is_a_place_to_suggest_from(start_editor, project, fim):
    text = "total = 0\nfor value in values:\n    total += value\n"
    fim.answer = zeta_answer("total = 0\nfor value in values:\n    total += value * 2\n")
    editor = await start(start_editor, project, fim, announcing())
    uri = editor.open("a.py", text, "python")

    result = await next_edit(editor, uri, 3, 0)  # the line after the last line break, where one types on

    assert f"    total += value\n{CURSOR}\n{EDITABLE_END}" in prompt_of(fim)
    edits = [plain(edit) for edit in result.edits]
    assert applied_in(text, edits, "utf-16") == "total = 0\nfor value in values:\n    total += value * 2\n"


async def test_a_cursor_past_the_end_of_the_last_line_is_at_its_end(start_editor, project, fim):
    fim.answer = zeta_answer("x = 1\ny = x")
    editor = await start(start_editor, project, fim, announcing())
    uri = editor.open("a.py", "x = 1\ny = 2", "python")  # no line break at the end
    await next_edit(editor, uri, 1, 40)
    assert f"y = 2{CURSOR}\n{EDITABLE_END}" in prompt_of(fim)


@pytest.mark.parametrize("encoding", ["utf-16", "utf-8", "utf-32"])
async def test_astral_characters_and_combining_marks_are_counted_in_the_clients_units(start_editor, project, fim, encoding):
    source = 'def f(scale):\n    s = "😀e\u0301😀"; a = scale\n    return "👍🏽" + str(a * scale)\n'
    renamed = source.replace("scale", "factor")
    fim.answer = zeta_answer(renamed.rstrip("\n"))
    editor = await start(start_editor, project, fim, encoding_client(encoding))
    uri = editor.open("a.py", source, "python")
    change(editor, uri, (0, 6), (0, 11), "factor")

    result = await next_edit(editor, uri, 0, 12)

    edits = [plain(edit) for edit in result.edits]
    assert applied_in(source.replace("scale", "factor", 1), edits, encoding) == renamed


async def test_edits_are_of_the_text_the_request_saw_though_it_changed_while_the_model_answered(start_editor, project, fim):
    source = "def f(scale):\n    a = scale\n    return a * scale\n"
    renamed = source.replace("scale", "factor")
    fim.answer, fim.delay = zeta_answer(renamed.rstrip("\n")), 0.1
    editor = await start(start_editor, project, fim, announcing())
    uri = editor.open("a.py", source, "python")
    change(editor, uri, (0, 6), (0, 11), "factor")
    seen = source.replace("scale", "factor", 1)

    reply = asyncio.ensure_future(next_edit(editor, uri, 0, 12))
    await wait_for(lambda: fim.requests, "the model request")
    change(editor, uri, (1, 0), (1, 0), "😀😀")  # typed on meanwhile, before the uses
    result = await reply

    edits = [plain(edit) for edit in result.edits]
    assert applied_in(seen, edits, "utf-16") == renamed


async def test_a_malformed_position_is_invalid_params_naming_the_field(start_editor, project, fim):
    editor = await start(start_editor, project, fim, announcing())
    uri = editor.open("a.py", "x = 1\n", "python")
    for position, field in [
        ({"line": "0", "character": 0}, "position.line"),
        ({"line": 0, "character": True}, "position.character"),
        ({"line": 2, "character": 0}, "position.line"),  # line 1 is the empty last line; 2 is past it
    ]:
        with pytest.raises(JsonRpcInvalidParams, match=field):
            await editor.client.protocol.send_request_async(
                "elelem/nextEdit", {"textDocument": {"uri": uri}, "position": position}
            )
    assert fim.requests == []


# -- private files -----------------------------------------------------------------------

SOURCE = "def f(scale):\n    a = scale\n    return a * scale\n"
RENAMED = SOURCE.replace("scale", "factor")


PRIVATE = [".env", "build/gen.py", "vault/keys.py"]  # named so, ignored by .gitignore, excluded by completion.exclude


async def test_private_files_ask_no_model_and_their_edits_never_reach_another_files_prompt(start_editor, project, fim):
    (project / ".gitignore").write_text("build/\n")
    fim.answer = zeta_answer(RENAMED.rstrip("\n"))
    editor = await start_editor(
        project,
        client=announcing(),
        settings={"provider": "llamacpp", "completion": {"api": "chat", "exclude": ["vault/**"]}},
        env={"LLAMACPP_BASE_URL": f"{fim.url}/v1"},
    )
    for private in PRIVATE:
        secret = editor.open(private, "TOKEN=old\n", "plaintext")
        change(editor, secret, (0, 6), (0, 9), "sk-live-4242")
        assert await next_edit(editor, secret, 0, 12) is None, private
    assert fim.requests == []
    uri = editor.open("a.py", SOURCE, "python")
    change(editor, uri, (0, 6), (0, 11), "factor")

    assert await next_edit(editor, uri, 0, 12) is not None
    prompt = prompt_of(fim)
    assert "+def f(factor):" in prompt  # the file's own edit is there
    assert "sk-live" not in prompt and "TOKEN" not in prompt
    assert not any(private in prompt for private in PRIVATE)


async def test_the_edits_of_another_workspace_folder_stay_out_of_this_folders_prompt(start_editor, tmp_path, fim):
    first, second = tmp_path / "one", tmp_path / "two"
    first.mkdir(), second.mkdir()
    fim.answer = zeta_answer(RENAMED.rstrip("\n"))
    editor = await start_editor(
        first,
        client=announcing(),
        folders=[first, second],
        settings={"provider": "llamacpp", "completion": {"api": "chat"}},
        env={"LLAMACPP_BASE_URL": f"{fim.url}/v1"},
    )
    other = (second / "notes.py").as_uri()
    editor.client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            text_document=lsp.TextDocumentItem(uri=other, language_id="python", version=1, text="x = 1\n")
        )
    )
    change(editor, other, (0, 4), (0, 5), "elsewhere")
    uri = editor.open("a.py", SOURCE, "python")
    change(editor, uri, (0, 6), (0, 11), "factor")

    assert await next_edit(editor, uri, 0, 12) is not None
    assert "+def f(factor):" in prompt_of(fim) and "elsewhere" not in prompt_of(fim)


# -- many requests, cancellation ----------------------------------------------------------


async def test_a_burst_of_requests_answers_all_but_the_last_with_null_and_closes_their_streams(start_editor, project, fim):
    fim.answer, fim.delay = zeta_answer(RENAMED.rstrip("\n")) + ["\n"] * 20, 0.05
    editor = await start(start_editor, project, fim, announcing())
    uri = editor.open("a.py", SOURCE, "python")
    change(editor, uri, (0, 6), (0, 11), "factor")

    replies = []
    for _ in range(5):
        replies.append(asyncio.ensure_future(next_edit(editor, uri, 0, 12)))
        await wait_for(lambda: len(fim.requests) == len(replies), "the model request")
    results = await asyncio.gather(*replies)

    assert results[:-1] == [None] * 4
    assert applied_in(SOURCE.replace("scale", "factor", 1), [plain(e) for e in results[-1].edits], "utf-16") == RENAMED
    await wait_for(lambda: fim.closed == 4, "the four superseded streams to be closed")
    assert fim.finished <= 1


async def test_cancel_request_is_answered_and_closes_the_model_stream(start_editor, project, fim):
    fim.answer, fim.delay = zeta_answer(RENAMED.rstrip("\n")) + ["\n"] * 40, 0.05
    editor = await start(start_editor, project, fim, announcing())
    uri = editor.open("a.py", SOURCE, "python")
    protocol = editor.client.protocol
    params = {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 3}}
    reply: Future = protocol.send_request("elelem/nextEdit", params, msg_id="next-1")
    await wait_for(lambda: fim.requests, "the model request")
    protocol.notify(lsp.CANCEL_REQUEST, lsp.CancelParams(id="next-1"))
    with pytest.raises(JsonRpcRequestCancelled):
        await asyncio.wait_for(asyncio.wrap_future(reply), 5)
    await wait_for(lambda: fim.closed == 1, "the model stream to be closed")
    assert fim.finished == 0


# -- providers that fail -----------------------------------------------------------------


class BrokenStream(FimServer):
    """Answers 200 with an event stream that is not JSON."""

    def frames(self, path, body):
        return [b'data: {"choices": [{"delta": {"content": \n\n', b"data: not json at all\n\n"], "text/event-stream"


class Silent(FimServer):
    """Sends the stream's first event, then nothing for a minute."""

    def frames(self, path, body):
        frames, kind = super().frames(path, body)
        return frames[:1] + frames[1:2], kind


@pytest.fixture
def broken():
    server = BrokenStream().start()
    yield server
    server.stop()


@pytest.fixture
def silent():
    server = Silent(delay=60).start()
    yield server
    server.stop()


async def test_a_provider_answering_500_gives_null_and_a_log_line(start_editor, project, fim):
    fim.refuse = {CHAT: (500, {"error": {"message": "the model crashed", "type": "server_error"}})}
    editor = await start(start_editor, project, fim, announcing())
    uri = editor.open("a.py", SOURCE, "python")
    assert await next_edit(editor, uri, 0, 3) is None
    await wait_for(lambda: editor.client.log_messages, "the failure logged")
    assert "the model crashed" in editor.client.log_messages[-1].message
    assert editor.client.messages == []  # no popup


async def test_a_malformed_stream_gives_null(start_editor, project, broken):
    editor = await start(start_editor, project, broken, announcing())
    uri = editor.open("a.py", SOURCE, "python")
    assert await next_edit(editor, uri, 0, 3) is None
    assert editor.client.messages == []


async def test_a_model_that_never_answers_is_left_when_the_document_closes(start_editor, project, silent):
    editor = await start(start_editor, project, silent, announcing())
    uri = editor.open("a.py", SOURCE, "python")
    reply = asyncio.ensure_future(next_edit(editor, uri, 0, 3))
    await wait_for(lambda: silent.requests, "the model request")
    editor.client.text_document_did_close(lsp.DidCloseTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))
    assert await asyncio.wait_for(reply, 5) is None


async def test_a_model_that_never_answers_is_given_up_after_the_read_timeout(start_editor, project, silent):
    editor = await start_editor(
        project,
        client=announcing(),
        settings={"provider": "llamacpp", "completion": {"api": "chat"}},
        env={"LLAMACPP_BASE_URL": f"{silent.url}/v1", "ELELEM_READ_TIMEOUT": "0.5"},
    )
    uri = editor.open("a.py", SOURCE, "python")
    assert await asyncio.wait_for(next_edit(editor, uri, 0, 3), 10) is None
    await wait_for(lambda: editor.client.log_messages, "the failure logged")


async def test_an_answer_in_words_gives_null(start_editor, project, fim):
    fim.answer = ["I would rename ", "scale to factor everywhere."]
    editor = await start(start_editor, project, fim, announcing())
    uri = editor.open("a.py", SOURCE, "python")
    assert await next_edit(editor, uri, 0, 3) is None


async def test_a_huge_answer_is_not_read_to_its_end(start_editor, project, fim):
    fim.answer = [EDITABLE_START + "\n"] + ["x = 1  # " + "y" * 90 + "\n"] * 50_000  # 5 MB, no end marker
    editor = await start(start_editor, project, fim, announcing())
    uri = editor.open("a.py", SOURCE, "python")
    assert await asyncio.wait_for(next_edit(editor, uri, 0, 3), 30) is None
    await wait_for(lambda: fim.closed == 1, "the stream to be closed early")
    assert fim.finished == 0


# -- how the editor sends its changes ---------------------------------------------------------

EDITED = "def f(scale):\n    a = scale\n    b = 2\n    c = 3\n    return a * scale\n"


def edits_by_range(editor, uri: str) -> None:
    """A line deleted, a keystroke on the next, then two cursors typing at once (one didChange)."""
    change(editor, uri, (2, 0), (3, 0), "")
    change(editor, uri, (2, 4), (2, 4), "d")
    editor.versions[uri] += 1
    two_cursors = [
        lsp.TextDocumentContentChangePartial(range=lsp.Range(start=position(1, 13), end=position(1, 13)), text="_1"),
        lsp.TextDocumentContentChangePartial(range=lsp.Range(start=position(3, 20), end=position(3, 20)), text="_1"),
    ]
    editor.client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=editor.versions[uri]), content_changes=two_cursors
        )
    )


def edits_by_text(editor, name: str) -> None:
    """The same edits, each sent as the whole text."""
    for text in [
        "def f(scale):\n    a = scale\n    c = 3\n    return a * scale\n",
        "def f(scale):\n    a = scale\n    dc = 3\n    return a * scale\n",
        "def f(scale):\n    a = scale_1\n    dc = 3\n    return a * scale_1\n",
    ]:
        editor.type_text(name, text)


async def test_a_client_sending_ranges_and_one_sending_the_whole_text_give_the_model_the_same_diffs(start_editor, project, fim):
    prompts = []
    for by_range in (True, False):
        fim.requests.clear()
        editor = await start(start_editor, project, fim, announcing())
        uri = editor.open("a.py", EDITED, "python")
        edits_by_range(editor, uri) if by_range else edits_by_text(editor, "a.py")
        await next_edit(editor, uri, 0, 3)
        prompt = prompt_of(fim)
        prompts.append(prompt[prompt.index("### User Edits:") : prompt.index("### User Excerpt:")])
    assert "-    b = 2\n" in prompts[0] and "+    a = scale_1\n" in prompts[0]
    assert prompts[0] == prompts[1]


# -- documents ---------------------------------------------------------------------------------


async def test_a_document_never_opened_or_empty_gets_null_without_a_model_request(start_editor, project, fim):
    editor = await start(start_editor, project, fim, announcing())
    assert await next_edit(editor, editor.uri("never.py"), 0, 0) is None
    uri = editor.open("a.py", "", "python")
    assert await next_edit(editor, uri, 0, 0) is None
    assert fim.requests == []


async def test_an_untitled_buffer_gets_edits(start_editor, project, fim):
    fim.answer = zeta_answer(RENAMED.rstrip("\n"))
    editor = await start(start_editor, project, fim, announcing())
    uri = "untitled:Untitled-1"
    editor.client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(text_document=lsp.TextDocumentItem(uri=uri, language_id="python", version=1, text=SOURCE))
    )
    change(editor, uri, (0, 6), (0, 11), "factor")
    result = await next_edit(editor, uri, 0, 12)
    assert "+def f(factor):" in prompt_of(fim) and f"```{uri}\n" in prompt_of(fim)
    assert applied_in(SOURCE.replace("scale", "factor", 1), [plain(e) for e in result.edits], "utf-16") == RENAMED


async def test_a_file_outside_every_folder_gets_null_not_an_error(start_editor, project, tmp_path, fim):
    editor = await start(start_editor, project, fim, announcing())
    uri = (tmp_path / "elsewhere" / "b.py").as_uri()
    editor.client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(text_document=lsp.TextDocumentItem(uri=uri, language_id="python", version=1, text=SOURCE))
    )
    change(editor, uri, (0, 6), (0, 11), "factor")
    assert await next_edit(editor, uri, 0, 12) is None
    assert fim.requests == []


# -- a workspace without folders ---------------------------------------------------------------


@pytest.fixture
async def folderless(project, fim):
    """A session whose client names no folder (rootUri and workspaceFolders null), the server
    started in ``project`` as an editor starts it in its working directory."""
    import os
    import shlex

    from scaffold import SERVER_COMMAND, Editor, make_client

    holder: list[Editor] = []
    command = ["sh", "-c", f"cd {shlex.quote(str(project))} && exec {shlex.join(SERVER_COMMAND)}"]
    env = {**os.environ, "LLAMACPP_BASE_URL": f"{fim.url}/v1"}
    client = await ClientServerConfig(server_command=command, client_factory=make_client(holder, None), server_env=env).start()
    editor = Editor(client, project)
    holder.append(editor)
    client.set_configuration({"elelem": {"provider": "llamacpp", "completion": {"api": "chat", "debounceMs": 0}}})
    await client.initialize_session(lsp.InitializeParams(capabilities=announcing(), root_uri=None, workspace_folders=None))
    yield editor
    try:
        await asyncio.wait_for(client.shutdown_session(), 10)
    finally:
        if client._server is not None and client._server.returncode is None:
            client._server.kill()
        await asyncio.wait_for(client.stop(), 10)


async def test_a_workspace_without_folders_gets_edits_for_a_file_in_the_servers_directory(folderless, fim):
    fim.answer = zeta_answer(RENAMED.rstrip("\n"))
    uri = folderless.open("a.py", SOURCE, "python")
    change(folderless, uri, (0, 6), (0, 11), "factor")
    result = await next_edit(folderless, uri, 0, 12)
    assert applied_in(SOURCE.replace("scale", "factor", 1), [plain(e) for e in result.edits], "utf-16") == RENAMED


async def test_a_crlf_document_gets_edits_at_the_right_places(start_editor, project, fim):
    source = SOURCE.replace("\n", "\r\n")
    fim.answer = zeta_answer(RENAMED.rstrip("\n"))
    editor = await start(start_editor, project, fim, announcing())
    uri = editor.open("a.py", source, "python")
    change(editor, uri, (0, 6), (0, 11), "factor")
    result = await next_edit(editor, uri, 0, 12)
    assert "\r" not in prompt_of(fim)
    edits = [plain(edit) for edit in result.edits]
    assert applied_in(SOURCE.replace("scale", "factor", 1), edits, "utf-16") == RENAMED


async def test_many_documents_asked_at_once_are_each_answered(start_editor, project, fim):
    fim.answer, fim.delay = zeta_answer(RENAMED.rstrip("\n")), 0.02
    editor = await start(start_editor, project, fim, announcing())
    uris = [editor.open(f"m{number}.py", SOURCE, "python") for number in range(40)]
    for uri in uris:
        change(editor, uri, (0, 6), (0, 11), "factor")
    results = await asyncio.gather(*(next_edit(editor, uri, 0, 12) for uri in uris))
    assert all(result is not None and len(result.edits) == 2 for result in results)
    assert len(fim.requests) == 40  # each asked once, none superseded by another document's request


@pytest.mark.parametrize("provider", [{"provider": "no-such-provider"}, {"provider": "anthropic", "enabled": True}])
async def test_a_provider_that_cannot_be_built_gives_null_and_a_log_line(start_editor, project, fim, provider):
    editor = await start_editor(
        project,
        client=announcing(),
        settings={"provider": "llamacpp", "completion": {"api": "chat"}, "nextEdit": provider},
        env={"LLAMACPP_BASE_URL": f"{fim.url}/v1"},
    )
    uri = editor.open("a.py", SOURCE, "python")
    assert await next_edit(editor, uri, 0, 3) is None
    await wait_for(lambda: editor.client.log_messages, "the failure logged")
    assert editor.client.messages == [] and fim.requests == []


async def test_edits_are_of_the_text_the_request_came_for_though_it_changed_while_settings_were_read(start_editor, project, fim):
    """The editor is slow to answer workspace/configuration after a settings change, and the person
    types on meanwhile (or the keystroke arrives with the request): the model sees the text and the
    edits the request was sent after, and the edits fit that text."""
    answered = asyncio.Event()
    answered.set()

    async def configuration(params: lsp.ConfigurationParams) -> list:
        await answered.wait()
        return [{"provider": "llamacpp", "completion": {"api": "chat"}} for _ in params.items]

    fim.answer = zeta_answer(RENAMED.rstrip("\n"))
    editor = await start_editor(
        project,
        client=announcing(),
        env={"LLAMACPP_BASE_URL": f"{fim.url}/v1"},
        handlers={lsp.WORKSPACE_CONFIGURATION: configuration},
    )
    uri = editor.open("a.py", SOURCE, "python")
    change(editor, uri, (0, 6), (0, 11), "factor")
    seen = SOURCE.replace("scale", "factor", 1)
    await next_edit(editor, uri, 0, 12)  # settings read once
    answered.clear()
    editor.client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(settings=None))
    reply = asyncio.ensure_future(next_edit(editor, uri, 0, 12))
    await asyncio.sleep(0)  # the request leaves before the next change
    change(editor, uri, (0, 0), (0, 0), "import os\n")  # typed on while the settings are read
    answered.set()
    result = await asyncio.wait_for(reply, 10)

    assert "import os" not in prompt_of(fim)  # neither in the excerpt nor in the recent edits
    edits = [plain(edit) for edit in result.edits]
    assert applied_in(seen, edits, "utf-16") == RENAMED


async def test_a_private_name_that_is_a_symlink_to_an_ordinary_one_is_still_private(start_editor, project, fim):
    (project / "envs").mkdir()
    (project / "envs" / "dev.txt").write_text("TOKEN=sk-live-4242\n")
    (project / ".env").symlink_to(project / "envs" / "dev.txt")
    editor = await start(start_editor, project, fim, announcing())
    uri = editor.open(".env", "TOKEN=sk-live-4242\n", "plaintext")  # the editor shows .env
    change(editor, uri, (0, 6), (0, 18), "sk-live-4343")
    assert await next_edit(editor, uri, 0, 9) is None
    assert fim.requests == []


async def test_a_bad_next_edit_setting_is_said_once_and_the_default_used(start_editor, project, fim):
    fim.answer = zeta_answer(RENAMED.rstrip("\n"))
    editor = await start_editor(
        project,
        client=announcing(),
        settings={"provider": "llamacpp", "completion": {"api": "chat"}, "nextEdit": {"maxTokens": 5, "api": "telepathy"}},
        env={"LLAMACPP_BASE_URL": f"{fim.url}/v1"},
    )
    uri = editor.open("a.py", SOURCE, "python")
    change(editor, uri, (0, 6), (0, 11), "factor")
    assert await next_edit(editor, uri, 0, 12) is not None
    assert await next_edit(editor, uri, 0, 12) is not None
    said = [message.message for message in editor.client.messages if "nextEdit" in message.message]
    assert len(said) == 1 and "elelem.nextEdit.maxTokens" in said[0] and "elelem.nextEdit.api" in said[0]
