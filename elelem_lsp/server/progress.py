"""ProgressStream: agent events -> coalesced ``$/progress`` values.

Each report carries ``events``, the exact events since the previous report with
adjacent text of one type merged (``host.batching``), and ``message``, a short rolling
tail of the reply for status lines. Text goes out about every 50 ms, anything else at
once; nothing is ever dropped before ``end``, and nothing is sent after it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from ..agent.events import TEXT_EVENTS
from ..host.batching import TEXT_BATCH_SECONDS, Text, TextBatch

Send = Callable[[dict[str, Any]], None]
TAIL = 80


class ProgressStream:
    def __init__(self, send: Send, *, interval: float = TEXT_BATCH_SECONDS) -> None:
        self.send = send
        self.batch = TextBatch(interval)
        self.tail = ""
        self.timer: asyncio.TimerHandle | None = None
        self.ended = False

    def begin(self, title: str, message: str) -> None:
        self.send({"kind": "begin", "title": title, "cancellable": True, "message": message[:TAIL]})

    def add(self, event: dict[str, Any]) -> None:
        """Take one agent event; send now if it is not text, else soon."""
        if self.ended:  # the client has been told the turn is over
            return
        kind = event["type"]
        if kind not in TEXT_EVENTS:
            self.batch.add(event)
            if kind == "doing":
                self.tail = ""
            self.flush()
            return
        self.batch.add_text(kind, event["text"])
        if kind == "saying":
            self.tail = (self.tail + event["text"])[-TAIL:]
        if self.timer is None:
            loop = asyncio.get_running_loop()
            wait = self.batch.text_wait(loop.time())
            if wait <= 0:
                self.flush()
            else:
                self.timer = loop.call_later(wait, self.flush)

    def flush(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.batch:
            taken = self.batch.take_all(asyncio.get_running_loop().time())
            events = [{"type": e.kind, "text": e.text} if isinstance(e, Text) else e for e in taken]
            self.send({"kind": "report", "message": self.tail.strip() or "working", "events": events})

    def end(self, message: str) -> None:
        self.flush()
        self.ended = True
        self.send({"kind": "end", "message": message})
