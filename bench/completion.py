"""Inline completion through the real server against a fake FIM server, and the same server asked directly.

Prints: request → item (median and p95) for a single line and for a block, against the fake
server asked directly over HTTP (the floor); model requests per burst of 20 keystrokes 30 ms
apart (didChange and inlineCompletion each, as VS Code sends them); the typing-along answer time;
and the server's memory over many requests. The fake server (tests/completion/fim_server.py)
runs in a process of its own and answers at once, so the figures are the server's own cost.
Goals: ≤ 10 ms median over direct; ≤ 2 model requests per burst; typing along < 2 ms.

    python bench/completion.py [--runs 200] [--memory 10000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient

ROOT = Path(__file__).resolve().parent.parent
SINGLE = ["x", " + ", "1", "\n", "never = 2"]
BLOCK = ["\n    total = 0\n", "    for x in xs:\n", "        total += x\n", "    return total\n", "\ndef other():\n    pass\n"]


def figures(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return f"median {statistics.median(ordered):7.2f} ms  p95 {p95:7.2f} ms"


def fake_server(answer: list[str]) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "tests/completion/fim_server.py"), json.dumps(answer)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    return process, process.stdout.readline().strip()


async def direct(url: str, runs: int, end: str) -> list[float]:
    """The fake server asked as the route asks it, read until the answer holds ``end`` (where
    the suggestion is complete: the line's end, the next block): the floor."""
    samples = []
    async with httpx.AsyncClient() as client:
        for number in range(runs + 5):
            body = {"model": "coder", "prompt": f"value_{number} = ", "suffix": "\n", "max_tokens": 128, "stream": True}
            started = time.perf_counter()
            text = ""
            async with client.stream("POST", f"{url}/v1/completions", json=body) as response:
                async for line in response.aiter_lines():
                    if line.startswith("data: {"):
                        text += json.loads(line[6:])["choices"][0]["text"]
                    if end in text:
                        break
            if number >= 5:  # the first few warm the connection
                samples.append((time.perf_counter() - started) * 1000)
    return samples


class Session:
    """A real server over stdio, one document open, its settings aiming the llamacpp preset at the fake server."""

    def __init__(self, folder: Path, url: str) -> None:
        self.folder, self.url = folder, url
        self.client = LanguageClient("bench", "1")
        self.version = 1
        self.uri = (folder / "bench.py").as_uri()

        @self.client.feature(lsp.WORKSPACE_CONFIGURATION)
        def configuration(params: lsp.ConfigurationParams) -> list[Any]:
            return [{"provider": "llamacpp", "completion": {"api": "completions"}} for _ in params.items]

        @self.client.feature(lsp.WINDOW_LOG_MESSAGE)
        def logged(params: lsp.LogMessageParams) -> None:
            print(f"server: {params.message}", file=sys.stderr)

        @self.client.feature(lsp.WINDOW_SHOW_MESSAGE)
        def shown(params: lsp.ShowMessageParams) -> None:
            print(f"server: {params.message}", file=sys.stderr)

        @self.client.feature(lsp.CLIENT_REGISTER_CAPABILITY)
        def register(params: Any) -> None:
            return None

    async def start(self) -> None:
        env = {**os.environ, "LLAMACPP_BASE_URL": f"{self.url}/v1"}
        await self.client.start_io(sys.executable, "-m", "elelem_lsp", "serve", env=env, cwd=str(self.folder))
        await self.client.initialize_async(
            lsp.InitializeParams(
                capabilities=lsp.ClientCapabilities(workspace=lsp.WorkspaceClientCapabilities(configuration=True)),
                root_uri=self.folder.as_uri(),
                workspace_folders=[lsp.WorkspaceFolder(uri=self.folder.as_uri(), name="bench")],
            )
        )
        self.client.initialized(lsp.InitializedParams())
        self.client.text_document_did_open(
            lsp.DidOpenTextDocumentParams(
                text_document=lsp.TextDocumentItem(uri=self.uri, language_id="python", version=1, text="")
            )
        )

    @property
    def pid(self) -> int:
        return self.client._server.pid  # type: ignore[union-attr]

    def type(self, text: str) -> None:
        self.version += 1
        self.client.text_document_did_change(
            lsp.DidChangeTextDocumentParams(
                text_document=lsp.VersionedTextDocumentIdentifier(uri=self.uri, version=self.version),
                content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )

    async def complete(self, line: int, character: int, *, invoked: bool = False) -> tuple[float, list[str]]:
        kind = lsp.InlineCompletionTriggerKind.Invoked if invoked else lsp.InlineCompletionTriggerKind.Automatic
        params = lsp.InlineCompletionParams(
            text_document=lsp.TextDocumentIdentifier(uri=self.uri),
            position=lsp.Position(line=line, character=character),
            context=lsp.InlineCompletionContext(trigger_kind=kind),
        )
        started = time.perf_counter()
        result = await self.client.text_document_inline_completion_async(params)
        elapsed = (time.perf_counter() - started) * 1000
        items = result.items if isinstance(result, lsp.InlineCompletionList) else result or []
        return elapsed, [item.insert_text if isinstance(item.insert_text, str) else item.insert_text.value for item in items]

    async def stop(self) -> None:
        await self.client.shutdown_async(None)
        self.client.exit(None)
        await self.client.stop()


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def stats(url: str) -> dict[str, int]:
    return httpx.get(f"{url}/stats").json()


async def through_server(session: Session, runs: int, template: str) -> list[float]:
    """Each request at the end of a new text (no answer to reuse), after a pause."""
    samples = []
    for number in range(runs + 5):
        text = template.format(number=number)
        session.type(text)
        elapsed, items = await session.complete(text.count("\n"), len(text.split("\n")[-1]))
        assert items, f"no suggestion for {text!r}"
        await asyncio.sleep(0.2)  # a pause: the next request is not within a burst
        if number >= 5:
            samples.append(elapsed)
    return samples


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--memory", type=int, default=10000)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        for name, answer, template, end in (
            ("single line", SINGLE, "value_{number} = ", "\n"),
            ("block", BLOCK, "def total_{number}(xs):", "\ndef"),
        ):
            process, url = fake_server(answer)
            session = Session(folder, url)
            await session.start()
            try:
                ours = await through_server(session, options.runs, template)
                floor = await direct(url, options.runs, end)
                print(f"{name:12} request → item:  ours {figures(ours)}   direct {figures(floor)}   "
                      f"median over direct {statistics.median(ours) - statistics.median(floor):+.2f} ms")  # fmt: skip
                if name == "single line":
                    await burst(session, url)
                    await typing_along(session, options.runs)
                    await memory(session, options.memory)
            finally:
                await session.stop()
                process.kill()


async def burst(session: Session, url: str) -> None:
    counts = []
    for attempt in range(5):
        before = stats(url)["requests"]
        typed, requests = f"burst_{attempt} = ", []
        for keystroke in range(20):
            typed += "ab"[keystroke % 2]
            session.type(typed)
            requests.append(asyncio.ensure_future(session.complete(0, len(typed))))
            await asyncio.sleep(0.03)
        answers = await asyncio.gather(*requests)
        assert len(answers) == 20
        counts.append(stats(url)["requests"] - before)
        await asyncio.sleep(0.3)
    print(f"burst of 20 keystrokes 30 ms apart: model requests {counts} (all 20 requests answered each time)")


async def typing_along(session: Session, runs: int) -> None:
    samples = []
    for number in range(runs):
        text = f"along_{number} = "
        session.type(text)
        _, [shown] = await session.complete(0, len(text))
        session.type(text + shown[0])
        elapsed, [rest] = await session.complete(0, len(text) + 1)
        assert rest == shown[1:], (rest, shown)
        samples.append(elapsed)
        await asyncio.sleep(0.15)
    print(f"typing along a shown suggestion: {figures(samples)} (no model request)")


async def memory(session: Session, count: int) -> None:
    """The server's RSS as requests go by (each at a new text, so each asks the model): it should level off."""
    marks = {count // 10, count // 2, count}
    seen = [f"{rss_mb(session.pid):.1f} MB before"]
    for number in range(1, count + 1):
        text = f"memory_{number} = "
        session.type(text)
        await session.complete(0, len(text), invoked=True)  # asked for: no wait for more keystrokes
        if number in marks:
            seen.append(f"{rss_mb(session.pid):.1f} MB after {number:,}")
    print(f"server RSS over {count:,} requests: {', '.join(seen)}")


if __name__ == "__main__":
    asyncio.run(main())
