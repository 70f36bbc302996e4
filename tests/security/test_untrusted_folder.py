"""An editor's untrusted folder (`trusted: false` in the settings it sends) cannot loosen anything.

Settings can come from files in the project (VS Code's `.vscode/settings.json`), so the server
caps them: no workspace plugins, `execute` asks at most, no `allowCommands`, no declared
providers. The same settings in a trusted folder do all of that, which shows each test can fail.
"""

from __future__ import annotations

import shutil

import pytest
from lsprotocol import types as lsp

from elelem_lsp.agent.sandbox import probe
from elelem_lsp.host.settings import Settings, parse_settings, within_trust
from providers.fake_model_server import FakeModelServer, Reply, openai_chunk, sse
from scaffold import TEST_PLUGINS, add_plugin, write_script

LOOSE = {
    "execute": "allow",
    "allowCommands": ["touch"],
    "workspacePlugins": True,
    "provider": "office",
    "providers": [{"name": "office", "type": "openai-chat", "model": "m"}],
}


def test_untrusted_settings_are_capped_and_say_what_was_ignored():
    settings, _ = parse_settings({**LOOSE, "trusted": False, "model": "kept", "maxSteps": 3})
    limited, ignored = within_trust(settings)
    assert (limited.execute, limited.allow_commands, limited.workspace_plugins) == ("ask", [], False)
    assert limited.providers == []
    assert (limited.provider, limited.model, limited.max_steps) == ("office", "kept", 3), "the rest is kept"
    assert ignored == ["execute 'allow' (using 'ask')", "workspacePlugins", "allowCommands", "providers"]


@pytest.mark.parametrize("execute", ["ask", "deny"])
def test_untrusted_keeps_stricter_execute_settings(execute):
    limited, ignored = within_trust(Settings.model_validate({"execute": execute, "trusted": False}))
    assert limited.execute == execute and ignored == []


def test_trusted_or_unsaid_settings_are_left_alone():
    for raw in (LOOSE, {**LOOSE, "trusted": True}):
        settings, _ = parse_settings(raw)
        assert within_trust(settings) == (settings, [])


@pytest.fixture
def model_server():
    server = FakeModelServer().start()
    yield server
    server.stop()


def folder_setup(project, home, model_server):
    """A user plugin (trusted) that runs `touch ran.txt`, a workspace plugin, a declared provider."""
    (home / ".agents" / "plugins").mkdir(parents=True)
    shutil.copy(TEST_PLUGINS / "scripted.py", home / ".agents" / "plugins")
    add_plugin(project, "evil")
    write_script(project, [[{"type": "doing", "id": "x", "name": "execute", "arguments": {"command": "touch ran.txt"}}]])
    model_server.queue(Reply([sse(openai_chunk({"content": "from the declared provider"}, "stop")), b"data: [DONE]\n\n"]))
    declared = {"name": "office", "type": "openai-chat", "model": "m",
                "endpoint": f"{model_server.url}/v1/chat/completions"}
    return {**LOOSE, "providers": [declared]}


async def test_untrusted_folder_ignores_loose_settings(project, home, start_editor, model_server):
    settings = folder_setup(project, home, model_server)
    editor = await start_editor(project, settings={**settings, "trusted": False})
    asked: list[lsp.ShowMessageRequestParams] = []

    @editor.client.feature(lsp.WINDOW_SHOW_MESSAGE_REQUEST)
    def deny(params):
        asked.append(params)
        return lsp.MessageActionItem(title="Deny")

    listing = await editor.command("elelem.providers", {})
    assert "office" not in listing["available"] and "evil" not in listing["available"]
    assert not (project / ".agents" / "evil-imported").exists()

    first = await editor.ask("hi")
    assert first["reply"].startswith('Error: unknown provider: "office"'), first
    assert model_server.requests == [], "the declared provider is not used"

    await editor.command("elelem.selectProvider", {"name": "scripted"})  # the person's own choice still works
    await editor.ask("run it", token="turn-2")
    ending = " (no sandbox)" if probe().kind is None else " (in the sandbox)"  # bubblewrap or sandbox-exec
    assert [p.message for p in asked] == [f"elelem wants to run: touch ran.txt{ending}"]
    assert not (project / "ran.txt").exists()
    warnings = [m.message for m in editor.client.messages if m.type == lsp.MessageType.Warning]
    assert any("is not trusted, so these settings are ignored: execute 'allow' (using 'ask'), workspacePlugins, "
               "allowCommands, providers" in w for w in warnings), warnings

    with pytest.raises(Exception, match='The workspace plugins in .agents/plugins \\(evil.py\\) were not loaded'):
        await editor.command("elelem.selectProvider", {"name": "evil"})


async def test_the_same_settings_in_a_trusted_folder_take_effect(project, home, start_editor, model_server):
    settings = folder_setup(project, home, model_server)
    editor = await start_editor(project, settings={**settings, "trusted": True})
    first = await editor.ask("hi")
    assert first["provider"] == "office" and first["reply"] == "from the declared provider"
    assert (project / ".agents" / "evil-imported").exists()
    await editor.command("elelem.selectProvider", {"name": "scripted"})
    await editor.ask("run it", token="turn-2")
    assert (project / "ran.txt").exists(), "execute: allow runs without asking"


async def test_trust_granted_later_applies_at_the_next_request(project, home, start_editor, model_server):
    settings = folder_setup(project, home, model_server)
    editor = await start_editor(project, settings={**settings, "trusted": False})
    assert (await editor.ask("hi"))["error"]
    assert model_server.requests == []
    editor.client.set_configuration({"elelem": {**settings, "trusted": True}})
    editor.client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(settings=None))
    assert (await editor.ask("hi", token="turn-2"))["provider"] == "office"
