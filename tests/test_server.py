"""The server end to end through pytest-lsp, with real clients' capabilities."""

from __future__ import annotations

import asyncio
import json
import subprocess

import pytest
from lsprotocol import types as lsp

from scaffold import add_plugin, write_script


def provider_events(events):
    """The events the provider emitted, adjacent text of one type merged (tool results and the
    title the server gives a call and the host's usage summary left out)."""
    merged = []
    for event in events:
        if event["type"] in ("result", "usage"):
            continue
        event = {key: value for key, value in event.items() if key != "title"}
        if merged and event["type"] in ("saying", "thinking") and merged[-1]["type"] == event["type"]:
            merged[-1] = {**merged[-1], "text": merged[-1]["text"] + event["text"]}
        else:
            merged.append(dict(event))
    return merged


async def test_progress_events_are_exactly_what_the_provider_emitted(project, start_editor):
    """Progress is the same for every client (the edit test below is where their capabilities differ)."""
    add_plugin(project, "scripted")
    words = [{"type": "saying", "text": f"w{i} "} for i in range(300)]
    first = [{"type": "thinking", "text": "plan "}, {"type": "thinking", "text": "more"}, *words,
             {"type": "doing", "id": "c1", "name": "list", "arguments": {}}]
    second = [{"type": "saying", "text": "héllo "}, {"type": "unknown", "text": "ignored"}, {"type": "saying", "text": "😀"}]
    write_script(project, [first, second])
    editor = await start_editor(project, settings={"provider": "scripted"})

    result = await editor.ask("go")

    assert result["reply"] == "héllo 😀"
    assert result["provider"] == "scripted" and result["steps"] == 2 and not result["cancelled"] and result["error"] is None
    values = editor.progress["turn-1"]
    assert values[0]["kind"] == "begin" and values[0]["title"] == "elelem" and values[0]["cancellable"]
    assert values[-1] == {"kind": "end", "message": "done"}
    assert all(v["kind"] == "report" and v["events"] and v["message"] for v in values[1:-1])
    expected = provider_events(first + [second[0], second[2]])
    assert provider_events(editor.events()) == expected
    assert [e["title"] for e in editor.events() if e["type"] == "doing"] == ["List ."]  # what a client shows
    results = [e for e in editor.events() if e["type"] == "result"]
    assert results == [{"type": "result", "id": "c1", "name": "list", "ok": True, "title": "Listed .", "summary": "3 files"}]
    assert result["stopReason"] == "end"
    # coalesced: far fewer reports than events
    assert len(values) - 2 < 50


async def test_the_plan_and_the_turns_usage_reach_progress_and_elelem_context(project, start_editor):
    add_plugin(project, "scripted")
    entries = [{"content": "look", "status": "in_progress", "priority": "high"}, {"content": "answer", "status": "pending"}]
    write_script(project, [
        [{"type": "doing", "id": "p1", "name": "plan", "arguments": {"entries": entries}},
         {"type": "usage", "inputTokens": 2000, "outputTokens": 100}],
        [{"type": "saying", "text": "ok"}, {"type": "usage", "inputTokens": 2100, "outputTokens": 5}],
    ])
    editor = await start_editor(project, settings={"provider": "scripted", "model": "gpt-4.1",
                                                   "prices": {"gpt-4.1": {"input": 10.0, "output": 100.0}}})
    await editor.ask("go")
    [plan] = [e for e in editor.events() if e["type"] == "plan"]
    assert plan["entries"] == [{**entries[0]}, {**entries[1], "priority": "medium"}]
    usage = editor.events()[-1]
    cost = (4100 * 10.0 + 105 * 100.0) / 1_000_000  # the setting's price, over the table's
    assert usage == {"type": "usage", "inputTokens": 4100, "outputTokens": 105, "conversationInputTokens": 4100,
                     "conversationOutputTokens": 105, "contextTokens": 2105, "contextWindow": usage["contextWindow"],
                     "cost": cost, "currency": "USD", "text": "4,100 in · 105 out · $0.05",
                     "conversationText": f"4,100 in · 105 out · context 2,105 of {usage['contextWindow']:,} · $0.05"}
    context = (await editor.command("elelem.context", {}))["usage"]
    assert (context["conversationInputTokens"], context["cost"]) == (4100, cost)


@pytest.mark.parametrize("client, unit", [("visual-studio-code", 1), ("neovim@v0.11", 3)])
async def test_edit_arrives_as_apply_edit_with_version_and_minimal_range(project, start_editor, client, unit):
    add_plugin(project, "scripted")
    (project / "greet.txt").write_text("first line\nsay 😀 héllo world\nlast line\n")
    write_script(project, [[{"type": "doing", "id": "e1", "name": "edit",
                             "arguments": {"path": "greet.txt", "old": "world", "new": "wörld"}}]])
    editor = await start_editor(project, client=client, settings={"provider": "scripted"})
    uri = editor.open("greet.txt")
    editor.type_text("greet.txt", "first line\nsay 😀 héllo world\nlast line\nunsaved\n")

    result = await editor.ask("edit it")

    assert result["error"] is None, result["reply"]
    [params] = editor.edits
    [change] = params.edit.document_changes
    assert change.text_document.uri == uri
    assert change.text_document.version == 2
    [text_edit] = change.edits
    # "say " + emoji + " h" + é + "llo " : the emoji is 2 UTF-16 units, 4 UTF-8 bytes; é is 1 or 2
    start = 4 + (2 if unit == 1 else 4) + 2 + (1 if unit == 1 else 2) + 4
    assert text_edit.range.start == lsp.Position(line=1, character=start + 1)
    assert text_edit.range.end == lsp.Position(line=1, character=start + 2)
    assert text_edit.new_text == "ö"
    # the server never writes to disk when the editor applies edits
    assert (project / "greet.txt").read_text() == "first line\nsay 😀 héllo world\nlast line\n"


async def test_new_file_is_created_through_the_editor(project, start_editor):
    add_plugin(project, "scripted")
    write_script(project, [[{"type": "doing", "id": "w1", "name": "write",
                             "arguments": {"path": "src/new.py", "content": "print('hi')\n"}}]])
    editor = await start_editor(project, settings={"provider": "scripted"})

    result = await editor.ask("create it")

    assert result["error"] is None
    [params] = editor.edits
    create, edit = params.edit.document_changes
    assert isinstance(create, lsp.CreateFile) and create.uri == (project / "src/new.py").as_uri()
    assert edit.text_document.version is None and edit.edits[0].new_text == "print('hi')\n"
    # the whole empty document is replaced, so no editor keeps an extra empty last line
    assert edit.edits[0].range == lsp.Range(start=lsp.Position(line=0, character=0), end=lsp.Position(line=1, character=0))


async def test_refused_edit_leaves_the_file_and_tells_the_model(project, start_editor):
    add_plugin(project, "scripted")
    (project / "keep.txt").write_text("original\n")
    write_script(project, [[{"type": "doing", "id": "w1", "name": "write",
                             "arguments": {"path": "keep.txt", "content": "replaced\n"}}]])
    editor = await start_editor(project, settings={"provider": "scripted"})
    editor.answer_edit = lambda params: False

    result = await editor.ask("overwrite it")

    assert result["reply"] == "done."
    assert (project / "keep.txt").read_text() == "original\n"
    [outcome] = [e for e in editor.events() if e["type"] == "result"]
    assert outcome["ok"] is False and "refused" in outcome["error"]


async def test_read_sees_the_unsaved_buffer(project, start_editor):
    add_plugin(project, "parrot")
    editor = await start_editor(project, settings={"provider": "parrot"})
    editor.open("README.md")
    editor.type_text("README.md", "# unsaved words\n")

    result = await editor.ask("what is in the readme?")

    assert "unsaved words" in result["reply"]
    assert (project / "README.md").read_text() == "# hello\n"


async def test_provider_failure_ends_the_turn_and_the_next_turn_works(project, start_editor):
    add_plugin(project, "scripted")
    write_script(project, [[{"type": "saying", "text": "partial"}, {"type": "raise", "message": "boom"}],
                           [{"type": "saying", "text": "recovered"}]])
    editor = await start_editor(project, settings={"provider": "scripted"})

    failed = await editor.ask("one", token="t1")
    assert failed["reply"] == "Error: boom" and failed["error"] == "boom"
    assert editor.progress["t1"][-1] == {"kind": "end", "message": "Error: boom"}

    ok = await editor.ask("two", token="t2")
    assert ok["reply"] == "recovered" and ok["error"] is None


async def test_server_creates_a_progress_token_when_the_client_gives_none(project, start_editor):
    add_plugin(project, "scripted")
    write_script(project, [[{"type": "saying", "text": "hi"}]])
    editor = await start_editor(project, settings={"provider": "scripted"})

    result = await editor.command("elelem.ask", {"prompt": "hello"})

    assert result["reply"] == "hi"
    [token] = [t for t in editor.progress if t != "turn-1"]
    assert str(token).startswith("elelem-")
    assert editor.progress[token][-1]["kind"] == "end"


async def test_an_unknown_provider_replies_with_the_available_ones_and_which_package_to_install(project, start_editor):
    editor = await start_editor(project, settings={"provider": "nosuch"})

    result = await editor.ask("hi")

    assert result["reply"].startswith('Error: unknown provider: "nosuch". Available: stub')
    assert result["reply"].endswith("Run: pip install elelem-nosuch")


async def test_client_without_apply_edit_gets_the_file_written(project, start_editor):
    add_plugin(project, "scripted")
    write_script(project, [[{"type": "doing", "id": "w", "name": "write", "arguments": {"path": "out.txt", "content": "written\n"}}]])
    plain = lsp.ClientCapabilities(workspace=lsp.WorkspaceClientCapabilities(configuration=True))
    editor = await start_editor(project, client=plain, settings={"provider": "scripted"})
    result = await editor.command("elelem.ask", {"prompt": "write"})
    assert result["error"] is None and editor.edits == []
    assert (project / "out.txt").read_text() == "written\n"


async def test_tcp_server(project, tmp_path):
    import asyncio
    import socket
    import sys

    from elelem_lsp.client import TerminalClient
    from elelem_lsp.client.terminal import Terminal

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = await asyncio.create_subprocess_exec(sys.executable, "-m", "elelem_lsp", "serve", "--tcp", f"127.0.0.1:{port}")
    try:
        client = TerminalClient(project, Terminal(interactive=False))
        for _ in range(100):  # until the server listens
            try:
                await client.client.start_tcp("127.0.0.1", port)
                break
            except OSError:
                await asyncio.sleep(0.1)
        await client.client.initialize_async(lsp.InitializeParams(
            capabilities=lsp.ClientCapabilities(), workspace_folders=[lsp.WorkspaceFolder(uri=project.as_uri(), name="p")]))
        tools = await client.command("elelem.tools", {})
        assert [t["name"] for t in tools["tools"]][:2] == ["read", "write"]
    finally:
        if server.returncode is None:
            server.kill()
        await server.wait()


async def test_an_unknown_provider_from_an_untrusted_workspace_says_workspace_plugins_are_off(project, start_editor):
    add_plugin(project, "echo")
    editor = await start_editor(project, settings={"workspacePlugins": False, "provider": "echo"})
    result = await editor.ask("hi")
    assert result["error"] and "The workspace plugins in " in result["reply"]
    assert ".agents/plugins (echo.py) were not loaded: this folder is not trusted" in result["reply"]
    assert "Turn on the workspacePlugins setting" in result["reply"]
    assert "pip install" not in result["reply"]
    trusted = await start_editor(project, settings={"workspacePlugins": True, "provider": "echo"})
    assert not (await trusted.ask("hi"))["error"]


def test_the_command_names_known_at_start_up_are_the_commands():
    from elelem_lsp.server.commands import COMMANDS
    from elelem_lsp.server.server import COMMAND_NAMES

    assert sorted(COMMAND_NAMES) == sorted(COMMANDS)


async def test_an_ask_from_a_selection_puts_the_editors_context_before_the_model(project, start_editor):
    add_plugin(project, "scripted")
    for command in (["init", "-q", "-b", "trunk"], ["add", "README.md"], ["-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "one"]):
        subprocess.run(["git", "-C", str(project), *command], check=True, capture_output=True)
    (project / "src").mkdir()
    (project / "src/app.py").write_text("import os\ndef main():\n    return os.getcwd()\n")
    write_script(project, [[{"type": "record"}, {"type": "saying", "text": "seen"}]] * 100)
    editor = await start_editor(project, settings={"provider": "scripted"})
    editor.open("README.md")
    uri = editor.open("src/app.py", language="python")
    selection = {"start": {"line": 1, "character": 0}, "end": {"line": 2, "character": 22}}

    for _ in range(100):  # git is read in the background, never waited for: an ask right at the start may precede it
        assert (await editor.ask("what does this do?", uri=uri, range=selection))["reply"] == "seen"
        fetch = json.loads((project / ".agents/fetches.jsonl").read_text().splitlines()[-1])
        if "Git: branch trunk; " in fetch["messages"][-1]["content"]:
            break
        await asyncio.sleep(0.05)
    system, asked = fetch["messages"][0]["content"], fetch["messages"][-1]["content"]
    assert asked.startswith(
        "what does this do?\n\nFile: src/app.py (lines 2-3)\n```python\ndef main():\n    return os.getcwd()\n```\n"
        "Open in the editor: README.md\nGit: branch trunk; "
    )
    assert "?? .agents/" in asked and "?? src/" in asked
    assert f"Workspace root: {project.resolve()}" in system and "How to work:" in system
