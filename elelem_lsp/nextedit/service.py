"""The next-edit suggestions of one editor connection: the recent edits kept, one request at a time.

Bridges the LSP face (which feeds ``changed``/``closed`` from the document notifications and asks
``suggest`` for ``elelem/nextEdit``) to ``predictor``: a newer request for a document cancels the
older one at once (its model request closed with it) and the older is answered with nothing, as
completion does; every suggestion has an ``id`` the editor names when it is accepted.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .history import Edit, EditHistory, events_of
from .predictor import Ask, predict
from .zeta import RegionEdit


@dataclass(frozen=True)
class Suggestion:
    id: str
    edits: list[RegionEdit]


class NextEdits:
    def __init__(self, history: EditHistory | None = None) -> None:
        self.history = history or EditHistory()
        self._running: dict[str, asyncio.Task[list[RegionEdit] | None]] = {}
        self._ids = itertools.count(1)

    def changed(self, uri: str, path: str, before: Sequence[str], after: Sequence[str], lines: tuple[int, int] | None) -> None:
        self.history.changed(uri, path, before, after, lines)

    def closed(self, uri: str) -> None:
        self.history.forget(uri)
        running = self._running.pop(uri, None)
        if running is not None:
            running.cancel()

    async def suggest(
        self,
        uri: str,
        path: str,
        lines: list[str],
        line: int,
        character: int,
        ask: Ask,
        among: Callable[[str], bool] | None = None,
        kept: list[tuple[str, Edit]] | None = None,
    ) -> Suggestion | None:
        """The edits that follow the recent ones (``kept``, the history's snapshot when the request
        came, else now; of the documents whose URI ``among`` accepts, when given), or None
        (superseded by a newer request too)."""
        older = self._running.pop(uri, None)
        if older is not None:
            older.cancel()
        events = events_of(self.history.snapshot() if kept is None else kept, among)
        task = asyncio.ensure_future(predict(lines, path, line, character, events, ask))
        self._running[uri] = task
        try:
            edits = await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise  # this request itself was cancelled ($/cancelRequest)
            return None  # a newer request took its place
        finally:
            if self._running.get(uri) is task:
                del self._running[uri]
        return Suggestion(f"e-{next(self._ids)}", edits) if edits else None
