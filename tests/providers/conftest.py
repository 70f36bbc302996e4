"""Fixtures of the provider tests: the fake model server on loopback, and event recording."""

from __future__ import annotations

import pytest

from .fake_model_server import FakeModelServer


@pytest.fixture
def fake_server():
    """A real HTTP server on 127.0.0.1 speaking the model APIs' wire formats (see fake_model_server)."""
    server = FakeModelServer().start()
    yield server
    server.stop()


@pytest.fixture
def events() -> list[dict]:
    """The events a provider emits, in order (pass ``events.append`` as ``emit``)."""
    return []
