"""Agent events -> ACP ``session/update`` notifications, sent in order.

``Outbox`` sends one session's updates one after another; while the pipe is busy,
adjacent text chunks of one kind wait as one (nothing is dropped or reordered).
``TurnUpdates`` is the host's ProgressSink for one turn: ``saying`` and ``thinking``
become message and thought chunks, ``doing`` a ``tool_call`` (a title a person reads,
its kind, where it works, its arguments), and ``result`` the ``tool_call_update`` that
finishes it, with what the front end recorded for it (diffs, command output, the error).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import (
    start_tool_call,
    text_block,
    tool_content,
    update_agent_message_text,
    update_agent_thought_text,
    update_tool_call,
    update_user_message_text,
)
from acp.schema import ToolCallLocation, ToolKind

from ..agent.toolbox import brief
from ..agent.tools import BUILTIN_ALIASES
from ..host.frontend import TEXT_BATCH_SECONDS, ProgressSink

log = logging.getLogger(__name__)
Send = Callable[[Any], Awaitable[None]]
TEXT_UPDATES = {"saying": update_agent_message_text, "thinking": update_agent_thought_text}


class Outbox:
    """One session's ``session/update``s, sent in order by one task.

    Text is coalesced as the LSP face's ``$/progress`` is: the first chunk after a quiet spell
    goes at once, the ones after it wait up to ``interval`` as one chunk; anything else (a tool
    call, the end of the turn) sends what waits at once. Every update is its own notification
    to build, serialise and parse, so a chunk per token would cost the client more than the text.
    """

    def __init__(self, send: Send, *, interval: float = TEXT_BATCH_SECONDS) -> None:
        self.send = send
        self.interval = interval
        self.queue: deque[Any] = deque()  # an update, or [kind, [texts]] for merged chunks
        self.pump: asyncio.Task[None] | None = None
        self.urgent = asyncio.Event()
        self.last_text = float("-inf")

    def put(self, update: Any) -> None:
        self.queue.append(update)
        self.urgent.set()
        self._wake()

    def put_text(self, kind: str, text: str) -> None:
        last = self.queue[-1] if self.queue else None
        if isinstance(last, list) and last[0] == kind:
            last[1].append(text)  # joined when sent: no quadratic concatenation
        else:
            self.queue.append([kind, [text]])
        self._wake()

    def _wake(self) -> None:
        if self.pump is None or self.pump.done():
            self.pump = asyncio.ensure_future(self._drain())

    async def _drain(self) -> None:
        loop = asyncio.get_running_loop()
        while self.queue:
            text = isinstance(self.queue[0], list)
            if text and len(self.queue) == 1:  # only text waits: more may join it for a while
                wait = self.last_text + self.interval - loop.time()
                if wait > 0 and not self.urgent.is_set():
                    with contextlib.suppress(asyncio.TimeoutError):
                        await asyncio.wait_for(self.urgent.wait(), wait)
            if text:
                self.last_text = loop.time()
            item = self.queue.popleft()
            if not self.queue:
                self.urgent.clear()
            update = TEXT_UPDATES[item[0]]("".join(item[1])) if isinstance(item, list) else item
            try:
                await self.send(update)
            except ConnectionError:
                self.queue.clear()  # the client is gone: nobody to tell
                return
            except Exception:
                log.exception("could not send a session update")

    async def sent(self) -> None:
        """Send what waits, now, and return once everything put so far has gone out."""
        self.urgent.set()
        while self.pump is not None and not self.pump.done():
            await asyncio.shield(self.pump)


@dataclass
class ToolCalls:
    """A turn's tool calls as the front end sees them run: the id each has in the session, which
    one runs now, and what each produced that the person should see (a diff, a command's output,
    its terminal).

    A client keeps one card per tool-call id, so ids are unique in the session: the provider's
    own, unless the session used it already (a plugin's ``call_1`` comes back at each step), then
    with ``-2``, ``-3``... The host keeps naming a call by the provider's id."""

    used: set[str] = field(default_factory=set)  # the session's ids so far, shared by its turns
    announced: dict[str, deque[str]] = field(default_factory=dict)  # provider's id -> ours, until finished
    current: str | None = None
    content: dict[str, list[Any]] = field(default_factory=dict)

    def unique(self, call_id: str) -> str:
        """An id no other tool call of the session has, ``call_id`` if it is free."""
        unique, number = call_id, 1
        while unique in self.used:
            number += 1
            unique = f"{call_id}-{number}"
        self.used.add(unique)
        return unique

    def announce(self, call_id: str) -> str:
        """The session's id for the call the provider calls ``call_id``."""
        unique = self.unique(call_id)
        self.announced.setdefault(call_id, deque()).append(unique)
        return unique

    def of(self, call_id: str) -> str:
        """The session's id of the provider's ``call_id`` that runs or ends now (calls end in order)."""
        waiting = self.announced.get(call_id)
        return waiting[0] if waiting else call_id

    def finish(self, call_id: str) -> str:
        unique = self.of(call_id)
        if self.announced.get(call_id):
            self.announced[call_id].popleft()
        return unique

    def add(self, item: Any) -> None:
        if self.current is not None:
            self.content.setdefault(self.current, []).append(item)


KINDS: dict[str, ToolKind] = {
    "read": "read",
    "write": "edit",
    "edit": "edit",
    "execute": "execute",
    "list": "search",
    "grep": "search",
}
VERBS = {"read": "Read", "write": "Write", "edit": "Edit", "list": "List", "execute": "Run"}
# A tool's other names (``bash`` for ``execute``) are shown as the tool itself.
KINDS |= {alias: KINDS[tool] for alias, tool in BUILTIN_ALIASES.items()}
VERBS |= {alias: VERBS[tool] for alias, tool in BUILTIN_ALIASES.items() if tool in VERBS}


def title_of(name: str, arguments: dict[str, Any]) -> str:
    """``Read src/app.py``, ``Run pytest -q``, ``Search "todo" in src``: a call as a person reads it."""
    if name == "grep" and isinstance(arguments.get("pattern"), str):
        where = arguments.get("path") if isinstance(arguments.get("path"), str) else "."
        return f"Search {arguments['pattern']!r} in {where}"
    verb = VERBS.get(name)
    if verb is None:
        return brief(name, arguments)
    main = arguments.get("command" if KINDS[name] == "execute" else "path")
    return f"{verb} {main if isinstance(main, str) else '.' if name == 'list' else ''}".rstrip()


def locations_of(name: str, arguments: dict[str, Any], root: Path) -> list[ToolCallLocation] | None:
    path = arguments.get("path")
    if KINDS.get(name) in ("read", "edit", "search") and isinstance(path, str) and path and "\0" not in path:
        return [ToolCallLocation(path=str(root / path))]
    return None


def tool_call_of(call_id: str, name: str, arguments: dict[str, Any], root: Path, status: Any) -> Any:
    """The ``tool_call`` that announces a call: a title a person reads, its kind, where it works."""
    return start_tool_call(
        call_id,
        title_of(name, arguments),
        kind=KINDS.get(name, "other"),
        status=status,
        locations=locations_of(name, arguments, root),
        raw_input=arguments,
    )


def outcome_of(call_id: str, ok: bool, error: str | None, content: list[Any], raw_output: dict[str, Any]) -> Any:
    """The ``tool_call_update`` that finishes a call; a failure shows its error."""
    if not ok and error:
        content = [*content, tool_content(text_block(error))]
    return update_tool_call(call_id, status="completed" if ok else "failed", content=content or None, raw_output=raw_output)


def replayed(transcript: dict[str, Any], root: Path, calls: ToolCalls) -> list[Any]:
    """A stored conversation as the updates that would have shown it: each prompt, its tool
    calls with their final status (ids made unique in the session by ``calls``), its reply; a
    compaction, a reset or a rewind as one thought line."""
    updates: list[Any] = []
    for entry in transcript["entries"]:
        if entry["kind"] == "compaction":
            updates.append(update_agent_thought_text(f"{entry['turns']} turns compacted into a summary\n"))
            continue
        if entry["kind"] == "reset":
            updates.append(update_agent_thought_text("/reset: the context started over here\n"))
            continue
        if entry["kind"] == "rewind":
            turn = entry.get("checkpoint")
            updates.append(update_agent_thought_text(f"/rewind: the context went back to before turn {turn}\n"))
            continue
        updates.append(update_user_message_text(entry["prompt"]))
        for call in entry.get("tools", []):
            arguments = call["arguments"] if isinstance(call.get("arguments"), dict) else {}
            call_id = calls.unique(str(call["id"]))
            updates.append(tool_call_of(call_id, call["name"], arguments, root, "pending"))
            raw = {
                "ok": call["ok"],
                **({"summary": call["summary"]} if call.get("summary") else {}),
                **({"error": call["error"]} if call.get("error") else {}),
            }
            updates.append(outcome_of(call_id, call["ok"], call.get("error"), [], raw))
        reply = entry.get("reply") or ("(cancelled)" if entry.get("cancelled") else "")
        if reply:
            updates.append(update_agent_message_text(reply))
    return updates


def context_line(event: dict[str, Any]) -> str:
    """What the history left out to fit the budget, as one line."""
    parts = [f"{event.get('leftOut', 0)} earlier turns left out"] if event.get("leftOut") else []
    if event.get("shortened"):
        parts.append(f"{event['shortened']} tool results shortened")
    return f"{' and '.join(parts) or 'the history was trimmed'} to fit {event.get('budget', 0):,} tokens\n"


class TurnUpdates(ProgressSink):
    def __init__(self, outbox: Outbox, calls: ToolCalls, root: Path) -> None:
        self.outbox, self.calls, self.root = outbox, calls, root
        self.ended: str | None = None
        self.said = False  # some of the reply went out: an error after it starts a paragraph of its own

    def add(self, event: dict[str, Any]) -> None:
        if self.ended is not None:
            return
        kind = event["type"]
        if kind in TEXT_UPDATES:
            self.said = self.said or kind == "saying"
            self.outbox.put_text(kind, event["text"])
        elif kind == "doing":
            call_id = self.calls.announce(event["id"])
            self.outbox.put(tool_call_of(call_id, event["name"], event["arguments"], self.root, "pending"))
        elif kind == "result":
            self.calls.current = None
            call_id = self.calls.finish(event["id"])
            content = self.calls.content.pop(call_id, [])
            raw = {k: event[k] for k in ("ok", "summary", "error") if k in event}
            self.outbox.put(outcome_of(call_id, event["ok"], event.get("error"), content, raw))
        elif kind == "context":
            self.outbox.put_text("thinking", context_line(event))
        elif kind == "compacted":
            self.outbox.put_text("thinking", f"{event['turns']} turns compacted into a summary\n")

    def started(self, call_id: str) -> None:
        """The call runs now: it was pending (streamed, or waiting for permission) until here."""
        self.calls.current = self.calls.of(call_id)
        self.outbox.put(update_tool_call(self.calls.current, status="in_progress"))

    def end(self, message: str) -> None:
        self.ended = message
