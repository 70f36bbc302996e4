"""One turn played: its events on their way to the face, and its answer, checkpoint and stored entry.

Bridges a running ``Session.turn`` to what the folder agent (``folder_agent``) gives back and
keeps of it: each event sent to the face's progress (each fetch's ``usage`` summed instead, the
model's plan kept and sent on as a ``plan`` event), the turn's result once its task is done or
cancelled, the checkpoint of the files it changed (``turn_checkpoints``), its answer
(``turn_result``, with the footer a client ends it with), the entry stored with its tokens and
cost (``usage``), and a plain client shown the turn it cannot see (``transcript``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..agent.events import plan_event
from ..agent.session import Session, TurnResult
from ..agent.wording import turn_footer
from ..providers.prices import PerMillion
from .conversations import Asked, ToolLog, now, turn_entry
from .current_conversation import CurrentConversation
from .frontend import Face, ProgressSink
from .transcript import TurnRecord, preview, write_transcript
from .turn_checkpoints import TurnCheckpoint, TurnCheckpoints
from .usage import TurnUsage, usage_event

log = logging.getLogger(__name__)


@dataclass
class PlayedTurn:
    """A turn as it plays: its events passed to the face's ``progress`` and to ``observe``, the
    tools it called, its usage and plan kept for the entry ``end`` stores in ``current``."""

    progress: ProgressSink
    observe: Callable[[dict[str, Any]], None]
    current: CurrentConversation
    started: str = field(default_factory=now)
    tools: ToolLog = field(default_factory=ToolLog)
    usage: TurnUsage = field(default_factory=TurnUsage)
    planned: bool = False

    def add(self, event: dict[str, Any]) -> None:
        if event["type"] == "usage":  # each fetch's: the turn's sum is said as it ends
            self.usage.add(event)
            return
        self.progress.add(event)
        self.observe(event)
        self.tools.add(event)
        if event["type"] == "result" and "plan" in event:
            self.current.plan, self.planned = event["plan"], True
            self.add(dict(plan_event(event["plan"])))

    async def end(
        self,
        asked: Asked,
        answer: dict[str, Any],
        began: bool,
        session: Session,
        prices: Mapping[str, PerMillion],
        kept: dict[str, Any] | None,
    ) -> None:
        """The turn's usage counted and, when it ``began``, its entry stored and its ``usage`` said;
        then its progress ended."""
        current = self.current
        current.last_turn = self.usage.spent(answer["model"], prices)
        current.spent.add(current.last_turn)
        if began:  # a turn cancelled before it began left nothing in the history: nothing to store
            entry = turn_entry(asked, answer, self.started, self.tools.calls)
            entry["usage"] = current.last_turn.stored()
            current.store_entry(entry | ({"plan": current.plan} if self.planned else {}) | ({"checkpoint": kept} if kept else {}))
            # A cancelled turn answers at once: no count between the cancel and its answer (a server
            # stopping by a signal cancels the turn and the command waiting for it alike).
            context = self.usage.context or (0 if answer["cancelled"] else await estimated_tokens(session))
            self.progress.add(dict(usage_event(current.last_turn, current.spent, context, session.context_tokens)))
        self.progress.end("cancelled" if answer["cancelled"] else answer["reply"] if answer["error"] else "done")


async def outcome(task: asyncio.Task[TurnResult], session: Session) -> tuple[TurnResult, bool]:
    """The result of a turn's ``task`` once it is done or cancelled, and whether the turn began
    (one cancelled before it began left nothing in the history)."""
    await asyncio.wait({task})
    began = not task.cancelled() or session.cancelled_turn is not None
    if task.cancelled():
        result = session.cancelled_turn or TurnResult("", 0)
        result.cancelled = True
        return result, began
    return task.result(), began


async def kept_checkpoint(
    checkpoints: TurnCheckpoints, checkpoint: TurnCheckpoint | None, result: TurnResult, root: Path
) -> dict[str, Any] | None:
    """What the turn changed, kept to rewind it (None when nothing was kept)."""
    ending = asyncio.ensure_future(checkpoints.end(checkpoint))
    try:
        return await asyncio.shield(ending)
    except asyncio.CancelledError:  # the server stops: a cancelled turn answers now, its snapshot goes on
        if not result.cancelled:
            raise
        return None
    except Exception:  # the checkpoint's own bug: the turn's answer, usage and record are kept all the same
        log.exception("no checkpoint of the turn in %s", root)
        return None


async def estimated_tokens(session: Session) -> int:
    """What the next request would hold, by the provider's count (when no fetch reported it)."""
    try:
        return (await session.estimate()).tokens
    except Exception as error:  # a plugin's counter: the turn is over all the same
        log.info("could not count the context: %s", error)
        return 0


def turn_result(provider: str, model: str | None, result: TurnResult, checkpoint: dict[str, Any] | None = None) -> dict[str, Any]:
    """A turn's answer; ``checkpoint`` the number of the turn's checkpoint when it changed files,
    ``text`` the footer a client ends the turn with."""
    failed = result.error is not None
    return {
        "reply": result.reply,
        "provider": provider,
        "model": model,
        "steps": result.steps,
        "cancelled": result.cancelled,
        "error": result.error,
        "stopReason": result.stop_reason,
        "checkpoint": checkpoint["turn"] if checkpoint else None,
        "text": turn_footer(provider, model, result.steps, cancelled=result.cancelled, failed=failed),
    }


def show_turn(face: Face, root: Path, record: TurnRecord, result: dict[str, Any], on_disk: bool) -> None:
    """For a plain client: the start of the reply as a message, the whole turn as a document
    (``on_disk``: when the folder keeps history)."""
    reply = result["reply"] or ("cancelled" if result["cancelled"] else "(no reply)")
    face.show_message("error" if result["error"] else "info", f"elelem: {preview(reply)}")
    if not face.can_show_files or not on_disk:  # history off: nothing on disk
        return
    try:
        path = write_transcript(root.name, record.markdown(root.name, result))
    except OSError as error:
        log.warning("could not write the transcript: %s", error)
        return
    face.show_file(path)
