"""A plugin provider's error that quotes a key never shows it: not in the reply, the progress, the
stored conversation, the messages nor the server's log at DEBUG.

The plugin (``tests/plugins/scripted.py``) raises whatever message the script gives it, on the
event loop and, with ``SCRIPTED_MODE=thread``, on a worker thread. The keys are in the
server's environment under names that say they are keys, and one under a name that does not,
which a declared provider's ``apiKeyEnv`` in the settings names. Each is quoted in the forms a
failure quotes one: bare, in a URL (raw and percent-encoded), as ``Bearer``, inside JSON, in a
Python repr, and cut short. Short values and values of variables not named as secrets stay.
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote

import pytest

from elelem_lsp.agent.redaction import MINIMUM_SECRET, environment_secrets, redact_error
from scaffold import add_plugin, debug_server, write_script


ENV_KEYS = {
    "ACME_API_KEY": "sk-acme-7Hq2LmX9pR4vZ8wT1nB6",
    "GITHUB_TOKEN": "ghp_Z9yX8wV7uT6sR5qP4oN3mL2k",
    "payments_secret": "whsec+Kd/83jf=Qz0pL9mN2bV",  # lower case; '+', '/' and '=' change inside a URL
    "DB_PASSWORD": "correct-horse-battery-staple",
}
SETTINGS_KEY = ("ACME_CREDENTIALS_FILE_CONTENT_X", "acme-declared-5fG7hJ9kL1mN3pQ5")  # named by apiKeyEnv below
NOT_SECRET = {"SHORT_TOKEN": "abc123", "EDITOR": "vim-but-long-enough"}


def forms(key: str) -> dict[str, str]:
    return {
        "bare": f"invalid api key {key}",
        "url": f"POST https://api.acme.test/v1/chat?api_key={key}&x=1 failed",
        "percent-encoded url": f"GET https://api.acme.test/v1?token={quote(key, safe='')} refused",
        "bearer": f"upstream said 401 for 'Authorization: Bearer {key}'",
        "json": json.dumps({"error": {"message": "bad key", "key": key, "code": 401}}),
        "repr": repr({"headers": {"x-api-key": key}}),
        "cut short": f"the key {key[:MINIMUM_SECRET + 2]}… was refused",
    }


ALL_KEYS = [*ENV_KEYS.values(), SETTINGS_KEY[1]]
VARIANTS = {f"{key[:6]} {form}": text for key in ALL_KEYS for form, text in forms(key).items()}


def test_the_environment_secrets_are_the_long_values_of_names_that_say_secret():
    found = environment_secrets({**ENV_KEYS, **NOT_SECRET, "PATH": "/usr/local/bin:/usr/bin", "MY_KEY": "short"})
    assert found == set(ENV_KEYS.values())


@pytest.mark.parametrize("text", VARIANTS.values(), ids=VARIANTS.keys())
def test_every_form_of_a_known_key_is_redacted(text, monkeypatch):
    for name, value in ENV_KEYS.items():
        monkeypatch.setenv(name, value)
    redacted = redact_error(text, {SETTINGS_KEY[1]})
    assert "***" in redacted
    for key in ALL_KEYS:
        assert key not in redacted and key[:MINIMUM_SECRET] not in redacted and quote(key, safe="") not in redacted


def test_short_and_unnamed_values_are_left_as_they_are(monkeypatch):
    for name, value in NOT_SECRET.items():
        monkeypatch.setenv(name, value)
    text = "abc123 failed in vim-but-long-enough"
    assert redact_error(text, {"tiny"}) == text
    assert redact_error("a tiny error", {"tiny"}) == "a tiny error"


def everything_stored(home: Path) -> str:
    return "\n".join(p.read_text(errors="replace") for p in (home / ".local" / "state").rglob("*") if p.is_file())


@pytest.mark.parametrize("mode", ["loop", "thread"])
async def test_a_plugin_providers_error_never_shows_a_key(project, home, tmp_path, start_editor, mode):
    add_plugin(project, "scripted")
    log = tmp_path / "server.log"
    env = {**ENV_KEYS, **NOT_SECRET, SETTINGS_KEY[0]: SETTINGS_KEY[1], "SCRIPTED_MODE": mode}
    # A declared provider whose key variable's name says nothing of a key: the settings name it.
    declared = {"name": "acme", "type": "openai-chat", "endpoint": "http://127.0.0.1:9/v1", "apiKeyEnv": SETTINGS_KEY[0]}
    editor = await start_editor(
        project, settings={"provider": "scripted", "providers": [declared]}, env=env, server_command=debug_server(log)
    )
    results = []
    for number, (name, text) in enumerate(VARIANTS.items()):
        write_script(project, [[{"type": "saying", "text": "trying. "}, {"type": "raise", "message": text}]])
        result = await editor.ask("go", token=f"turn-{number}")
        results.append(result)
        assert result["reply"].startswith("Error: ") and "***" in result["reply"], (name, result["reply"])
        [end] = [value for value in editor.progress[f"turn-{number}"] if value["kind"] == "end"]
        assert "***" in end["message"], name
    write_script(project, [[{"type": "raise", "message": "abc123 failed in vim-but-long-enough"}]])
    assert (await editor.ask("go", token="plain"))["reply"] == "Error: abc123 failed in vim-but-long-enough"

    client = editor.client
    seen = [json.dumps(results), json.dumps(dict(editor.progress)), log.read_text(errors="replace"), everything_stored(home)]
    seen += [m.message for m in client.log_messages] + [m.message for m in client.messages]
    seen = "\n".join(seen)
    assert "DEBUG" in seen and "Error: " in everything_stored(home)
    for key in ALL_KEYS:
        assert key not in seen and key[:MINIMUM_SECRET] not in seen, key[:4]


KEYED_PLUGIN = '''
import os

import elelem_lsp


def build(model=None, **_):
    raise RuntimeError(f"could not sign in with Bearer {os.environ['ACME_API_KEY']}")


@elelem_lsp.configure
def setup(config):
    config.provider("keyed", build)
'''


async def test_failures_outside_a_turn_are_redacted_too(project, monkeypatch):
    """A factory that fails quoting the key (on a turn and on selecting it), and a compaction that fails."""
    from host.memory_frontend import MemoryFrontend

    from elelem_lsp.host.frontend import Refused
    from elelem_lsp.host.host import Host

    for name, value in ENV_KEYS.items():
        monkeypatch.setenv(name, value)
    key = ENV_KEYS["ACME_API_KEY"]
    add_plugin(project, "scripted")
    (project / ".agents" / "plugins" / "keyed.py").write_text(KEYED_PLUGIN)
    frontend = MemoryFrontend(settings_by_folder={project.as_uri(): {"workspacePlugins": True, "provider": "keyed"}})
    host = Host(frontend)
    host.sync_folders({project.as_uri(): project})
    folder = next(iter(host.agents.values()))

    result = await folder.turn("hello")
    assert result["reply"] == "Error: could not sign in with Bearer ***" and result["error"] == result["reply"][7:]
    with pytest.raises(Refused) as refused:
        await folder.select_provider("keyed", None)
    assert str(refused.value) == "could not build provider 'keyed': could not sign in with Bearer ***"

    frontend.settings_by_folder[project.as_uri()] = {"workspacePlugins": True, "provider": "scripted"}
    await host.settings_changed()
    for n in range(4):
        await folder.turn(f"turn {n}")
    write_script(project, [[{"type": "raise", "message": f"summary refused for key={key}"}]])
    with pytest.raises(Refused) as refused:
        await folder.compact()
    assert str(refused.value) == "could not compact the conversation: summary refused for key=***"
    shown = json.dumps(frontend.messages) + json.dumps([p.ended for p in frontend.progress])
    assert key not in shown and key[:MINIMUM_SECRET] not in shown
