"""Each remote provider as a folder's host picks it by name, in-process: its address and key from
the environment, a read-then-answer round trip against the fake server on loopback, and the errors
a turn ends with. test_providers_ask.py runs the same through ``elelem-lsp ask``, as a person does,
once for the terminal's face."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from elelem_lsp.host.host import Host
from optional_parts import require_module

from host.memory_frontend import MemoryFrontend
from .fake_model_server import Reply, json_error, model_requests, openai_chunk, sse
from .test_providers_ask import READ_RESULT, environment, tool_result_sent


async def turn(root: Path, monkeypatch: pytest.MonkeyPatch, env: dict[str, str], prompt: str, **settings: Any) -> dict:
    """One turn of the folder's agent with ``settings``, the environment set as ``env``."""
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    host = Host(MemoryFrontend(settings_by_folder={root.as_uri(): settings}))
    host.sync_folders({root.as_uri(): root})
    return await host.agents[root.as_uri()].turn(prompt)


@pytest.mark.parametrize(
    "name, path",
    [
        ("anthropic", "/v1/messages"),
        ("vertex-adc", "/v1/projects/proj-1/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict"),
        ("vertex-gcloud", "/v1/projects/proj-1/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict"),
        ("ollama", "/api/chat"),
        ("groq", "/openai/v1/chat/completions"),
        ("openai-chat", "/local/v1/chat/completions"),
    ],
)
async def test_read_then_answer(name, path, project, tmp_path, fake_server, monkeypatch):
    if name == "vertex-adc":
        require_module("google.auth.transport.requests", "vertex", "python3 -m pip install -e '.[vertex]'")
    provider = name.split("-")[0] if name.startswith("vertex") else name
    result = await turn(project, monkeypatch, environment(name, fake_server.url, tmp_path), "what is in the readme?",
                        provider=provider)
    assert result["error"] is None, result["reply"]
    assert result["reply"] == f"the tool said: {READ_RESULT}"
    answers = model_requests(fake_server.requests)  # a server of one's own is also asked its window
    assert [r.path for r in answers] == [path, path]
    first, second = (r.json for r in answers)
    asked = first["messages"][-1]["content"]  # Anthropic's: a text block marked for the prompt cache
    assert (asked if isinstance(asked, str) else asked[-1]["text"]) == "what is in the readme?"
    assert json.loads(tool_result_sent(answers[1])) == json.loads(READ_RESULT)


async def test_the_model_setting_reaches_the_request(project, tmp_path, fake_server, monkeypatch):
    """(`--model` is this setting: tests/test_cli_options.py.)"""
    result = await turn(project, monkeypatch, environment("ollama", fake_server.url, tmp_path), "hi",
                        provider="ollama", model="llama3.2:1b")
    assert result["error"] is None, result["reply"]
    assert fake_server.requests[0].json["model"] == "llama3.2:1b"


async def test_a_dropped_stream_ends_the_turn_with_an_error(project, tmp_path, fake_server, monkeypatch):
    fake_server.queue(Reply([sse(openai_chunk({"content": "half an ans"}))], drop=True))
    result = await turn(project, monkeypatch, environment("openai", fake_server.url, tmp_path), "hi", provider="openai")
    assert result["error"] and f"Error: the connection to {fake_server.url} dropped mid-answer" in result["reply"]


@pytest.mark.parametrize(
    "preset, status, payload, hint",
    [
        ("llamacpp", 500, {"error": {"code": 500, "message": "tools param requires --jinja flag", "type": "server_error"}},
         "HTTP 500: tools param requires --jinja flag (start llama-server with --jinja so that it accepts tools)"),
        ("vllm", 400, {"object": "error", "type": "BadRequestError", "code": 400,
                       "message": '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'},
         "(start vLLM with --enable-auto-tool-choice --tool-call-parser NAME (e.g. hermes))"),
    ],
)
async def test_a_self_hosted_server_refusing_tools_names_the_flag_it_needs(project, fake_server, monkeypatch,
                                                                          preset, status, payload, hint):
    fake_server.queue(json_error(status, payload))
    env = {f"{preset.upper()}_BASE_URL": f"{fake_server.url}/v1", f"{preset.upper()}_MODEL": "local"}
    result = await turn(project, monkeypatch, env, "hi", provider=preset)
    assert result["error"] and hint in result["reply"], result["reply"]


async def test_an_unrelated_http_error_gets_no_flag_hint(project, fake_server, monkeypatch):
    fake_server.queue(json_error(500, {"error": {"message": "out of memory"}}))
    env = {"LLAMACPP_BASE_URL": f"{fake_server.url}/v1", "LLAMACPP_MODEL": "m"}
    result = await turn(project, monkeypatch, env, "hi", provider="llamacpp")
    assert result["reply"] == "Error: HTTP 500: out of memory"
