"""The fake model server of the completion tests (tests/completion/fim_server.py, real HTTP in each
FIM and chat wire format) for the editor suites, as the `llamacpp` provider's endpoint: the
`fim` fixture, imported by the suites that use it."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


def fim_server_module() -> Any:
    """tests/completion/fim_server.py, loaded from its file (tests/ is no package); the module the
    completion tests imported, when they ran in this process."""
    if "fim_server" in sys.modules:
        return sys.modules["fim_server"]
    spec = importlib.util.spec_from_file_location("fim_server", Path(__file__).parent / "completion" / "fim_server.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["fim_server"] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def fim(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The fake server, as the `llamacpp` provider's endpoint for the servers the editor starts."""
    server = fim_server_module().FimServer().start()
    monkeypatch.setenv("LLAMACPP_BASE_URL", f"{server.url}/v1")
    yield server
    server.stop()
