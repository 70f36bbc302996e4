"""ProgressStream: agent events -> coalesced ``$/progress`` values.

Each report carries ``events``, the exact events since the previous report with
adjacent text of one type merged, and ``message``, a short rolling tail of the
reply for status lines. Reports go out about every 50 ms and at every tool
call; nothing is ever dropped before ``end``, and nothing is sent after it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from ..agent.messages import TEXT_EVENTS
from ..host.frontend import TEXT_BATCH_SECONDS

Send = Callable[[dict[str, Any]], None]
TAIL = 80


class ProgressStream:
    def __init__(self, send: Send, *, interval: float = TEXT_BATCH_SECONDS) -> None:
        self.send = send
        self.interval = interval
        self.pending: list[dict[str, Any]] = []
        self.tail = ""
        self.timer: asyncio.TimerHandle | None = None
        self.last_flush = float("-inf")
        self.ended = False

    def begin(self, title: str, message: str) -> None:
        self.send({"kind": "begin", "title": title, "cancellable": True, "message": message[:TAIL]})

    def add(self, event: dict[str, Any]) -> None:
        """Take one agent event; send now if it is a tool event, else soon."""
        if self.ended:  # the client has been told the turn is over
            return
        kind = event["type"]
        if kind in TEXT_EVENTS:
            last = self.pending[-1] if self.pending else None
            if last is not None and last["type"] == kind:
                last["parts"].append(event["text"])  # joined at flush: no quadratic concatenation
            else:
                self.pending.append({"type": kind, "parts": [event["text"]]})
            if kind == "saying":
                self.tail = (self.tail + event["text"])[-TAIL:]
            if self.timer is None:
                # The first text after a quiet spell goes out at once (the reader sees the
                # reply start without delay); the rest is coalesced for ``interval``.
                loop = asyncio.get_running_loop()
                wait = self.last_flush + self.interval - loop.time()
                if wait <= 0:
                    self.flush()
                else:
                    self.timer = loop.call_later(wait, self.flush)
        else:
            self.pending.append(event)
            if kind == "doing":
                self.tail = ""
            self.flush()

    def flush(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.pending:
            self.last_flush = asyncio.get_running_loop().time()
            events = [{"type": e["type"], "text": "".join(e["parts"])} if "parts" in e else e for e in self.pending]
            self.pending = []
            self.send({"kind": "report", "message": self.tail.strip() or "working", "events": events})

    def end(self, message: str) -> None:
        self.flush()
        self.ended = True
        self.send({"kind": "end", "message": message})
