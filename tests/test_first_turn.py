"""The first turn is readied before the first prompt: no TLS for http://, a prepare step that
delays neither initialize nor any request, settings kept while the client reports changes, a
long conversation that is not encoded again every request, and git's state of the folder read
in the background, never waited for by an ask."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from lsprotocol import types as lsp

from elelem_lsp.agent.editor_context import EditorContext, known_changes, render
from elelem_lsp.agent.messages import assistant, system, tool_result, user
from elelem_lsp.agent.toolbox import Toolbox
from elelem_lsp.providers.remote import http
from elelem_lsp.providers.remote.openai import OpenAIProvider
from elelem_lsp.providers.shaping import chat_message, compact_json
from scaffold import ROOT, add_plugin, debug_server, wait_until

PROVIDERS_TESTS = Path(__file__).resolve().parent / "providers"


# -- nothing TLS for http:// -----------------------------------------------------------------------
def contexts_after(url_kind: str) -> dict:
    """In a fresh interpreter: one real turn's request to a loopback model (http), or a client
    built for an https URL; then every SSLContext alive in the process and its CA count."""
    script = textwrap.dedent(
        f"""
        import asyncio, gc, json, ssl, sys
        sys.path.insert(0, {str(PROVIDERS_TESTS)!r})
        from fake_model_server import FakeModelServer
        from elelem_lsp.providers.remote import http
        from elelem_lsp.providers.remote.openai import OpenAIProvider

        async def main():
            if {url_kind!r} == "http":
                model = FakeModelServer().start()
                said = []
                provider = OpenAIProvider("m", base_url=model.url + "/v1", api_key="k")
                await provider.fetch([{{"role": "user", "content": "hi"}}], [], lambda e: said.append(e))
                assert said, "the request did not happen"
            else:
                await http.http_client("https://api.example.com/v1").aclose()

        asyncio.run(main())
        contexts = [o for o in gc.get_objects() if isinstance(o, ssl.SSLContext)]
        print(json.dumps([c.cert_store_stats()["x509_ca"] for c in contexts]))
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_an_http_request_loads_no_certificates():
    assert all(count == 0 for count in contexts_after("http"))


def test_an_https_client_trusts_the_ca_bundle():
    assert any(count > 0 for count in contexts_after("https"))  # what the http check would see if it failed


@pytest.mark.parametrize("url", ["http://127.0.0.1:8080/v1", "http://localhost/v1/chat/completions", "HTTP://example.com"])
def test_http_urls_share_one_context_that_trusts_nothing(url):
    context = http.tls_context(url)
    assert context is http.tls_context("http://elsewhere:1/") and context.cert_store_stats()["x509_ca"] == 0


def test_https_urls_share_the_verified_context():
    context = http.tls_context("https://api.openai.com/v1")
    assert context is http.tls_context("https://api.anthropic.com") and context.cert_store_stats()["x509_ca"] > 0


# -- a prepare step that delays nothing -----------------------------------------------------------
SLOW_PREPARE = '''
import json, time
from pathlib import Path
import elelem_lsp
from elelem_lsp.agent.workspace import current_workspace

MARKS = Path(__file__).resolve().parents[2] / "prepare.json"
RELEASE = MARKS.with_name("release-prepare")


class SlowToPrepare:
    def prepare(self):
        MARKS.write_text(json.dumps({"started": time.time()}))
        while not RELEASE.exists():  # busy until the test has seen requests answered meanwhile
            time.sleep(0.01)
        MARKS.write_text(json.dumps({**json.loads(MARKS.read_text()), "finished": time.time()}))

    async def fetch(self, messages, tools, emit):
        emit({"type": "saying", "text": "prepared: " + str("finished" in json.loads(MARKS.read_text()))})


elelem_lsp.configure(lambda config: config.provider("slowprep", lambda **_: SlowToPrepare()))
'''


async def test_prepare_runs_after_initialize_and_delays_no_request(project, start_editor):
    plugin = project / ".agents" / "plugins" / "slowprep.py"
    plugin.parent.mkdir(parents=True)
    plugin.write_text(SLOW_PREPARE)
    marks = project / "prepare.json"
    editor = await start_editor(project, settings={"provider": "slowprep"})
    initialized = time.time()
    try:
        await wait_until(marks.exists, "prepare() to start", timeout=20)
        assert json.loads(marks.read_text())["started"] >= initialized - 0.05  # only after initialize was answered
        # prepare() runs until released below: a server that held requests back for it would time out here
        tools, providers = await asyncio.wait_for(
            asyncio.gather(editor.command("elelem.tools", {}), editor.command("elelem.providers", {})), 10
        )
        assert "finished" not in json.loads(marks.read_text())
        assert "grep" in {t["name"] for t in tools["tools"]} and providers["provider"] == "slowprep"
    finally:
        (project / "release-prepare").touch()
    await wait_until(lambda: "finished" in json.loads(marks.read_text()), "prepare() to finish", timeout=20)
    assert (await editor.ask("go"))["reply"] == "prepared: True"


async def test_the_server_exits_when_told_to_while_a_plugins_prepare_never_returns(project, start_editor):
    plugin = project / ".agents" / "plugins" / "slowprep.py"
    plugin.parent.mkdir(parents=True)
    plugin.write_text(SLOW_PREPARE)  # never released here
    editor = await start_editor(project, settings={"provider": "slowprep"})
    await wait_until((project / "prepare.json").exists, "prepare() to start", timeout=20)
    started = time.monotonic()
    await asyncio.wait_for(editor.client.shutdown_session(), 20)  # shutdown, exit, and the process's end
    assert editor.client._server.returncode == 0
    assert time.monotonic() - started < 10


async def test_a_provider_that_fails_to_build_is_reported_by_the_turn_not_the_prepare(project, start_editor, tmp_path):
    log = tmp_path / "server.log"
    editor = await start_editor(project, settings={"provider": "nosuch"}, server_command=debug_server(log))
    # Nothing on the wire says the preparation failed; its log does, last. An error it showed
    # would be on the wire before the answer to the request sent after that.
    failed = "could not prepare provider 'nosuch' ahead of the first turn"
    await wait_until(lambda: log.exists() and failed in log.read_text(), "the preparation to fail", timeout=20)
    await editor.command("elelem.tools", {})
    assert [m for m in editor.client.messages if m.type == lsp.MessageType.Error] == []
    result = await editor.ask("hi")
    assert result["error"] and 'unknown provider: "nosuch"' in result["reply"]


# -- settings kept while the client says when they change -----------------------------------------
class SettingsClient:
    """Answers workspace/configuration from ``current`` and counts the pulls; answers registrations."""

    def __init__(self, settings: dict, *, registration: bool = True) -> None:
        self.current = {"workspacePlugins": True, **settings}
        self.pulls = 0
        self.registered: list[str] = []
        self.registration = registration

    def handlers(self) -> dict:
        def configuration(params: lsp.ConfigurationParams) -> list:
            self.pulls += 1
            return [dict(self.current) for _ in params.items]

        def register(params: lsp.RegistrationParams) -> None:
            if not self.registration:
                raise RuntimeError("this client registers nothing")
            self.registered += [r.method for r in params.registrations]

        return {lsp.WORKSPACE_CONFIGURATION: configuration, lsp.CLIENT_REGISTER_CAPABILITY: register}


async def test_settings_are_kept_until_the_client_reports_a_change(project, start_editor):
    add_plugin(project, "echo")
    settings = SettingsClient({"provider": "echo", "model": "one"})
    editor = await start_editor(project, handlers=settings.handlers())
    await wait_until(lambda: settings.pulls >= 1, "the settings to be pulled")
    assert settings.registered == [lsp.WORKSPACE_DID_CHANGE_CONFIGURATION]
    assert (await editor.ask("a", token="1"))["reply"] == "one: a"
    assert (await editor.ask("b", token="2"))["reply"] == "one: b"
    assert settings.pulls == 1
    settings.current["model"] = "two"
    editor.client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(settings=None))
    assert (await editor.ask("c", token="3"))["reply"] == "two: c"
    assert (await editor.ask("d", token="4"))["reply"] == "two: d"
    assert settings.pulls in (2, 3)  # the change is pulled once (twice if a turn raced the notification)


@pytest.mark.parametrize("registers", ["no-dynamic-registration", "registration-refused"])
async def test_clients_that_do_not_report_changes_are_asked_every_turn(project, start_editor, registers):
    add_plugin(project, "echo")
    settings = SettingsClient({"provider": "echo", "model": "one"}, registration=registers != "registration-refused")
    capabilities = lsp.ClientCapabilities(
        workspace=lsp.WorkspaceClientCapabilities(
            apply_edit=True,
            configuration=True,
            did_change_configuration=lsp.DidChangeConfigurationClientCapabilities(
                dynamic_registration=registers == "registration-refused"
            ),
        ),
        window=lsp.WindowClientCapabilities(work_done_progress=True),
    )
    editor = await start_editor(project, client=capabilities, handlers=settings.handlers())
    await wait_until(lambda: settings.pulls >= 1, "the settings to be pulled")
    pulls = settings.pulls
    assert (await editor.ask("a", token="1"))["reply"] == "one: a"
    settings.current["model"] = "two"  # changed without a word to the server
    assert (await editor.ask("b", token="2"))["reply"] == "two: b"
    assert settings.pulls == pulls + 2


# -- a long conversation is encoded once ---------------------------------------------------------
def conversation(turns: int) -> list[dict]:
    messages = [system("you code")]
    for number in range(turns):
        messages += [user(f"question {number} é"), assistant(f"answer {number} " * 50)]
    return messages


def test_the_request_body_is_the_one_the_api_expects():
    provider = OpenAIProvider("m", api_key="k")
    tools = Toolbox().definitions()
    messages = conversation(3)
    messages += [assistant("", [{"id": "c1", "name": "read", "arguments": {"path": "a"}}]), tool_result("c1", '{"ok":true}')]
    encoded = provider.encoded.body(provider.request_body("m", [], tools), "messages", messages)
    assert encoded == compact_json(provider.request_body("m", messages, tools)).encode()


def test_each_message_is_encoded_once_across_requests():
    shaped: list[str] = []

    def shape(message):
        shaped.append(message["content"])
        return chat_message(message)

    encoder = http.EncodedMessages(shape)
    messages = conversation(100)
    first = encoder.body({"model": "m", "messages": []}, "messages", messages)
    assert len(shaped) == len(messages)
    messages += [user("one more")]
    second = encoder.body({"model": "m", "messages": []}, "messages", messages)
    assert shaped[len(messages) - 1:] == ["one more"]
    assert json.loads(second)["messages"] == [chat_message(m) for m in messages]
    assert json.loads(first)["messages"] == [chat_message(m) for m in messages[:-1]]


def test_messages_no_longer_sent_are_forgotten():
    encoder = http.EncodedMessages(chat_message)
    old = conversation(10)
    encoder.body({}, "messages", old)
    fresh = [system("new"), user("again")]
    assert json.loads(encoder.body({}, "messages", fresh)) == {"messages": [chat_message(m) for m in fresh]}
    assert len(encoder.known) == 2


def test_a_changed_message_is_never_served_from_the_cache():
    encoder = http.EncodedMessages(chat_message)
    messages = conversation(2)
    encoder.body({}, "messages", messages)
    messages[1] = user("replaced")  # a new dict in the old one's place
    assert json.loads(encoder.body({}, "messages", messages))["messages"][1]["content"] == "replaced"


def test_tool_schemas_are_derived_once_per_toolbox():
    box = Toolbox()
    assert box.definitions() is box.definitions()
    assert Toolbox().definitions() == box.definitions()


# -- git's state never holds an ask back ----------------------------------------------------------
ECHO_CONTEXT = '''
import elelem_lsp


class EchoContext:
    async def fetch(self, messages, tools, emit):
        emit({"type": "saying", "text": messages[-1]["content"]})


elelem_lsp.configure(lambda config: config.provider("echo-context", lambda **_: EchoContext()))
'''


def git_repository(root: Path) -> None:
    """``root`` as a repository with all it holds committed, then README.md changed."""
    for command in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "x"]):
        subprocess.run(["git", "-C", str(root), *command], check=True, capture_output=True)
    (root / "README.md").write_text("# changed\n")


async def echo_editor(project: Path, start_editor, env: dict[str, str] | None = None):
    plugin = project / ".agents" / "plugins" / "echo_context.py"
    plugin.parent.mkdir(parents=True)
    plugin.write_text(ECHO_CONTEXT)
    git_repository(project)
    return await start_editor(project, settings={"provider": "echo-context"}, env=env)


async def test_an_ask_does_not_wait_for_a_git_status_that_hangs(project, start_editor, tmp_path):
    slow = tmp_path / "bin"
    slow.mkdir()
    real = subprocess.run(["sh", "-c", "command -v git"], capture_output=True, text=True, check=True).stdout.strip()
    (slow / "git").write_text(f'#!/bin/sh\ncase "$*" in *status*) sleep 8;; esac\nexec {real} "$@"\n')
    (slow / "git").chmod(0o755)
    editor = await echo_editor(project, start_editor, env={"PATH": f"{slow}:{os.environ['PATH']}"})
    reply = (await editor.ask("hi", uri=(project / "README.md").as_uri()))["reply"]
    # before, the ask waited for git up to its 2-second timeout and said it "could not say"
    assert "Git: branch " in reply and "(git status has not answered yet)" in reply


async def test_the_next_ask_names_what_changed_since_the_last_one(project, start_editor):
    editor = await echo_editor(project, start_editor)
    readme = (project / "README.md").as_uri()

    async def context_says(text: str) -> None:
        for _ in range(100):  # git is read in the background; each ask shows what it last said
            if text in (await editor.ask("hi", uri=readme))["reply"]:
                return
            await asyncio.sleep(0.05)
        raise AssertionError(f"no ask's context said {text!r}; the last: {(await editor.ask('hi', uri=readme))['reply']!r}")

    await context_says("1 uncommitted change: M README.md")
    (project / "notes.txt").write_text("new\n")
    editor.client.text_document_did_save(lsp.DidSaveTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=readme)))
    await context_says("2 uncommitted changes: M README.md, ?? notes.txt")


async def test_known_changes_are_read_in_the_background_and_kept(tmp_path):
    (tmp_path / "README.md").write_text("# hello\n")
    git_repository(tmp_path)
    subprocess.run(["git", "-C", str(tmp_path), "branch", "-m", "trunk"], check=True)  # whatever git's default
    known = known_changes(tmp_path)
    assert await render(EditorContext(tmp_path, known=known)) == "Git: branch trunk (git status has not answered yet)"
    known.refresh()
    await asyncio.wait_for(known.reading, 10)
    assert await render(EditorContext(tmp_path, known=known)) == "Git: branch trunk; 1 uncommitted change: M README.md"
    (tmp_path / "notes.txt").write_text("new\n")
    assert "?? notes.txt" not in await render(EditorContext(tmp_path, known=known))  # kept until read again
    known.refresh()
    known.refresh()  # asked again while git runs: read once more after it
    await asyncio.wait_for(known.reading, 10)
    assert (await render(EditorContext(tmp_path, known=known))).endswith("2 uncommitted changes: M README.md, ?? notes.txt")


# -- one connection for a turn's requests ----------------------------------------------------------
async def test_a_providers_requests_reuse_one_connection():
    sys.path.insert(0, str(PROVIDERS_TESTS))
    from fake_model_server import FakeModelServer

    class Ports(FakeModelServer):
        def handle(self, handler, body):
            self.ports.append(handler.client_address[1])  # the client's end of the connection
            super().handle(handler, body)

    model = Ports()
    model.ports = []
    model.start()
    try:
        provider = OpenAIProvider("m", base_url=model.url + "/v1", api_key="k")
        for _ in range(3):
            said: list[dict] = []
            await provider.fetch([user("hi")], [], said.append)
            assert said, "the request did not happen"
        assert len(model.ports) == 3 and len(set(model.ports)) == 1, model.ports
    finally:
        model.stop()


# -- start-up imports only what answering initialize needs ----------------------------------------
def test_the_server_starts_without_the_agents_libraries():
    script = textwrap.dedent(
        """
        import json, sys
        from elelem_lsp.server.server import create_server
        create_server()
        heavy = ("pydantic", "httpx", "httpcore", "anthropic", "openai", "mcp", "acp", "jsonschema", "filelock", "trio")
        print(json.dumps(sorted({name.split(".")[0] for name in sys.modules} & set(heavy))))
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []  # each comes after initialize, on the prepare step or the first use
