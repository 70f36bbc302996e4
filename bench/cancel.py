"""How fast a turn stops: time from cancel sent to the progress `end` received, per route.

Each route cancels 50 turns of a provider that streams a word and then waits;
prints the median and the worst. Routes: `$/cancelRequest` on the command,
`window/workDoneProgress/cancel` on its token, and the `elelem.cancel` command.

    python bench/cancel.py [--turns 50]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

from lsprotocol import types as lsp

from elelem_lsp.client import TerminalClient
from elelem_lsp.client.terminal import Terminal

PLUGIN = '''
import asyncio
import elelem_lsp


class Waiting:
    async def fetch(self, messages, tools, emit):
        emit({"type": "saying", "text": "working "})
        await asyncio.sleep(3600)


elelem_lsp.configure(lambda config: config.provider("waiting", lambda **_: Waiting()))
'''


async def one_turn(client: TerminalClient, route: str) -> float:
    started, ended = asyncio.Event(), asyncio.Event()
    token: list[str] = []
    sent_at = 0.0
    ended_at = 0.0

    def sink(value: dict) -> None:
        nonlocal ended_at
        if value["kind"] == "report":
            started.set()
        elif value["kind"] == "end":
            ended_at = time.perf_counter()
            ended.set()

    def remember_token(value: dict) -> None:
        sink(value)

    turn = asyncio.create_task(client.ask("wait", remember_token))
    await started.wait()
    token.append(next(iter(client.sinks)))
    sent_at = time.perf_counter()
    if route == "$/cancelRequest":
        client.cancel()
    elif route == "workDoneProgress/cancel":
        client.client.protocol.notify(
            lsp.WINDOW_WORK_DONE_PROGRESS_CANCEL, lsp.WorkDoneProgressCancelParams(token=token[0])
        )
    else:
        await client.command("elelem.cancel", {})
    await ended.wait()
    result = await turn
    assert result["cancelled"], result
    return (ended_at - sent_at) * 1000


async def measure(root: Path, turns: int) -> None:
    client = TerminalClient(root, Terminal(interactive=False), options={"provider": "waiting", "workspacePlugins": True})
    await client.start()
    try:
        for route in ("$/cancelRequest", "workDoneProgress/cancel", "elelem.cancel"):
            times = [await one_turn(client, route) for _ in range(turns)]
            print(f"{route:24} median {statistics.median(times):6.2f} ms   worst {max(times):6.2f} ms   ({turns} turns)")
    finally:
        await client.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / ".agents/plugins").mkdir(parents=True)
        (root / ".agents/plugins/waiting.py").write_text(PLUGIN)
        os.environ["HOME"] = folder
        asyncio.run(measure(root, args.turns))


if __name__ == "__main__":
    main()
