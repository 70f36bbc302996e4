"""True windows: a model server's own figure sizes the budget, and no prompt is longer than it.

Ollama is sent ``options.num_ctx`` on every request (``OLLAMA_NUM_CTX``, else the context length
``/api/show`` reports, bounded by the machine's memory, else the family's window); llama.cpp's
server says its ``n_ctx`` at ``/props``; vLLM its ``max_model_len`` at ``/v1/models``. A lookup that
fails leaves the turn working. Real HTTP to the fake server on loopback, turns run by a session.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from elelem_lsp.agent.session import Session
from elelem_lsp.agent.workspace import Workspace
from elelem_lsp.providers.remote.ollama import OllamaProvider
from elelem_lsp.providers.remote.presets import factory as preset

from .fake_model_server import SERVED_MODEL, FakeModelServer, Reply, compact, json_error

CHARS_PER_TOKEN = 3  # no tokenizer cuts English prose and code finer than this on average


class WindowServer(FakeModelServer):
    """The fake server, which also answers what its model's window is, each way a server says it."""

    def __init__(self, show: Any = None, props: int | None = None, max_model_len: int | None = None) -> None:
        super().__init__()
        self.show, self.props, self.max_model_len = show, props, max_model_len

    def route(self, method: str, path: str, headers: dict[str, str], body: bytes) -> Reply:
        if path == "/api/show" and self.show is not None:
            if isinstance(self.show, int):
                return json_reply({"model_info": {"general.architecture": "qwen2", "qwen2.context_length": self.show}})
            return json_error(500, {"error": "model info unavailable"})
        if path == "/props" and self.props is not None:
            return json_reply({"default_generation_settings": {"n_ctx": self.props}, "total_slots": 1})
        if method == "GET" and path.endswith("/models") and self.max_model_len is not None:
            entry = {"id": SERVED_MODEL, "object": "model", "owned_by": "vllm", "max_model_len": self.max_model_len}
            return json_reply({"object": "list", "data": [entry]})
        return super().route(method, path, headers, body)

    def paths(self) -> list[str]:
        return [request.path for request in self.requests]

    def chats(self) -> list[dict]:
        return [request.json for request in self.requests if request.path.endswith(("/api/chat", "/chat/completions"))]


def json_reply(value: Any) -> Reply:
    return Reply([compact(value).encode()], content_type="application/json")


@pytest.fixture
def serve():
    servers: list[WindowServer] = []

    def start(**answers: Any) -> WindowServer:
        servers.append(WindowServer(**answers).start())
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


def prompt_characters(body: dict) -> int:
    """What a request asks the model to read: every message's text and the tools' JSON."""
    texts = [message.get("content") or "" for message in body["messages"]]
    return sum(len(text) for text in texts) + len(json.dumps(body.get("tools", []), separators=(",", ":")))


async def many_turns(provider: Any, root, turns: int = 30) -> Session:
    (root / "README.md").write_text("# readme\n" + "words of the readme " * 40)
    session = Session(provider, Workspace(root))
    for n in range(turns):
        result = await session.turn(f"turn {n}: what is in the readme? " + "p" * 300)
        assert result.error is None, result.error
    return session


async def test_ollama_sends_the_length_api_show_reports_as_num_ctx_and_no_prompt_exceeds_it(serve, tmp_path):
    server = serve(show=4096)
    session = await many_turns(OllamaProvider("qwen3:8b", host=server.url), tmp_path)
    chats = server.chats()
    assert len(chats) == 60  # each turn: the read, then the answer
    assert all(body["options"]["num_ctx"] == 4096 for body in chats)
    assert all(prompt_characters(body) <= 4096 * CHARS_PER_TOKEN for body in chats)
    assert server.paths().count("/api/show") == 1  # looked up once
    assert session.prompt_mode == "compact"  # 4,096 tokens is a small window
    asked = [m["content"] for m in chats[-1]["messages"] if m["role"] == "user"]
    assert asked[-1].startswith("turn 29: ") and asked[-2].startswith("turn 28: ")  # the latest turns stay


async def test_ollama_caps_a_very_long_context_by_the_machines_memory(serve, tmp_path):
    server = serve(show=1_048_576)
    await many_turns(OllamaProvider("qwen3:8b", host=server.url), tmp_path, turns=1)
    sent = {body["options"]["num_ctx"] for body in server.chats()}
    assert len(sent) == 1 and 4096 <= sent.pop() < 1_048_576


@pytest.mark.parametrize("show", ["broken", None])  # a 500, and a server with no /api/show (404)
async def test_ollama_whose_api_show_fails_still_runs_the_turn_with_a_window_it_sends(serve, tmp_path, show):
    server = serve(show=show)
    session = await many_turns(OllamaProvider("qwen3:8b", host=server.url), tmp_path, turns=3)
    assert session.history[-1]["content"].startswith("the tool said: ")
    windows = {body["options"]["num_ctx"] for body in server.chats()}
    assert len(windows) == 1 and 4096 <= windows.pop() <= 32_768  # qwen's published window at most
    assert server.paths().count("/api/show") == 1


async def test_the_ollama_num_ctx_setting_wins_and_nothing_is_looked_up(serve, tmp_path, monkeypatch):
    from elelem_lsp.providers.remote.ollama import factory

    server = serve(show=32_768)
    monkeypatch.setenv("OLLAMA_HOST", server.url)
    monkeypatch.setenv("OLLAMA_NUM_CTX", "3000")
    session = await many_turns(factory(model="qwen3:8b"), tmp_path, turns=10)
    assert {body["options"]["num_ctx"] for body in server.chats()} == {3000}
    assert "/api/show" not in server.paths()
    assert session.context_tokens < 3000 and all(prompt_characters(b) <= 3000 * CHARS_PER_TOKEN for b in server.chats())


async def test_a_llama_cpp_server_says_its_n_ctx_at_props(serve, tmp_path, monkeypatch):
    server = serve(props=3072)
    monkeypatch.setenv("LLAMACPP_BASE_URL", f"{server.url}/v1")
    session = await many_turns(preset("llamacpp"), tmp_path, turns=20)
    assert session.served_window == 3072 and session.prompt_mode == "compact"
    assert server.paths().count("/props") == 1
    assert all(prompt_characters(body) <= 3072 * CHARS_PER_TOKEN for body in server.chats())


async def test_a_vllm_server_says_its_max_model_len_at_v1_models(serve, tmp_path, monkeypatch):
    server = serve(max_model_len=6000, props=999_999)
    monkeypatch.setenv("VLLM_BASE_URL", f"{server.url}/v1")
    session = await many_turns(preset("vllm"), tmp_path, turns=20)
    assert session.served_window == 6000 and "/props" not in server.paths()
    assert all(prompt_characters(body) <= 6000 * CHARS_PER_TOKEN for body in server.chats())


async def test_a_server_that_publishes_no_window_keeps_the_known_ones(serve, tmp_path, monkeypatch):
    server = serve()  # /models without max_model_len, no /props
    monkeypatch.setenv("LLAMACPP_BASE_URL", f"{server.url}/v1")
    session = await many_turns(preset("llamacpp"), tmp_path, turns=2)
    assert session.served_window is None and session.prompt_mode == "full"
    assert "/props" in server.paths()
