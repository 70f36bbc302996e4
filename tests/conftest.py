"""Shared fixtures: an isolated HOME, a project folder, and real server sessions.

The suite runs in parallel (pytest-xdist): every test gets its own HOME and XDG directories (the
autouse ``home`` fixture), so nothing a test or the server it starts writes under ~ is shared.
"""

from __future__ import annotations

import asyncio
import compileall
import os
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

import elelem_lsp
from scaffold import SERVER_COMMAND, Editor, make_client

# Where platformdirs (settings, trusted plugins, transcripts, conversations) and editors look.
XDG_DIRS = {
    "XDG_CONFIG_HOME": ".config",
    "XDG_STATE_HOME": ".local/state",
    "XDG_DATA_HOME": ".local/share",
    "XDG_CACHE_HOME": ".cache",
}


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # once, in the process that starts the xdist workers
        # Every server and terminal client the tests start imports the package afresh; where
        # PYTHONDONTWRITEBYTECODE is set (as on some CI images) each would compile it again.
        compileall.compile_dir(Path(elelem_lsp.__file__).parent, quiet=1)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: a worker per core, and one more: most tests spend their time waiting for the
    servers, editors and models they start, so a third worker on two cores finishes sooner
    (measured: 396 s with two, 367 s with three, 1222 tests)."""
    return len(os.sched_getaffinity(0)) + 1


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slow end-to-end suites first, so that xdist's workers finish together instead of one
    of them starting a minute-long editor session when the others are done."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty HOME and XDG directories inside it, for every test: the person's own
    ~/.agents/plugins never leak into a test, and tests running in parallel share no state file."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for variable, folder in XDG_DIRS.items():
        monkeypatch.setenv(variable, str(home / folder))
    for key in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    return home


@pytest.fixture
def project(tmp_path: Path, home: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "README.md").write_text("# hello\n")
    return root


@pytest_asyncio.fixture
async def start_editor(home: Path):
    """Start a real server session: ``await start_editor(root, client="visual-studio-code", ...)``;
    ``handlers`` maps methods to client-side handlers (replacing pytest-lsp's own)."""
    started: list[LanguageClient] = []

    async def start(
        root: Path,
        *,
        client: str | lsp.ClientCapabilities = "visual-studio-code",
        settings: dict[str, Any] | None = None,
        init_options: dict[str, Any] | None = None,
        folders: list[Path] | None = None,
        env: dict[str, str] | None = None,
        server_command: list[str] | None = None,
        handlers: dict[str, Any] | None = None,
    ) -> Editor:
        holder: list[Editor] = []
        config = ClientServerConfig(
            server_command=server_command or SERVER_COMMAND,
            client_factory=make_client(holder, handlers),
            server_env={**os.environ, **(env or {})},
        )
        lsp_client = await config.start()
        started.append(lsp_client)
        editor = Editor(lsp_client, root)
        holder.append(editor)
        lsp_client.set_configuration({"elelem": {"workspacePlugins": True, **(settings or {})}})
        folders = folders or [root]
        await lsp_client.initialize_session(
            lsp.InitializeParams(
                capabilities=client_capabilities(client) if isinstance(client, str) else client,
                root_uri=root.as_uri(),
                workspace_folders=[lsp.WorkspaceFolder(uri=f.as_uri(), name=f.name) for f in folders],
                initialization_options=init_options,
            )
        )
        return editor

    yield start
    for lsp_client in started:
        await stop_server(lsp_client)


async def stop_server(lsp_client: LanguageClient) -> None:
    """Shut the session down as an editor does, then make sure the server is gone: pygls's
    ``stop`` waits for the process however long it takes, and pytest-lsp sends no ``exit`` once
    the session saw an error, so a stuck server would hang the suite instead of failing its test."""
    server = lsp_client._server
    try:
        if server is not None and server.returncode is None:  # not killed by the test
            await asyncio.wait_for(lsp_client.shutdown_session(), 10)  # shutdown, exit, its end
    finally:
        if server is not None and server.returncode is None:
            server.kill()
        await asyncio.wait_for(lsp_client.stop(), 10)
