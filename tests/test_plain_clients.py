"""LSP clients without our plugin (vim-lsp, Helix, Zed, Kate...) still see the agent's answer:
a window/showMessage with the start of the reply, the whole turn as a markdown transcript opened
with window/showDocument. Our own clients announce themselves and get neither."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types as lsp
from pytest_lsp import client_capabilities

from scaffold import add_plugin, wait_until, write_script

from elelem_lsp.agent.session import TurnResult
from elelem_lsp.host.transcript import TurnRecord, preview
from elelem_lsp.host.turn import turn_result
from elelem_lsp.server.editor import announced_client


async def everything_sent(editor) -> None:
    """A round trip: what the server sent before it answered (the reply's popup, a document it asks
    to show, both sent as the reply is) has arrived once it answers a later request."""
    await editor.command("elelem.tools", {})


SCRIPT = [
    [{"type": "thinking", "text": "look first"},
     {"type": "saying", "text": "Reading."},
     {"type": "doing", "id": "r", "name": "read", "arguments": {"path": "README.md"}},
     {"type": "doing", "id": "m", "name": "read", "arguments": {"path": "missing.txt"}}],
    [{"type": "saying", "text": "The readme is a heading that says hello. " + "More words. " * 40}],
]


@pytest.mark.parametrize(
    ("options", "ours"),
    [
        ({"client": "elelem-vscode"}, "elelem-vscode"),
        ({"client": "elelem-nvim", "provider": "x"}, "elelem-nvim"),
        ({"client": "vim-lsp"}, None),
        ({"client": 3}, None),
        ({"provider": "openai"}, None),
        (None, None),
        (["elelem-vscode"], None),
    ],
)
def test_only_a_client_that_announces_elelem_is_ours(options, ours):
    assert announced_client(options) == ours


def test_the_preview_is_one_line_and_short():
    assert preview("a\n\nb  c") == "a b c"
    long = preview("word " * 200)
    assert len(long) == 240 and long.endswith("…")


def test_the_record_is_markdown_of_the_whole_turn():
    record = TurnRecord("what is\nin it?")
    for event in [
        {"type": "thinking", "text": "hmm\nyes"},
        {"type": "saying", "text": "Let me "}, {"type": "saying", "text": "look."},
        {"type": "doing", "id": "1", "name": "read", "arguments": {"path": "a.txt"}},
        {"type": "result", "id": "1", "name": "read", "ok": True, "title": "Read a.txt", "summary": "3 lines"},
        {"type": "doing", "id": "2", "name": "execute", "arguments": {"command": "make"}},
        {"type": "result", "id": "2", "name": "execute", "ok": False, "title": "Run make", "error": "not allowed"},
        {"type": "saying", "text": "Done."},
    ]:
        record.add(event)
    text = record.markdown("proj", turn_result("scripted", None, TurnResult("Done.", 2)))
    assert text == (
        "# elelem · proj\n\n> what is\n> in it?\n\n"
        "> _thinking:_ hmm\n> yes\n\nLet me look.\n\n"
        "- `Read a.txt` → 3 lines\n\n\n\n- `Run make` → failed: not allowed\n\n\n\nDone."
        "\n\n---\ndone — scripted · 2 steps\n"
    )


def test_an_error_reply_is_in_the_record():
    text = TurnRecord("hi").markdown("p", turn_result("openai", "gpt-x", TurnResult("Error: no key", 0, error="no key")))
    assert "**Error: no key**" in text and text.endswith("failed — openai · gpt-x · 0 steps\n")


def reply_messages(editor) -> list[lsp.ShowMessageParams]:
    return [m for m in editor.client.messages if "using provider" not in m.message]


async def test_a_plain_client_sees_the_reply_and_gets_the_transcript(project, home, start_editor):
    add_plugin(project, "scripted")
    write_script(project, SCRIPT)
    editor = await start_editor(project, settings={"provider": "scripted"})
    result = await editor.ask("what is in the readme?")
    assert result["reply"].startswith("The readme is a heading")

    await wait_until(lambda: editor.client.shown_documents, "window/showDocument")
    [message] = reply_messages(editor)
    assert message.type == lsp.MessageType.Info
    assert message.message.startswith("elelem: The readme is a heading that says hello. More words.")
    assert message.message.endswith("…") and len(message.message) < 260

    [shown] = editor.client.shown_documents
    assert shown.take_focus is False
    path = Path(shown.uri.removeprefix("file://"))
    assert path.parent == home / ".local" / "state" / "elelem-lsp" / "transcripts"
    assert not list(project.rglob("*.md"))[1:]  # only the README: nothing written into the workspace
    transcript = path.read_text()
    assert transcript.startswith("# elelem · project\n\n> what is in the readme?\n")
    assert "> _thinking:_ look first" in transcript
    assert "- `Read README.md` → 1 line" in transcript
    assert "- `Read missing.txt` → failed: " in transcript
    assert "The readme is a heading that says hello." in transcript
    assert transcript.endswith("\n---\ndone — scripted · 2 steps\n")  # the footer the answer's text says

    await editor.ask("again", token="turn-2")
    await wait_until(lambda: len(editor.client.shown_documents) == 2, "the second transcript")
    assert editor.client.shown_documents[1].uri != shown.uri  # each turn its own file


async def test_an_error_turn_is_shown_as_an_error(project, start_editor):
    editor = await start_editor(project, settings={"provider": "nosuch"})
    result = await editor.ask("hi")
    assert result["error"]
    await wait_until(lambda: reply_messages(editor), "the error message")
    [message] = reply_messages(editor)
    assert message.type == lsp.MessageType.Error
    assert message.message.startswith('elelem: Error: unknown provider: "nosuch"')


async def test_a_client_without_show_document_gets_the_message_only(project, home, start_editor):
    add_plugin(project, "scripted")
    write_script(project, SCRIPT)
    # No workspace/configuration either: the settings come as initializationOptions, as from Helix.
    editor = await start_editor(
        project, client=lsp.ClientCapabilities(), init_options={"provider": "scripted", "workspacePlugins": True}
    )
    await editor.ask("hi")
    await wait_until(lambda: reply_messages(editor), "the reply message")
    assert reply_messages(editor)[0].message.startswith("elelem: The readme is")
    await everything_sent(editor)  # a document would have been asked to show with the message
    assert editor.client.shown_documents == []
    assert not (home / ".local" / "state" / "elelem-lsp" / "transcripts").exists()


@pytest.mark.parametrize("client", ["elelem-vscode", "elelem-nvim", "elelem-emacs", "elelem-terminal"])
async def test_our_own_clients_get_no_popup_and_no_document(project, start_editor, client):
    add_plugin(project, "scripted")
    write_script(project, SCRIPT)
    editor = await start_editor(
        project, client=client_capabilities("visual-studio-code"), settings={"provider": "scripted"},
        init_options={"client": client},
    )
    result = await editor.ask("hi")
    assert result["reply"].startswith("The readme is")
    await everything_sent(editor)  # a popup or a document would have come with the reply
    assert reply_messages(editor) == [] and editor.client.shown_documents == []
