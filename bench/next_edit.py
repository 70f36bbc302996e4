"""Next edit through the real server against a fake Zeta model, and the same model asked directly.

Prints: request → edits (median and p95) through ``elelem/nextEdit``, against the fake server
asked the same prompt directly over HTTP and read to the region's end (the floor); and the memory
the kept edit history takes, in process over 10,000 changes (tracemalloc) and as the server's RSS
before and after as many ``didChange``; and on a document of ``--lines`` lines (50,000), what one
incremental keystroke costs the server for a plain client and for one with next edit on (the
recent edits kept), and a request there; and what reading long answers back costs. The fake
server (tests/completion/fim_server.py) runs in a process of its own and answers at once, so the
figures are the server's own cost.

    python bench/next_edit.py [--runs 100] [--changes 10000] [--lines 50000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import httpx
from completion import fake_server, figures, rss_mb  # bench/completion.py, beside this file
from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient

from elelem_lsp.nextedit.history import EditHistory
from elelem_lsp.nextedit.zeta import EDITABLE_END, EDITABLE_START, excerpt, prompt, region_edits, rewritten_region

SOURCE = "def total(values, factor):\n    result = 0\n    for value in values:\n        result += value * scale\n    return result * scale\n"
ANSWER = [f"```bench.py\n{EDITABLE_START}\n", SOURCE.replace("scale", "factor").rstrip("\n"), f"\n{EDITABLE_END}\n```"]


class Session:
    """A real server over stdio that announces next edit, one document open."""

    def __init__(self, folder: Path, url: str, *, announce: bool = True, text: str = SOURCE) -> None:
        self.folder, self.url, self.announce, self.text = folder, url, announce, text
        self.client = LanguageClient("bench", "1")
        self.uri = (folder / "bench.py").as_uri()
        self.version = 1

        @self.client.feature(lsp.WORKSPACE_CONFIGURATION)
        def configuration(params: lsp.ConfigurationParams) -> list[Any]:
            return [{"provider": "llamacpp", "nextEdit": {"api": "raw"}} for _ in params.items]

        @self.client.feature(lsp.WINDOW_LOG_MESSAGE)
        def logged(params: lsp.LogMessageParams) -> None:
            print(f"server: {params.message}", file=sys.stderr)

    async def start(self) -> None:
        env = {**os.environ, "LLAMACPP_BASE_URL": f"{self.url}/v1"}
        await self.client.start_io(sys.executable, "-m", "elelem_lsp", "serve", env=env, cwd=str(self.folder))
        capabilities = lsp.ClientCapabilities(
            workspace=lsp.WorkspaceClientCapabilities(configuration=True),
            experimental={"elelem": {"nextEdit": True}} if self.announce else None,
        )
        await self.client.initialize_async(
            lsp.InitializeParams(
                capabilities=capabilities,
                root_uri=self.folder.as_uri(),
                workspace_folders=[lsp.WorkspaceFolder(uri=self.folder.as_uri(), name="bench")],
            )
        )
        self.client.initialized(lsp.InitializedParams())
        self.client.text_document_did_open(
            lsp.DidOpenTextDocumentParams(
                text_document=lsp.TextDocumentItem(uri=self.uri, language_id="python", version=1, text=self.text)
            )
        )

    def type(self, line: int, character: int, text: str) -> None:
        self.version += 1
        at = lsp.Position(line=line, character=character)
        self.client.text_document_did_change(
            lsp.DidChangeTextDocumentParams(
                text_document=lsp.VersionedTextDocumentIdentifier(uri=self.uri, version=self.version),
                content_changes=[lsp.TextDocumentContentChangePartial(range=lsp.Range(start=at, end=at), text=text)],
            )
        )

    async def next_edit(self, line: int = 0, character: int = 24) -> tuple[float, Any]:
        started = time.perf_counter()
        result = await self.client.protocol.send_request_async(
            "elelem/nextEdit", {"textDocument": {"uri": self.uri}, "position": {"line": line, "character": character}}
        )
        return (time.perf_counter() - started) * 1000, result

    async def round_trip(self) -> None:
        """A cheap request: its answer comes after every change sent before it is handled."""
        nowhere = lsp.Range(start=lsp.Position(line=0, character=0), end=lsp.Position(line=0, character=0))
        await self.client.text_document_code_action_async(
            lsp.CodeActionParams(lsp.TextDocumentIdentifier(uri=self.uri), nowhere, lsp.CodeActionContext(diagnostics=[]))
        )

    async def stop(self) -> None:
        await self.client.shutdown_async(None)
        self.client.exit(None)
        await self.client.stop()


async def through_server(session: Session, runs: int) -> list[float]:
    samples = []
    for number in range(runs + 5):
        elapsed, result = await session.next_edit()
        assert result is not None and len(result.edits) == 2, result
        if number >= 5:  # the first few load the provider and warm the connection
            samples.append(elapsed)
    return samples


async def direct(url: str, runs: int) -> list[float]:
    lines = SOURCE.split("\n")
    text = prompt("", excerpt(lines, "bench.py", 0, 24))
    samples = []
    async with httpx.AsyncClient() as client:
        for number in range(runs + 5):
            body = {"model": "zeta", "prompt": text, "max_tokens": 1024, "temperature": 0, "stream": True}
            started = time.perf_counter()
            answer = ""
            async with client.stream("POST", f"{url}/v1/completions", json=body) as response:
                async for line in response.aiter_lines():
                    if line.startswith("data: {"):
                        answer += httpx.Response(200, content=line[6:]).json()["choices"][0]["text"]
                    if EDITABLE_END in answer:
                        break
            if number >= 5:
                samples.append((time.perf_counter() - started) * 1000)
    return samples


def history_memory(changes: int) -> tuple[float, int]:
    """The kept history's size after ``changes`` single-line changes all over 100 documents."""
    lines = [f"line {n} = {n}\n" for n in range(200)]
    tracemalloc.start()
    history = EditHistory()
    for number in range(changes):
        uri, line = f"file:///doc{number % 100}.py", (number * 7) % 200
        after = list(lines)
        after[line] = f"line {line} = {number}\n"
        history.changed(uri, f"doc{number % 100}.py", lines, after, (line, line))
    size, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return size / 1024, len(history.recent())


async def big_document(url: str, lines: int, keystrokes: int = 200) -> None:
    """Per keystroke in the middle of a ``lines``-line document: a plain client, then one with next edit on."""
    text = "".join(f"def f{n}(scale):\n    return scale * {n}\n" for n in range(lines // 2))
    middle = lines // 2
    for announce in (False, True):
        with tempfile.TemporaryDirectory() as scratch:
            session = Session(Path(scratch), url, announce=announce, text=text)
            await session.start()
            try:
                await session.round_trip()
                started = time.perf_counter()
                for _ in range(keystrokes):
                    session.type(middle, 9, "x")
                await session.round_trip()
                per = (time.perf_counter() - started) * 1000 / keystrokes
                said = f"{lines:,}-line document, one keystroke: {per:.2f} ms ({'next edit on' if announce else 'plain client'})"
                if announce:
                    samples = [(await session.next_edit(middle, 9))[0] for _ in range(12)][2:]
                    said += f"; elelem/nextEdit there: {figures(samples)}"
                print(said)
            finally:
                await session.stop()


def reading_answers(lines: int = 120) -> None:
    """What reading an answer back costs the server, for a region of ``lines`` long lines of code:
    the region rewritten without markers, prose instead, and a 20,000-word line rewritten here and there."""
    region = "\n".join(f"    value_{n} = compute(self.items[{n}], factor=factor, name='v{n}')  # step {n}" for n in range(lines))
    prose = "I would suggest renaming the values and computing them in a loop instead. " * (len(region) // 75)
    minified = " ".join(f"w{n}" for n in range(20_000))
    cases = {
        f"{len(region) // 1024} KB region rewritten, no markers": lambda: rewritten_region(
            region.replace("factor", "scale"), region
        ),
        f"{len(prose) // 1024} KB of prose instead": lambda: rewritten_region(prose, region),
        "20,000-word line, every 100th word changed": lambda: region_edits(
            minified, " ".join(f"w{n}" if n % 100 else f"q{n}" for n in range(20_000)), 0
        ),
    }
    for name, read in cases.items():
        started = time.perf_counter()
        read()
        print(f"reading an answer, {name}: {(time.perf_counter() - started) * 1000:.1f} ms")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--changes", type=int, default=10000)
    parser.add_argument("--lines", type=int, default=50000)
    options = parser.parse_args()
    process, url = fake_server(ANSWER)
    try:
        with tempfile.TemporaryDirectory() as scratch:
            session = Session(Path(scratch), url)
            await session.start()
            try:
                ours = await through_server(session, options.runs)
                floor = await direct(url, options.runs)
                print(
                    f"request → edits:  ours {figures(ours)}   direct {figures(floor)}   "
                    f"median over direct {statistics.median(ours) - statistics.median(floor):+.2f} ms"
                )
                pid = session.client._server.pid  # type: ignore[union-attr]
                before = rss_mb(pid)
                for number in range(options.changes):
                    session.type(2 + number % 3, 0, " " if number % 2 else "")
                await session.next_edit()  # every change handled before this answer
                print(f"server RSS over {options.changes:,} changes: {before:.1f} MB before, {rss_mb(pid):.1f} MB after")
            finally:
                await session.stop()
        await big_document(url, options.lines)
    finally:
        process.kill()
    reading_answers()
    kept_kib, edits = history_memory(options.changes)
    print(f"edit history after {options.changes:,} changes in 100 documents: {kept_kib:.0f} KiB, {edits} edits kept")


if __name__ == "__main__":
    asyncio.run(main())
