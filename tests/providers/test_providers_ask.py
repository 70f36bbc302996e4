"""Each remote provider through ``elelem-lsp ask``: a read-then-answer round trip against the fake server.

The CLI runs as a person runs it (a subprocess in a folder with a README.md,
the real language server behind it); only environment variables point the
provider at the fake model server on loopback.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from optional_parts import require_module

from .fake_model_server import Reply, json_error, openai_chunk, refreshable_credentials, sse

READ_RESULT = '{"path":"README.md","total_lines":1,"lines":[1,1],"content":"1\\t# hello","ok":true}'


def ask(cwd: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "elelem_lsp", "ask", *args],
        cwd=cwd, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
        env={**os.environ, **env},
    )


def gcloud_on_path(tmp_path: Path, token: str) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "gcloud").write_text(f"#!/bin/sh\necho {token}\n")
    (bin_dir / "gcloud").chmod(0o755)
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "GOOGLE_APPLICATION_CREDENTIALS": str(tmp_path / "none.json")}


def environment(name: str, url: str, tmp_path: Path) -> dict[str, str]:
    vertex = {"VERTEX_BASE_URL": url, "GOOGLE_CLOUD_PROJECT": "proj-1", "GOOGLE_CLOUD_REGION": "us-east5"}
    return {
        "openai": {"OPENAI_BASE_URL": f"{url}/v1", "OPENAI_API_KEY": "sk-test-key"},
        "anthropic": {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "sk-ant-test-key"},
        "vertex-adc": {**vertex, "GOOGLE_APPLICATION_CREDENTIALS": str(refreshable_credentials(tmp_path, f"{url}/token"))},
        "vertex-gcloud": {**vertex, **gcloud_on_path(tmp_path, "ya29.fake-vertex-token")},
        "ollama": {"OLLAMA_HOST": url},
        "groq": {"GROQ_BASE_URL": f"{url}/openai/v1", "GROQ_API_KEY": "gsk-test-key"},
        "openai-chat": {"OPENAI_CHAT_ENDPOINT": f"{url}/local/v1/chat/completions", "OPENAI_MODEL": "local-7b"},
    }[name]


def tool_result_sent(request) -> str:
    """The tool result in the second request, in each wire's shape."""
    last = request.json["messages"][-1]
    if isinstance(last.get("content"), list):  # Anthropic and Vertex: a tool_result block
        [block] = last["content"]
        assert block["type"] == "tool_result"
        return block["content"]
    assert last["role"] == "tool"
    return last["content"]


@pytest.mark.parametrize(
    "name, path",
    [
        ("openai", "/v1/chat/completions"),
        ("anthropic", "/v1/messages"),
        ("vertex-adc", "/v1/projects/proj-1/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict"),
        ("vertex-gcloud", "/v1/projects/proj-1/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict"),
        ("ollama", "/api/chat"),
        ("groq", "/openai/v1/chat/completions"),
        ("openai-chat", "/local/v1/chat/completions"),
    ],
)
def test_read_then_answer_through_ask(name, path, project, tmp_path, fake_server):
    if name == "vertex-adc":
        require_module("google.auth.transport.requests", "vertex", "python3 -m pip install -e '.[vertex]'")
    provider = name.split("-")[0] if name.startswith("vertex") else name
    run = ask(project, "-p", provider, "what is in the readme?", env=environment(name, fake_server.url, tmp_path))
    assert run.returncode == 0, run.stderr
    assert run.stdout == f"the tool said: {READ_RESULT}\n"
    assert "+ Read README.md → 1 line\n" in run.stderr
    model_requests = [r for r in fake_server.requests if r.path != "/token"]
    assert [r.path for r in model_requests] == [path, path]
    first, second = (r.json for r in model_requests)
    assert first["messages"][-1]["content"] == "what is in the readme?"
    assert json.loads(tool_result_sent(model_requests[1])) == json.loads(READ_RESULT)


def test_model_flag_reaches_the_request(project, tmp_path, fake_server):
    run = ask(project, "-p", "ollama", "--model", "llama3.2:1b", "hi", env=environment("ollama", fake_server.url, tmp_path))
    assert run.returncode == 0, run.stderr
    assert fake_server.requests[0].json["model"] == "llama3.2:1b"


def test_http_error_is_the_reply_and_a_non_zero_exit(project, tmp_path, fake_server):
    fake_server.queue(json_error(401, {"error": {"message": "Incorrect API key provided: sk-test-key", "code": "invalid_api_key"}}))
    run = ask(project, "-p", "openai", "hi", env=environment("openai", fake_server.url, tmp_path))
    assert run.returncode == 1
    assert run.stdout == ""  # an error is not the reply: it goes to stderr
    assert run.stderr.endswith("Error: HTTP 401: Incorrect API key provided: ***\n")
    assert "sk-test-key" not in run.stdout + run.stderr


def test_dropped_stream_is_the_reply_and_a_non_zero_exit(project, tmp_path, fake_server):
    fake_server.queue(Reply([sse(openai_chunk({"content": "half an ans"}))], drop=True))
    run = ask(project, "-p", "openai", "hi", env=environment("openai", fake_server.url, tmp_path))
    assert run.returncode == 1
    assert run.stdout == ""
    assert f"\nError: the connection to {fake_server.url} dropped mid-answer" in run.stderr


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
def test_a_self_hosted_server_refusing_tools_names_the_flag_it_needs(project, fake_server, preset, status, payload, hint):
    fake_server.queue(json_error(status, payload))
    env = {f"{preset.upper()}_BASE_URL": f"{fake_server.url}/v1", f"{preset.upper()}_MODEL": "local"}
    run = ask(project, "-p", preset, "hi", env=env)
    assert run.returncode == 1 and run.stdout == ""
    assert hint in run.stderr, run.stderr


def test_an_unrelated_http_error_gets_no_flag_hint(project, fake_server):
    fake_server.queue(json_error(500, {"error": {"message": "out of memory"}}))
    run = ask(project, "-p", "llamacpp", "hi", env={"LLAMACPP_BASE_URL": f"{fake_server.url}/v1", "LLAMACPP_MODEL": "m"})
    assert run.stderr.endswith("Error: HTTP 500: out of memory\n")
