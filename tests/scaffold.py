"""Test scaffolding shared by the suites: workspaces with plugins, and an editor over pytest-lsp."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import struct
import subprocess
import sys
import time
import zlib
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable

from lsprotocol import types as lsp
from pygls.protocol import default_converter
from pytest_lsp import LanguageClient
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

ROOT = Path(__file__).resolve().parent.parent
PLUGINS = ROOT / "plugins"
TEST_PLUGINS = Path(__file__).resolve().parent / "plugins"
SERVER_COMMAND = [sys.executable, "-m", "elelem_lsp", "serve"]


def debug_server(log: Path) -> list[str]:
    """``elelem-lsp serve --log-level DEBUG`` with its stderr kept in ``log``."""
    return ["sh", "-c", 'exec "$0" -m elelem_lsp serve --log-level DEBUG 2>"$1"', sys.executable, str(log)]


async def wait_until(condition: Callable[[], Any], what: str, timeout: float = 10) -> None:
    """Wait for ``condition()`` to hold (checked every 20 ms); fail naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


def add_plugin(root: Path, name: str) -> Path:
    """Copy a plugin (from plugins/ or tests/plugins/) into the workspace's .agents/plugins/."""
    source = PLUGINS / f"{name}.py"
    if not source.exists():
        source = TEST_PLUGINS / f"{name}.py"
    target = root / ".agents" / "plugins" / source.name
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(source, target)
    return target


def write_script(root: Path, fetches: list[list[dict[str, Any]]]) -> None:
    path = root / ".agents" / "script.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(fetches))


def write_user_settings(home: Path, settings: dict[str, Any]) -> None:
    """The person's own settings file (``~/.config/elelem-lsp/settings.json``) under ``home``."""
    path = home / ".config" / "elelem-lsp" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(settings))


def run_ask(
    cwd: Path, *args: str, stdin: str = "", env: dict[str, str] | None = None, trust: bool = True
) -> subprocess.CompletedProcess:
    """``elelem-lsp ask ARGS`` run in ``cwd`` as a person runs it: a subprocess with the real server behind it.

    ``trust`` passes ``--trust``: most tests put their providers in the workspace's plugins."""
    return subprocess.run(
        [sys.executable, "-m", "elelem_lsp", "ask", *(["--trust"] if trust else []), *args],
        cwd=cwd, input=stdin, capture_output=True, text=True, timeout=60,
        env={**os.environ, **(env or {})},
    )


def png(width: int = 2, height: int = 1) -> bytes:
    """A real PNG: red pixels, as an image viewer would open it."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def make_tree(root: Path, files: int, per_folder: int = 100) -> list[Path]:
    """``files`` small Python files in folders of ``per_folder``, written in order; their paths."""
    written = []
    for number in range(files):
        folder = root / f"pkg{number // per_folder:03d}"
        if number % per_folder == 0:
            folder.mkdir(parents=True)
        path = folder / f"mod{number % per_folder:03d}.py"
        path.write_text("".join(f"def f{number}_{i}(value):\n    return value * {i}\n" for i in range(5)))
        written.append(path)
    return written


class Editor:
    """A pytest-lsp client with the extra recording our tests need."""

    def __init__(self, client: LanguageClient, root: Path) -> None:
        self.client = client
        self.root = root
        self.progress: dict[Any, list[dict[str, Any]]] = defaultdict(list)
        self.edits: list[lsp.ApplyWorkspaceEditParams] = []
        self.answer_edit: Callable[[lsp.ApplyWorkspaceEditParams], Any] = lambda params: True
        self.versions: dict[str, int] = {}

    def uri(self, name: str) -> str:
        return (self.root / name).as_uri()

    def open(self, name: str, text: str | None = None, language: str = "plaintext") -> str:
        uri = self.uri(name)
        text = (self.root / name).read_text() if text is None else text
        self.versions[uri] = 1
        self.client.text_document_did_open(
            lsp.DidOpenTextDocumentParams(
                text_document=lsp.TextDocumentItem(uri=uri, language_id=language, version=1, text=text)
            )
        )
        return uri

    def type_text(self, name: str, text: str) -> None:
        """Replace the buffer's whole text, as typing in the editor would."""
        uri = self.uri(name)
        self.versions[uri] += 1
        self.client.text_document_did_change(
            lsp.DidChangeTextDocumentParams(
                text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
                content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )

    async def command(self, name: str, *arguments: Any) -> Any:
        return await self.client.workspace_execute_command_async(
            lsp.ExecuteCommandParams(command=name, arguments=list(arguments))
        )

    async def ask(self, prompt: str, token: str = "turn-1", **extra: Any) -> Any:
        return await self.command("elelem.ask", {"prompt": prompt, "progressToken": token, **extra})

    def events(self, token: str = "turn-1") -> list[dict[str, Any]]:
        return [event for value in self.progress[token] if value["kind"] == "report" for event in value["events"]]


def make_client(editor_holder: list[Editor], handlers: dict[str, Callable[..., Any]] | None = None) -> Callable[[], LanguageClient]:
    """A client recording progress and edits; ``handlers`` answer (or replace the default for) other methods."""
    handlers = handlers or {}

    def factory() -> LanguageClient:
        client = LanguageClient(converter_factory=default_converter)
        skipped = {lsp.PROGRESS, *handlers}
        register_lsp_features(client, {k: v for k, v in DEFAULT_CLIENT_FEATURES.items() if k not in skipped})
        for method, handler in handlers.items():
            client.feature(method)(handler)

        @client.feature(lsp.PROGRESS)
        def progress(params: lsp.ProgressParams) -> None:
            editor_holder[0].progress[params.token].append(as_plain(params.value))

        @client.feature(lsp.WORKSPACE_APPLY_EDIT)
        def apply_edit(params: lsp.ApplyWorkspaceEditParams) -> lsp.ApplyWorkspaceEditResult:
            editor = editor_holder[0]
            editor.edits.append(params)
            answer = editor.answer_edit(params)  # a yes or no; anything else is sent as it is
            return lsp.ApplyWorkspaceEditResult(applied=answer) if isinstance(answer, bool) else answer

        return client

    return factory


def as_plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: as_plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_plain(v) for v in value]
    return value


