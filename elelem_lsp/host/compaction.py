"""Compaction: a folder's older turns summarised by its provider into one message that replaces them.

Asked for (``elelem.compact``, ACP's ``/compact``) or, with ``compaction: summarize``, ahead of
a turn whose older turns would not fit the budget. The summary is stored as a ``compaction``
entry (``docs/conversations.md``); a failed automatic compaction is said once and tried again
only after the conversation has grown by ``RETRY_COMPACTION_AFTER`` turns.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..agent.budget import split_turns
from ..agent.events import Compaction as CompactionReport
from ..agent.events import compacted_event, compaction
from ..agent.history import is_summary, summary_message
from ..agent.redaction import redact_error
from ..agent.session import Session
from .conversations import now
from .frontend import Face
from .settings import Settings

log = logging.getLogger(__name__)
KEEP_RECENT = 2  # turns a compaction leaves as they were
RETRY_COMPACTION_AFTER = 5  # turns a failed automatic compaction waits before it is tried again


class Compaction:
    """One folder's compaction, and the failure it remembers until it is tried again."""

    def __init__(self, root: Path, face: Face, store_entry: Callable[[dict[str, Any]], None]) -> None:
        self.root, self.face, self.store_entry = root, face, store_entry
        # the conversation, and how many turns it had, when automatic compaction failed
        self.failed: tuple[str | None, int] | None = None

    async def before_turn(
        self, session: Session, settings: Settings, conversation: str | None, prompt: str, add: Callable[[dict[str, Any]], None]
    ) -> None:
        """Compact the older turns when they would not fit with ``prompt`` and the folder asks to."""
        if settings.compaction != "summarize" or not self._due(session, conversation):
            return
        try:
            crowded = (await session.estimate(prompt)).left_out
        except Exception:  # a tool source or counter that fails here fails the turn's own fetch, in words, not the ask
            log.exception("could not count the conversation of %s before the turn", self.root)
            return
        if crowded:
            await self._for_turn(session, conversation, add)

    def _due(self, session: Session, conversation: str | None) -> bool:
        """Whether to try automatic compaction: not again until the conversation that it failed
        for has grown by ``RETRY_COMPACTION_AFTER`` turns (each try is a request to the provider)."""
        failed = self.failed
        if failed is None or failed[0] != conversation:
            return True
        return len(split_turns(session.history)) >= failed[1] + RETRY_COMPACTION_AFTER

    async def _for_turn(self, session: Session, conversation: str | None, add: Callable[[dict[str, Any]], None]) -> None:
        """Compact ahead of a turn, telling its progress; a failure is said once, and the turn goes
        on with the oldest turns left out instead."""
        try:
            report = await self.compact(session)
        except Exception as raised:  # the provider's own failure, whatever it raised
            error = redact_error(str(raised), session.secrets)
            log.warning("could not compact the conversation of %s: %s", self.root, error)
            failed_before = (self.failed or (None, 0))[0] == conversation
            self.failed = (conversation, len(split_turns(session.history)))
            if not failed_before:
                self.face.show_message(
                    "warning",
                    f"elelem: could not compact the conversation ({error}); older turns are left out, "
                    f"and compacting is tried again after {RETRY_COMPACTION_AFTER} more turns",
                )
            return
        if report["turns"]:
            add(dict(compacted_event(report)))

    async def compact(self, session: Session) -> CompactionReport:
        """Replace all turns but the last ``KEEP_RECENT`` (and any summary before them) with a summary."""
        before = (await session.estimate()).tokens
        turns = split_turns(session.history)
        older, recent = turns[:-KEEP_RECENT], turns[-KEEP_RECENT:]
        compacted = sum(not is_summary(turn) for turn in older)
        if not compacted:
            return compaction(0, before, before)
        summary = await session.summarise([message for turn in older for message in turn])
        self.failed = None
        self.store_entry({"kind": "compaction", "turns": compacted, "summary": summary, "at": now()})
        session.history = [summary_message(summary), *(message for turn in recent for message in turn)]
        return compaction(compacted, before, (await session.estimate()).tokens)
