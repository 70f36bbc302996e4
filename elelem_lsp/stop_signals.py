"""Ending on SIGTERM or SIGHUP the way an orderly shutdown ends: an editor that gives up waiting
for its server (VS Code after its shutdown timeout, Neovim's force stop) or a terminal that closes
sends one. What the server started does not get it (MCP servers and ``execute`` commands run in
sessions of their own), so the server stops them itself before it goes."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import Awaitable
from typing import Any

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class StopSignals:
    """``await stop.serve(main)`` inside the event loop, ``stop.end_process()`` once it has closed."""

    def __init__(self) -> None:
        self.received: signal.Signals | None = None

    async def serve(self, main: Awaitable[Any]) -> None:
        """Await ``main`` until it ends or a stop signal cancels it; then the caller's cleanup runs.

        The handlers stay until the loop closes: the signal sent again does not cut that cleanup short."""
        task = asyncio.ensure_future(main)
        loop = asyncio.get_running_loop()
        for signum in STOP_SIGNALS:
            loop.add_signal_handler(signum, self._stop, task, signum)
        try:
            await task
        except asyncio.CancelledError:
            if self.received is None:
                raise

    def _stop(self, task: asyncio.Future[Any], signum: signal.Signals) -> None:
        self.received = self.received or signum
        task.cancel()

    def end_process(self) -> None:
        """After a stop signal: end the process by it, as it would have ended without a handler
        (a shell reports 128 + the signal's number). Not an ordinary exit, which would wait for the
        thread still reading a stdin that nobody closed."""
        if self.received is None:
            return
        sys.stderr.flush()
        signal.signal(self.received, signal.SIG_DFL)
        os.kill(os.getpid(), self.received)
