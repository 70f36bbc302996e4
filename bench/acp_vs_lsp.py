"""The same 2000-token turn through ``elelem-lsp acp`` and through the LSP server, interleaved.

One process per face, started side by side; then turns alternate between them (LSP, ACP,
LSP, ...). A plugin provider emits 2000 one-word tokens as fast as it can (yielding to the event
loop after each, as a streamed response does), so the figures are the faces' own cost: prompt -> first reply chunk at the client, and prompt -> the answer
(every chunk delivered). The LSP side is the terminal client's LSP code (TerminalClient),
the ACP side the ``agent-client-protocol`` package's client connection. Prints the median
(min-max) of each and the ratio ACP / LSP.

    python bench/acp_vs_lsp.py [--turns 10] [--tokens 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.schema import ClientCapabilities, FileSystemCapabilities

from elelem_lsp.client import TerminalClient
from elelem_lsp.client.terminal import Terminal

PLUGIN = '''
import asyncio, os
import elelem_lsp

TOKENS = int(os.environ["BENCH_TOKENS"])


class Tokens:
    async def fetch(self, messages, tools, emit):
        for _ in range(TOKENS):
            emit({"type": "saying", "text": "word "})
            await asyncio.sleep(0)  # as a streamed HTTP body yields between tokens


elelem_lsp.configure(lambda config: config.provider("tokens", lambda **_: Tokens()))
'''


class Watch:
    """When the first reply text and the last of it arrived, for one turn."""

    def __init__(self, tokens: int) -> None:
        self.tokens, self.words, self.first = tokens, 0, 0.0
        self.done = asyncio.Event()

    def text(self, text: str) -> None:
        if not self.first:
            self.first = time.perf_counter()
        self.words += text.count(" ")
        if self.words >= self.tokens:
            self.done.set()


class BenchClient:
    """The ACP client side: only session updates matter here."""

    def __init__(self) -> None:
        self.watch: Watch | None = None

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        if update.session_update == "agent_message_chunk" and self.watch is not None:
            self.watch.text(update.content.text)

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the bench turn asks for nothing")


async def lsp_turn(client: TerminalClient, tokens: int) -> tuple[float, float]:
    watch = Watch(tokens)

    def sink(value: dict[str, Any]) -> None:
        for event in value.get("events", []) if value.get("kind") == "report" else []:
            if event["type"] == "saying":
                watch.text(event["text"])

    started = time.perf_counter()
    await client.ask("go", sink)
    answered = time.perf_counter()
    assert watch.words == tokens, f"LSP delivered {watch.words} of {tokens} tokens"
    return (watch.first - started) * 1000, (answered - started) * 1000


async def acp_turn(conn: Any, session_id: str, client: BenchClient, tokens: int) -> tuple[float, float]:
    client.watch = watch = Watch(tokens)
    started = time.perf_counter()
    await conn.prompt(session_id=session_id, prompt=[text_block("go")])
    answered = time.perf_counter()
    assert watch.words == tokens, f"ACP delivered {watch.words} of {tokens} tokens"
    return (watch.first - started) * 1000, (answered - started) * 1000


def line(name: str, lsp: list[float], acp: list[float]) -> str:
    def shown(values: list[float]) -> str:
        return f"{statistics.median(values):8.1f} ({min(values):.1f}–{max(values):.1f})"

    ratio = statistics.median(acp) / statistics.median(lsp)
    return f"{name:32} {shown(lsp):>26} {shown(acp):>26} {ratio:6.2f}"


async def measure(root: Path, turns: int, tokens: int) -> None:
    lsp = TerminalClient(root, Terminal(interactive=False), options={"provider": "tokens", "workspacePlugins": True})
    acp_client = BenchClient()
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with open(os.devnull, "wb") as quiet:
        async with spawn_agent_process(
            acp_client, sys.executable, "-m", "elelem_lsp", "acp", "--trust", cwd=root, env=env,
            transport_kwargs={"stderr": quiet},
        ) as (conn, _process):
            await asyncio.gather(lsp.start(), conn.initialize(
                protocol_version=PROTOCOL_VERSION,
                client_capabilities=ClientCapabilities(fs=FileSystemCapabilities(), terminal=False),
            ))
            session = await conn.new_session(cwd=str(root), mcp_servers=[])
            figures: dict[str, list[float]] = {k: [] for k in ("lsp first", "lsp answer", "acp first", "acp answer")}
            try:
                for _ in range(turns):
                    for face in ("lsp", "acp"):
                        first, answer = (
                            await lsp_turn(lsp, tokens) if face == "lsp"
                            else await acp_turn(conn, session.session_id, acp_client, tokens)
                        )
                        figures[f"{face} first"].append(first)
                        figures[f"{face} answer"].append(answer)
            finally:
                await lsp.stop()
    print(f"{'figure (ms)':32} {'LSP: median (min–max)':>26} {'ACP: median (min–max)':>26}  ratio")
    print(line("prompt → first chunk", figures["lsp first"], figures["acp first"]))
    print(line(f"prompt → answer ({tokens} tokens)", figures["lsp answer"], figures["acp answer"]))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=10, help="turns per face, alternating (default 10)")
    parser.add_argument("--tokens", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "project"
        (root / ".agents" / "plugins").mkdir(parents=True)
        (root / ".agents" / "plugins" / "tokens.py").write_text(PLUGIN)
        # an empty HOME: neither your settings file nor your stored conversations are touched
        os.environ.update(BENCH_TOKENS=str(args.tokens), HOME=folder)
        settings = Path(folder) / ".config" / "elelem-lsp" / "settings.json"
        settings.parent.mkdir(parents=True)
        settings.write_text('{"provider": "tokens", "history": false}')
        asyncio.run(measure(root, args.turns, args.tokens))


if __name__ == "__main__":
    main()
