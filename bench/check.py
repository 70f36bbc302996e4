"""What the check after a change adds to a step: through the real server, its `elelem/diagnostics`
answered by a stand-in editor that behaves as ours do (it waits until the changed file's
diagnostics have changed after the request's `since`, then for 200 ms of quiet, at most `waitMs`).

Each turn is one step that writes a file, then a reply (the scripted provider). Three servers:
the check off; on, with the editor's language server publishing `--publish-ms` after each edit
(diagnostics arrive); on, with nothing ever published (none come: the wait runs out at
`checkWaitMs`). What the check adds is the median turn with it less the median turn without.

    python bench/check.py [--turns 15] [--publish-ms 100] [--wait-ms 1500]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient

ROOT = Path(__file__).resolve().parents[1]
SCRIPTED = ROOT / "tests" / "plugins" / "scripted.py"
SETTLE_MS = 200  # what VS Code's and Neovim's clients wait for quiet
POLL_MS = 25


class StandInEditor:
    """A client of elelem-lsp that applies edits and has a language server publish after each."""

    def __init__(self, root: Path, settings: dict[str, Any], publish_ms: float | None) -> None:
        self.root, self.settings, self.publish_ms = root, settings, publish_ms
        self.client = LanguageClient("bench-check", "1")
        self.generation = 0
        self.changed: dict[str, tuple[int, float]] = {}
        self.timers: list[asyncio.TimerHandle] = []

        @self.client.feature(lsp.WORKSPACE_APPLY_EDIT)
        def apply_edit(params: lsp.ApplyWorkspaceEditParams) -> lsp.ApplyWorkspaceEditResult:
            for change in params.edit.document_changes or []:
                uri = getattr(change, "uri", None) or change.text_document.uri
                if self.publish_ms is not None:
                    self.timers.append(asyncio.get_running_loop().call_later(self.publish_ms / 1000, self.publish, uri))
            return lsp.ApplyWorkspaceEditResult(applied=True)

        @self.client.feature("elelem/diagnostics")
        async def diagnostics(params: Any) -> dict[str, Any]:
            uris = list(getattr(params, "uris", None) or [])
            wait_ms = getattr(params, "waitMs", 0) or 0
            since = getattr(params, "since", None)
            since = self.generation if since is None else since
            deadline = time.monotonic() + wait_ms / 1000
            while uris and time.monotonic() < deadline:
                seen = [self.changed.get(uri) for uri in uris]
                if all(s and s[0] > since for s in seen) and time.monotonic() - max(s[1] for s in seen) >= SETTLE_MS / 1000:  # type: ignore[index]
                    break
                await asyncio.sleep(POLL_MS / 1000)
            return {"items": [{"uri": uri, "diagnostics": []} for uri in uris], "generation": self.generation}

        @self.client.feature(lsp.PROGRESS)
        def progress(params: lsp.ProgressParams) -> None:
            pass

    def publish(self, uri: str) -> None:
        self.generation += 1
        self.changed[uri] = (self.generation, time.monotonic())

    async def start(self) -> None:
        await self.client.start_io(sys.executable, "-m", "elelem_lsp", "serve", cwd=str(self.root))
        capabilities = lsp.ClientCapabilities(
            workspace=lsp.WorkspaceClientCapabilities(apply_edit=True),
            experimental={"elelem": {"diagnostics": True}},
        )
        await self.client.initialize_async(
            lsp.InitializeParams(
                capabilities=capabilities,
                root_uri=self.root.as_uri(),
                workspace_folders=[lsp.WorkspaceFolder(uri=self.root.as_uri(), name="bench")],
                initialization_options={**self.settings, "client": "elelem-bench"},
            )
        )
        self.client.initialized(lsp.InitializedParams())

    async def turn(self, number: int) -> float:
        """One turn that writes app.py once; its milliseconds."""
        write = {"type": "doing", "id": "w", "name": "write", "arguments": {"path": "app.py", "content": f"x = {number}\n"}}
        (self.root / ".agents" / "script.json").write_text(json.dumps([[write]]))  # a new script starts again
        started = time.monotonic()
        result = await self.client.workspace_execute_command_async(
            lsp.ExecuteCommandParams(command="elelem.ask", arguments=[{"prompt": "write", "progressToken": f"t{number}"}])
        )
        elapsed = (time.monotonic() - started) * 1000
        error = result["error"] if isinstance(result, dict) else getattr(result, "error", None)
        assert not error, error
        return elapsed

    async def stop(self) -> None:
        for timer in self.timers:
            timer.cancel()
        await self.client.shutdown_async(None)
        self.client.exit(None)
        await asyncio.wait_for(self.client._server.wait(), 10)  # type: ignore[union-attr]
        await self.client.stop()


async def turns(settings: dict[str, Any], publish_ms: float | None, count: int) -> list[float]:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / ".agents" / "plugins").mkdir(parents=True)
        shutil.copy(SCRIPTED, root / ".agents" / "plugins" / SCRIPTED.name)
        editor = StandInEditor(root, {"provider": "scripted", "workspacePlugins": True, "history": False, **settings}, publish_ms)
        await editor.start()
        try:
            await editor.turn(0)  # the first turn loads the provider: not counted
            return [await editor.turn(number) for number in range(1, count + 1)]
        finally:
            await editor.stop()


def row(name: str, values: list[float], base: float | None = None) -> str:
    median = statistics.median(values)
    added = f"{median - base:+8.1f}" if base is not None else " " * 8
    return f"{name:<52} {median:8.1f} ({min(values):.1f}–{max(values):.1f}) {added}"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=15)
    parser.add_argument("--publish-ms", type=float, default=100)
    parser.add_argument("--wait-ms", type=int, default=1500)
    args = parser.parse_args()
    off = await turns({"checkAfterEdits": False}, args.publish_ms, args.turns)
    arriving = await turns({"checkWaitMs": args.wait_ms}, args.publish_ms, args.turns)
    silent = await turns({"checkWaitMs": args.wait_ms}, None, args.turns)
    base = statistics.median(off)
    print(f"{'turn with one write step, ms':<52} {'median':>8} (min–max)   added")
    print(row("check off", off))
    print(row(f"check on, diagnostics {args.publish_ms:g} ms after the edit", arriving, base))
    print(row(f"check on, none come (checkWaitMs {args.wait_ms})", silent, base))


if __name__ == "__main__":
    asyncio.run(main())
