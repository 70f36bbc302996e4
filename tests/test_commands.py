"""Every elelem.* command and its bad arguments, folders, settings and declared providers."""

from __future__ import annotations

import asyncio
import json

import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException

from scaffold import PLUGINS, add_plugin, wait_until, write_script


async def command_error(editor, name, *arguments):
    with pytest.raises(JsonRpcException) as error:
        await editor.command(name, *arguments)
    return error.value


# Every bad argument is checked as a plain function in test_command_arguments.py; here, that the
# wire carries the InvalidParams and the server goes on.
@pytest.mark.parametrize("name, arguments, field", [
    ("elelem.ask", [{"prompt": "x", "range": {"start": {"line": 0}}}], "range.start.character"),
    ("elelem.ask", [{"prompt": "x"}, {"prompt": "y"}], "one object argument"),
])
async def test_bad_arguments_are_invalid_params_naming_the_field(project, start_editor, name, arguments, field):
    editor = await start_editor(project)
    error = await command_error(editor, name, *arguments)
    assert error.code == -32602
    assert field in error.message
    # the server is fine afterwards
    assert (await editor.command("elelem.tools", {}))["tools"]


async def test_providers_lists_builtins_presets_plugins_and_declared(project, start_editor):
    add_plugin(project, "echo")
    editor = await start_editor(project, settings={
        "provider": "echo", "model": "m1",
        "providers": [{"name": "office", "type": "openai-chat", "model": "x", "endpoint": "http://127.0.0.1:9/v1/chat/completions"}],
    })
    listing = await editor.command("elelem.providers", {})
    assert (listing["provider"], listing["model"], listing["source"]) == ("echo", "m1", "settings")
    for name in ("stub", "openai", "anthropic", "vertex", "ollama", "groq", "llama", "human", "echo", "office"):
        assert name in listing["available"]


async def test_select_provider_keeps_the_conversation_and_drops_the_model(project, start_editor):
    add_plugin(project, "echo")
    editor = await start_editor(project, settings={"provider": "stub"})
    await editor.ask("first", token="t1")
    assert await editor.command("elelem.selectProvider", {"name": "echo", "model": "parrot"}) == {"provider": "echo", "model": "parrot"}
    assert (await editor.ask("second", token="t2"))["reply"] == "parrot: second"
    await editor.command("elelem.selectProvider", {"name": "echo"})
    assert (await editor.ask("third", token="t3"))["reply"] == "third"
    messages = (await editor.command("elelem.context", {}))["messages"]
    assert [m["content"] for m in messages[1:]] == ["first", "done.", "second", "parrot: second", "third", "third"]


async def test_selecting_an_unknown_provider_says_which_package_to_install_and_keeps_the_old_one(project, start_editor):
    editor = await start_editor(project, settings={"provider": "stub"})
    error = await command_error(editor, "elelem.selectProvider", {"name": "nosuch"})
    assert 'unknown provider: "nosuch"' in error.message and "pip install elelem-nosuch" in error.message
    assert (await editor.command("elelem.providers", {}))["provider"] == "stub"


async def test_reset_context_tools_and_reload(project, start_editor):
    editor = await start_editor(project, settings={"provider": "stub"})
    await editor.ask("hello")
    context = (await editor.command("elelem.context", {}))["messages"]
    assert [m["role"] for m in context] == ["system", "user", "assistant"]
    before = (await editor.command("elelem.transcript", {}))["id"]
    reset = await editor.command("elelem.reset", {})
    assert reset == {"reset": True, "id": reset["id"]} and reset["id"] != before
    assert (await editor.command("elelem.transcript", {}))["id"] == reset["id"]
    assert [m["role"] for m in (await editor.command("elelem.context", {}))["messages"]] == ["system"]
    tools = (await editor.command("elelem.tools", {}))["tools"]
    assert [t["name"] for t in tools] == ["read", "write", "edit", "execute", "list", "grep", "plan"]
    assert tools[0]["parameters"]["required"] == ["path"]
    assert "unknown" not in (await editor.command("elelem.providers", {}))["available"]
    plugin = project / ".agents/plugins/late.py"
    plugin.parent.mkdir(parents=True)
    plugin.write_text("import elelem_lsp\nelelem_lsp.configure(lambda c: c.provider('late', lambda **_: None))\n")
    (project / ".agents/plugins/broken.py").write_text("raise ValueError('nope')\n")
    reloaded = await editor.command("elelem.reload", {})
    assert any("broken.py" in e and "ValueError: nope" in e for e in reloaded["pluginErrors"])
    assert "late" in (await editor.command("elelem.providers", {}))["available"]


async def test_workspace_plugins_load_only_when_trusted(project, start_editor):
    add_plugin(project, "echo")
    editor = await start_editor(project, settings={"workspacePlugins": False})
    assert "echo" not in (await editor.command("elelem.providers", {}))["available"]
    error = await command_error(editor, "elelem.selectProvider", {"name": "echo"})
    assert 'unknown provider: "echo"' in error.message


async def test_home_plugins_always_load(project, start_editor, home):
    target = home / ".agents/plugins/echo.py"
    target.parent.mkdir(parents=True)
    target.write_text((PLUGINS / "echo.py").read_text())
    editor = await start_editor(project, settings={"workspacePlugins": False, "provider": "echo"})
    assert (await editor.ask("from home"))["reply"] == "from home"


async def test_two_folders_with_their_own_providers(tmp_path, home, start_editor):
    first, second = tmp_path / "first", tmp_path / "second"
    for folder in (first, second):
        folder.mkdir()
        (folder / "README.md").write_text(f"# {folder.name}\n")
        add_plugin(folder, "echo")
        add_plugin(folder, "parrot")
    editor = await start_editor(first, folders=[first, second])
    editor.client.set_configuration({"provider": "echo", "model": "one", "workspacePlugins": True}, section="elelem", scope_uri=first.as_uri())
    editor.client.set_configuration({"provider": "parrot", "workspacePlugins": True}, section="elelem", scope_uri=second.as_uri())

    a = await editor.ask("hello", token="a", uri=(first / "README.md").as_uri())
    b = await editor.ask("hello", token="b", uri=(second / "README.md").as_uri())

    assert a["provider"] == "echo" and a["reply"].startswith("one: hello")
    assert b["provider"] == "parrot" and b["reply"] == "README.md has 1 line; it starts: # second"


async def test_folders_added_and_removed_at_run_time(tmp_path, home, start_editor):
    first, later = tmp_path / "first", tmp_path / "later"
    for folder in (first, later):
        folder.mkdir()
    add_plugin(later, "echo")
    editor = await start_editor(first, settings={"provider": "echo"})
    outside = await command_error(editor, "elelem.ask", {"prompt": "x", "uri": later.as_uri()})
    assert outside.code == -32602 and "not inside a workspace folder" in outside.message

    editor.client.workspace_did_change_workspace_folders(lsp.DidChangeWorkspaceFoldersParams(
        event=lsp.WorkspaceFoldersChangeEvent(added=[lsp.WorkspaceFolder(uri=later.as_uri(), name="later")], removed=[])))
    result = await editor.ask("in later", uri=later.as_uri())
    assert result["reply"] == "in later"

    editor.client.workspace_did_change_workspace_folders(lsp.DidChangeWorkspaceFoldersParams(
        event=lsp.WorkspaceFoldersChangeEvent(added=[], removed=[lsp.WorkspaceFolder(uri=later.as_uri(), name="later")])))
    gone = await command_error(editor, "elelem.ask", {"prompt": "x", "uri": later.as_uri()})
    assert "not inside a workspace folder" in gone.message


async def test_one_turn_per_folder_but_folders_run_concurrently(tmp_path, home, start_editor):
    slow, fast = tmp_path / "slow", tmp_path / "fast"
    for folder in (slow, fast):
        folder.mkdir()
        add_plugin(folder, "scripted")
    write_script(slow, [[{"type": "saying", "text": "waiting"}, {"type": "sleep", "seconds": 1.5}]])
    write_script(fast, [[{"type": "saying", "text": "quick"}]])
    editor = await start_editor(slow, folders=[slow, fast], settings={"provider": "scripted"})

    long_turn = asyncio.create_task(editor.ask("long", token="long", uri=slow.as_uri()))
    await wait_until(lambda: editor.events("long"), "the long turn to start")
    busy = await command_error(editor, "elelem.ask", {"prompt": "again", "uri": slow.as_uri()})
    assert "already running" in busy.message and busy.message.endswith("cancel it (elelem.cancel)")
    other = await editor.ask("other", token="other", uri=fast.as_uri())
    assert other["reply"] == "quick" and not long_turn.done()
    assert (await long_turn)["reply"] == "waiting"


async def test_invalid_settings_are_reported_with_the_value_used(project, start_editor):
    editor = await start_editor(project, settings={"maxSteps": "many", "execute": "sometimes", "provider": "stub"})
    result = await editor.ask("hi")
    assert result["reply"] == "done."
    [message] = [m.message for m in editor.client.messages if m.type == lsp.MessageType.Warning]
    assert "elelem.execute: 'sometimes'; using 'ask'" in message
    assert "elelem.maxSteps: 'many'; using 50" in message


async def test_changed_configuration_is_pulled_again(project, start_editor):
    add_plugin(project, "echo")
    editor = await start_editor(project, settings={"provider": "stub"})
    assert (await editor.ask("a", token="1"))["provider"] == "stub"
    editor.client.set_configuration({"elelem": {"provider": "echo", "workspacePlugins": True}})
    editor.client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(settings=None))
    assert (await editor.ask("b", token="2"))["reply"] == "b"


async def test_initialization_options_serve_clients_without_configuration(project, start_editor):
    add_plugin(project, "echo")
    plain = lsp.ClientCapabilities(
        workspace=lsp.WorkspaceClientCapabilities(apply_edit=True, configuration=False),
        window=lsp.WindowClientCapabilities(work_done_progress=True),
    )
    editor = await start_editor(project, client=plain, init_options={"provider": "echo", "model": "io", "workspacePlugins": True})
    assert (await editor.ask("hi"))["reply"] == "io: hi"


async def test_provider_from_the_environment_is_told_once(project, start_editor):
    editor = await start_editor(project)
    assert (await editor.ask("a", token="1"))["provider"] == "stub"
    await editor.ask("b", token="2")
    told = [m.message for m in editor.client.messages if "picked from the environment" in m.message]
    assert len(told) == 1 and "'stub'" in told[0] and "elelem.provider" in told[0]


async def test_declared_provider_unknown_type_names_the_supported_ones(project, start_editor):
    editor = await start_editor(project, settings={"provider": "mine", "providers": [{"name": "mine", "type": "telepathy"}]})
    result = await editor.ask("hi")
    assert result["error"] and "telepathy" in result["reply"] and "openai-chat" in result["reply"]


async def test_model_temperature_and_max_tokens_reach_the_provider(project, start_editor):
    plugin = project / ".agents/plugins/options.py"
    plugin.parent.mkdir(parents=True)
    plugin.write_text(
        "import json, elelem_lsp\n"
        "class Options:\n"
        "    def __init__(self, options): self.options = options\n"
        "    def fetch(self, messages, tools, emit):\n"
        "        emit({'type': 'saying', 'text': json.dumps(self.options, sort_keys=True)})\n"
        "elelem_lsp.configure(lambda c: c.provider('options', lambda **options: Options(options)))\n"
    )
    editor = await start_editor(project, settings={"provider": "options", "model": "m", "temperature": 0.2, "maxTokens": 64})
    result = await editor.ask("hi")
    assert json.loads(result["reply"]) == {"max_tokens": 64, "model": "m", "temperature": 0.2}
