"""No API key, bearer token or key parameter leaves the server in any answer, event, log line or file.

A canary key is set as the provider's credential; the fake model server quotes
it back (``KEY_ECHO``) in every shape a failure can take: an HTTP error, a
malformed stream chunk, an error inside the stream, a 200 with a non-stream
body, malformed tool-call arguments, a dropped or refused connection, a key in
the URL. The canary must appear nowhere a person or another program could see
it: the command results, every ``$/progress`` value, logMessage and
showMessage, the server's stderr at DEBUG, the files of the workspace.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from elelem_lsp.agent.messages import ProviderError
from elelem_lsp.providers.remote.openai import OpenAIProvider
from elelem_lsp.providers.remote.http import credentials, redact
from scaffold import debug_server
from providers.fake_model_server import (
    KEY_ECHO,
    Reply,
    anthropic_error_event,
    anthropic_message,
    compact,
    json_error,
    openai_chunk,
    openai_tool_calls,
    sse,
)

from .model_server import CANARY, fake_server, provider_env  # noqa: F401 (fixture)

READ_FAILED = "the tool said: "  # the scripted model's answer once a tool result is in


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def everything_seen(editor, results: list, log: Path, root: Path) -> str:
    """All a client, its user and the machine got to see, as one text."""
    client = editor.client
    seen = [json.dumps(results), json.dumps(dict(editor.progress))]
    seen += [m.message for m in client.log_messages] + [m.message for m in client.messages]
    seen.append(log.read_text(errors="replace"))
    seen += [p.read_text(errors="replace") for p in root.rglob("*") if p.is_file()]
    return "\n".join(seen)


# Each shape: the reply the fake server sends, and how the turn's reply must start (so the
# test proves the path really ran). Fragments holding the canary itself split it in two.
OPENAI_SHAPES = {
    "http error": (json_error(401, {"error": {"message": f"Incorrect API key provided: {KEY_ECHO}"}}), "Error: HTTP 401: Incorrect API key provided: ***"),
    "http error cut inside the key": (json_error(400, {"error": {"message": "x" * 292 + KEY_ECHO}}), "Error: HTTP 400: xxx"),
    "malformed chunk": (Reply([sse(openai_chunk({"content": "a"})), f'data: {{"choices": [{KEY_ECHO}\n\n'.encode()]), "Error: malformed chunk"),
    "error inside the stream": (Reply([sse(openai_chunk({"content": "Hel"})), sse({"error": {"message": f"key {KEY_ECHO} is over quota"}})]), "Error: the model server reported an error mid-answer: key *** is over quota"),
    "200 with a JSON body": (Reply([compact({"object": "chat.completion", "key": KEY_ECHO}).encode()], content_type="application/json"), "Error: http://127.0.0.1"),
    "malformed tool arguments": (Reply(openai_tool_calls([("c1", "read", ['{"path": "', CANARY[:12], CANARY[12:], '\n", '])])), READ_FAILED),
    "tool arguments that are a JSON string": (Reply(openai_tool_calls([("c1", "read", [json.dumps(CANARY)])])), READ_FAILED),
    "dropped connection": (Reply([sse(openai_chunk({"content": "half an ans"}))], drop=True), "Error: the connection to"),
}
ANTHROPIC_SHAPES = {
    "http error": (json_error(401, {"type": "error", "error": {"type": "authentication_error", "message": f"invalid x-api-key {KEY_ECHO}"}}), "Error: HTTP 401: invalid x-api-key ***"),
    "malformed event": (Reply([f'event: content_block_delta\ndata: {{"type": {KEY_ECHO}\n\n'.encode()]), "Error: malformed event"),
    "error event": (Reply([anthropic_error_event("overloaded_error", f"key {KEY_ECHO} overloaded")]), "Error: the model server reported an error mid-answer: key *** overloaded"),
    "typeless error": (Reply([sse({"error": {"message": f"gateway refused {KEY_ECHO}"}})]), "Error: the model server reported an error mid-answer: gateway refused ***"),
    "200 with a JSON body": (Reply([compact({"type": "message", "id": KEY_ECHO}).encode()], content_type="application/json"), "Error: http://127.0.0.1"),
    "malformed tool arguments": (Reply(anthropic_message([{"tool_use": ("toolu_1", "read", ['{"path": ', '"' + CANARY[:9], CANARY[9:] + '"'])}], stop_reason="tool_use")), READ_FAILED),
}


@pytest.mark.parametrize("wire, shapes", [("openai", OPENAI_SHAPES), ("anthropic", ANTHROPIC_SHAPES)])
async def test_no_failure_shape_shows_the_key_through_the_server_at_debug(wire, shapes, project, tmp_path, fake_server, start_editor):
    log = tmp_path / "server.log"
    editor = await start_editor(
        project, settings={"provider": wire}, env=provider_env(wire, fake_server.url), server_command=debug_server(log)
    )
    results = []
    for number, (name, (reply, expected)) in enumerate(shapes.items()):
        fake_server.queue(reply)
        result = await editor.ask("go", token=f"turn-{number}")
        results.append(result)
        assert result["reply"].startswith(expected), (name, result["reply"])
        if expected == READ_FAILED:  # the model was told what was wrong, and the turn went on
            assert '"ok":false' in result["reply"] and result["error"] is None, name
    assert all(CANARY in (r.headers.get("authorization", "") + r.headers.get("x-api-key", "")) for r in fake_server.requests)
    seen = everything_seen(editor, results, log, project)
    assert "DEBUG" in seen  # the log really was at DEBUG
    assert CANARY not in seen and CANARY[:8] not in seen


async def test_a_key_in_the_endpoint_url_never_shows(project, tmp_path, fake_server, start_editor):
    """Gateways and Google-style APIs take the key as ``?key=``: refused, failed and echoed."""
    declared = lambda name, endpoint: {"name": name, "type": "openai-chat", "model": "m", "endpoint": endpoint}
    providers = [
        declared("echoing", f"{fake_server.url}/v1/chat/completions?key={CANARY}"),
        declared("refused", f"http://127.0.0.1:{closed_port()}/v1/chat/completions?key={CANARY}"),
        declared("unresolvable", f"http://no-such-host.invalid/v1/chat/completions?api_key={CANARY}"),
    ]
    log = tmp_path / "server.log"
    editor = await start_editor(project, settings={"providers": providers}, server_command=debug_server(log))
    results = []
    fake_server.queue(json_error(400, {"error": {"message": f"API key not valid: {KEY_ECHO}. Pass a valid key."}}))
    for number, name in enumerate(["echoing", "refused", "unresolvable"]):
        await editor.command("elelem.selectProvider", {"name": name})
        results.append(await editor.ask("go", token=f"turn-{number}"))
    assert results[0]["reply"] == "Error: HTTP 400: API key not valid: ***. Pass a valid key."
    assert results[1]["reply"].startswith("Error: cannot connect to http://127.0.0.1:")
    assert results[2]["reply"].startswith("Error: cannot connect to http://no-such-host.invalid")
    assert CANARY in fake_server.requests[0].path  # the key really went out
    seen = everything_seen(editor, results, log, project)
    assert CANARY not in seen and CANARY[:8] not in seen


@pytest.mark.parametrize("shape", ["http error", "malformed chunk", "error inside the stream", "200 with a JSON body", "malformed tool arguments"])
def test_no_failure_shape_shows_the_key_through_ask(shape, project, fake_server):
    reply, expected = OPENAI_SHAPES[shape]
    fake_server.queue(reply)
    run = subprocess.run(
        [sys.executable, "-m", "elelem_lsp", "ask", "-v", "-p", "openai", "go"],
        cwd=project, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
        env={**os.environ, **provider_env("openai", fake_server.url)},
    )
    assert expected in run.stdout + run.stderr, run.stdout + run.stderr
    files = "".join(p.read_text(errors="replace") for p in project.rglob("*") if p.is_file())
    assert CANARY[:8] not in run.stdout + run.stderr + files


# -- the choke point, as plain functions and with an httpx error that quotes its URL -----------
@pytest.mark.parametrize(
    "url, headers, secret",
    [
        ("https://api.example.com/v1", {"Authorization": f"Bearer {CANARY}"}, CANARY),
        ("https://api.example.com/v1", {"x-api-key": CANARY}, CANARY),
        ("https://api.example.com/v1", {"X-Goog-Api-Key": CANARY}, CANARY),
        ("https://api.example.com/v1", {"api-key": CANARY}, CANARY),  # Azure
        (f"https://g.example.com/v1/models:generate?alt=sse&key={CANARY}", {}, CANARY),
        (f"https://g.example.com/v1?access_token={CANARY}", {}, CANARY),
        (f"https://user:{CANARY}@proxy.example.com/v1", {}, CANARY),
    ],
)
def test_every_place_a_request_carries_a_credential_is_found(url, headers, secret):
    found = credentials(url, headers)
    assert secret in found
    assert redact(f"failed: {secret} and {url}", found).count(secret) == 0


def test_redaction_covers_a_cut_key_an_encoded_key_and_leaves_the_rest():
    found = credentials("https://x.example.com/?key=ab+c/d=e-0123456789", {"authorization": "Bearer short"})
    cut = "message ending in ab+c/d=e-012…"
    assert redact(cut, found) == "message ending in ***…"
    assert redact("https://x/?key=ab%2Bc%2Fd%3De-0123456789", found) == "https://x/?key=***"
    assert redact("a brief key: short", found) == "a brief key: ***"
    assert redact("nothing secret here", found) == "nothing secret here"
    assert credentials("http://x/?model=gpt&alt=sse", {"accept": "text/event-stream"}) == []


@pytest.mark.parametrize("failure", [httpx.ConnectError, httpx.ReadError, httpx.RemoteProtocolError, httpx.UnsupportedProtocol, RuntimeError])
async def test_an_error_that_quotes_the_url_is_scrubbed_at_the_choke_point(failure):
    def refuse(request: httpx.Request) -> httpx.Response:
        raise failure(f"could not reach {request.url} with {request.headers['authorization']}")

    provider = OpenAIProvider(
        "gpt-test", endpoint=f"https://gw.example.com/v1/chat/completions?key={CANARY}",
        api_key="sk-other-9876543210", transport=httpx.MockTransport(refuse),
    )
    with pytest.raises(ProviderError) as caught:
        await provider.fetch([{"role": "user", "content": "hi"}], [], lambda event: None)
    message = str(caught.value)
    assert CANARY[:8] not in message and "sk-other" not in message
    assert "gw.example.com" in message
