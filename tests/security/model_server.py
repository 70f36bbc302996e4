"""The fake model server for the security tests, and where each provider is told to find it."""

from __future__ import annotations

import pytest

from providers.fake_model_server import FakeModelServer

CANARY = "sk-canary-5ec12e7-0123456789abcdefXYZ"


@pytest.fixture
def fake_server():
    """A real HTTP server on 127.0.0.1 speaking the model APIs' wire formats."""
    server = FakeModelServer().start()
    yield server
    server.stop()


def provider_env(wire: str, url: str) -> dict[str, str]:
    """Environment pointing ``-p <wire>`` at the fake server, with the canary as its key."""
    return {
        "openai": {"OPENAI_BASE_URL": f"{url}/v1", "OPENAI_API_KEY": CANARY, "OPENAI_MODEL": "gpt-test"},
        "anthropic": {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": CANARY},
        "ollama": {"OLLAMA_HOST": url},
    }[wire]
