"""A remote provider through ``elelem-lsp ask``: a read-then-answer round trip against the fake
server, and an HTTP error as the terminal shows it. Every provider's round trip and the errors a turn
ends with are in test_providers_host.py, in-process.

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

from .fake_model_server import json_error, model_requests, refreshable_credentials

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


def test_read_then_answer_through_ask(project, tmp_path, fake_server):
    """The other providers, the model setting and the errors turns end with: test_providers_host.py."""
    run = ask(project, "-p", "openai", "what is in the readme?", env=environment("openai", fake_server.url, tmp_path))
    assert run.returncode == 0, run.stderr
    assert run.stdout == f"the tool said: {READ_RESULT}\n"
    assert "+ Read README.md → 1 line\n" in run.stderr
    answers = model_requests(fake_server.requests)  # a server of one's own is also asked its window
    assert [r.path for r in answers] == ["/v1/chat/completions"] * 2
    assert answers[0].json["messages"][-1]["content"] == "what is in the readme?"
    assert json.loads(tool_result_sent(answers[1])) == json.loads(READ_RESULT)


def test_http_error_is_the_reply_and_a_non_zero_exit(project, tmp_path, fake_server):
    fake_server.queue(json_error(401, {"error": {"message": "Incorrect API key provided: sk-test-key", "code": "invalid_api_key"}}))
    run = ask(project, "-p", "openai", "hi", env=environment("openai", fake_server.url, tmp_path))
    assert run.returncode == 1
    assert run.stdout == ""  # an error is not the reply: it goes to stderr
    assert run.stderr.endswith("Error: HTTP 401: Incorrect API key provided: ***\n")
    assert "sk-test-key" not in run.stdout + run.stderr
