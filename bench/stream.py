"""How fast saying events reach a client: 100,000 one-word events through the real server.

A plugin provider emits the words as fast as it can; the terminal client's LSP
code (TerminalClient) receives the $/progress reports. Prints events per second
delivered, the number of $/progress notifications, and the delay from the first
emit to the first report received.

    python bench/stream.py [--events 100000] [--mode async|thread]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

from elelem_lsp.client import TerminalClient
from elelem_lsp.client.terminal import Terminal

PLUGIN = '''
import os, time
import elelem_lsp

COUNT = int(os.environ["BENCH_EVENTS"])


class Flood:
    def run(self, emit):
        emit({"type": "saying", "text": f"{time.time()!r} "})
        for _ in range(COUNT - 1):
            emit({"type": "saying", "text": "word "})


class AsyncFlood(Flood):
    async def fetch(self, messages, tools, emit):
        self.run(emit)


class ThreadFlood(Flood):
    def fetch(self, messages, tools, emit):
        self.run(emit)


kind = AsyncFlood if os.environ["BENCH_MODE"] == "async" else ThreadFlood
elelem_lsp.configure(lambda config: config.provider("flood", lambda **_: kind()))
'''


async def measure(root: Path, count: int) -> dict[str, float]:
    client = TerminalClient(root, Terminal(interactive=False), options={"provider": "flood", "workspacePlugins": True})
    await client.start()
    words = 0
    reports = 0
    first_report_at = first_emit_at = 0.0

    def sink(value: dict) -> None:
        nonlocal words, reports, first_report_at, first_emit_at
        if value.get("kind") != "report":
            return
        reports += 1
        for event in value["events"]:
            if event["type"] == "saying":
                text = event["text"]
                if not first_report_at:
                    first_report_at = time.time()
                    first_emit_at = float(text.split(" ", 1)[0])
                words += text.count(" ")

    try:
        started = time.perf_counter()
        await client.ask("flood", sink)
        elapsed = time.perf_counter() - started
    finally:
        await client.stop()
    assert words == count, f"delivered {words} of {count} events"
    return {"rate": count / elapsed, "reports": reports, "first": (first_report_at - first_emit_at) * 1000, "elapsed": elapsed}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--mode", choices=["async", "thread"], default=None, help="default: both")
    args = parser.parse_args()
    for mode in [args.mode] if args.mode else ["async", "thread"]:
        with tempfile.TemporaryDirectory() as folder:
            root = Path(folder)
            (root / ".agents/plugins").mkdir(parents=True)
            (root / ".agents/plugins/flood.py").write_text(PLUGIN)
            os.environ.update(BENCH_EVENTS=str(args.events), BENCH_MODE=mode, HOME=folder)
            figures = asyncio.run(measure(root, args.events))
        print(
            f"{mode:6} fetch: {args.events} events in {figures['elapsed']:.2f} s = {figures['rate']:,.0f} events/s; "
            f"{figures['reports']} $/progress reports; first report {figures['first']:.1f} ms after the first emit"
        )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
