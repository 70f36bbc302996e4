"""Fixtures of the inline completion tests: the fake FIM server, and the engine with a folder."""

from __future__ import annotations

import pytest

from completion_folder import EngineFolder
from fim_server import FimServer


@pytest.fixture
def fim():
    """A real HTTP server on 127.0.0.1 speaking the FIM wire formats (fim_server.py)."""
    server = FimServer().start()
    yield server
    server.stop()


@pytest.fixture
def folder(tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    return EngineFolder(root)
