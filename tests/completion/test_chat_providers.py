"""A chat-only API (Anthropic's Messages, over the provider tests' fake model server) fills the
hole through the hole-filling prompt: the file with the marker sent, the answer cut out of the
streamed reply, the tokens its stream reports priced."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "providers"))

from fake_model_server import FakeModelServer, Reply, anthropic_message  # noqa: E402

from elelem_lsp.providers.remote.anthropic import AnthropicProvider  # noqa: E402


@pytest.fixture
def model_server():
    server = FakeModelServer().start()
    yield server
    server.stop()


async def test_anthropic_fills_the_hole_through_the_chat_prompt(model_server, folder):
    model_server.queue(Reply(anthropic_message([{"text": ["Here it is: <COMPLETION>", "len(items)", "</COMPLETION>"]}])))
    provider = AnthropicProvider("claude-haiku-4-5", api_key="sk-ant-test", base_url=model_server.url)
    folder.use("anthropic", provider, "claude-haiku-4-5")
    folder.configure(enabled=True)

    suggestion = await folder.complete("count.py", "def count(items):\n    return |\n")

    assert suggestion is not None and suggestion.text == "len(items)"
    [request] = model_server.requests
    body = request.json
    assert request.path.endswith("/v1/messages") and not body.get("tools")
    assert "    return {{FILL_HERE}}" in str(body["messages"][-1]["content"])
    figures = folder.engine.counts("folder")
    assert figures["requests"] == 1 and figures["currency"] == "USD" and figures["cost"] > 0


async def test_anthropic_is_not_asked_until_enabled(model_server, folder):
    folder.use("anthropic", AnthropicProvider("claude-haiku-4-5", api_key="k", base_url=model_server.url))
    assert await folder.complete("a.py", "x = |") is None and model_server.requests == []
