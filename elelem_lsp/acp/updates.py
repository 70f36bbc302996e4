"""Agent events -> ACP ``session/update`` notifications, sent in order.

``Outbox`` sends one session's updates one after another; while the pipe is busy,
adjacent text chunks of one kind wait as one (nothing is dropped or reordered).
``TurnUpdates`` is the host's ProgressSink for one turn: ``saying`` and ``thinking``
become message and thought chunks (each stretch of them between tool calls one message, with
its ``messageId``), ``doing`` a ``tool_call`` (a title a person reads, its kind, where it
works, its arguments), ``result`` the ``tool_call_update`` that finishes it, with what the
front end recorded for it (diffs, command output, the error), ``plan`` a ``plan`` update and
``usage`` a ``usage_update`` (the context used against its size, the conversation's cost);
``context``, ``compacted`` and ``checked`` are their text as a thought line.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import (
    image_block,
    plan_entry,
    start_tool_call,
    text_block,
    tool_content,
    update_agent_message_text,
    update_agent_thought_text,
    update_plan,
    update_tool_call,
    update_user_message,
    update_user_message_text,
)
from acp.schema import AgentPlanUpdate, Cost, ToolCallLocation, ToolKind, UsageUpdate

from ..agent.messages import ProviderError
from ..agent.tools import BUILTIN_ALIASES
from ..agent.wording import call_title
from ..host.batching import TEXT_BATCH_SECONDS, Text, TextBatch
from ..host.frontend import ProgressSink
from ..providers.images import image_data

log = logging.getLogger(__name__)
Send = Callable[[Any], Awaitable[None]]
TEXT_UPDATES = {"saying": update_agent_message_text, "thinking": update_agent_thought_text}


class Outbox:
    """One session's ``session/update``s, sent in order by one task.

    Text is coalesced as the LSP face's ``$/progress`` is (``host.batching``), and while the
    pipe is busy: every update is its own notification to build, serialise and parse, so a
    chunk per token would cost the client more than the text. Anything else (a tool call, the
    end of the turn) sends what waits at once.
    """

    def __init__(self, send: Send, *, interval: float = TEXT_BATCH_SECONDS) -> None:
        self.send = send
        self.batch = TextBatch(interval)
        self.pump: asyncio.Task[None] | None = None
        self.urgent = asyncio.Event()

    def put(self, update: Any) -> None:
        self.batch.add(update)
        self.urgent.set()
        self._wake()

    def put_text(self, kind: str, text: str, message_id: str | None = None) -> None:
        self.batch.add_text(kind, text, message_id)
        self._wake()

    def _wake(self) -> None:
        if self.pump is None or self.pump.done():
            self.pump = asyncio.ensure_future(self._drain())

    async def _drain(self) -> None:
        loop = asyncio.get_running_loop()
        while self.batch:
            if self.batch.only_text():  # more may join it for a while
                wait = self.batch.text_wait(loop.time())
                if wait > 0 and not self.urgent.is_set():
                    with contextlib.suppress(asyncio.TimeoutError):
                        await asyncio.wait_for(self.urgent.wait(), wait)
            item = self.batch.take(loop.time())
            if not self.batch:
                self.urgent.clear()
            update = TEXT_UPDATES[item.kind](item.text) if isinstance(item, Text) else item
            if isinstance(item, Text) and item.id is not None:
                update.message_id = item.id
            try:
                await self.send(update)
            except ConnectionError:
                self.batch.clear()  # the client is gone: nobody to tell
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
    titles: dict[str, str] = field(default_factory=dict)  # each announced call's title (ours -> title)

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
    "plan": "think",
}
# A tool's other names (``bash`` for ``execute``) are shown as the tool itself.
KINDS |= {alias: KINDS[tool] for alias, tool in BUILTIN_ALIASES.items()}


def locations_of(name: str, arguments: dict[str, Any], root: Path) -> list[ToolCallLocation] | None:
    path = arguments.get("path")
    if KINDS.get(name) in ("read", "edit", "search") and isinstance(path, str) and path and "\0" not in path:
        return [ToolCallLocation(path=str(root / path))]
    return None


def tool_call_of(call_id: str, title: str, name: str, arguments: dict[str, Any], root: Path, status: Any) -> Any:
    """The ``tool_call`` that announces a call: its title, its kind, where it works."""
    return start_tool_call(
        call_id,
        title,
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
    calls with their final status (ids made unique in the session by ``calls``) and the check
    after a step, the plan as it left it, its reply (each message with its ``messageId``, a prompt's images read again from
    their files); a compaction, a reset or a rewind as one thought line of the ``text`` the host serves with it."""
    updates: list[Any] = []
    for entry in transcript["entries"]:
        if entry["kind"] != "turn":  # the server words a compaction, a reset, a rewind; a newer kind may say nothing
            if isinstance(entry.get("text"), str):
                updates.append(update_agent_thought_text(entry["text"] + "\n"))
            continue
        asked = with_id(update_user_message_text(entry["prompt"]))
        updates += [asked, *replayed_images(entry.get("images"), asked.message_id)]
        for call in entry.get("tools", []):
            arguments = call["arguments"] if isinstance(call.get("arguments"), dict) else {}
            call_id = calls.unique(str(call["id"]))
            title = call.get("title") or call_title(BUILTIN_ALIASES.get(call["name"], call["name"]), arguments)
            updates.append(tool_call_of(call_id, title, call["name"], arguments, root, "pending"))
            raw = {
                "ok": call["ok"],
                **({"summary": call["summary"]} if call.get("summary") else {}),
                **({"error": call["error"]} if call.get("error") else {}),
            }
            updates.append(outcome_of(call_id, call["ok"], call.get("error"), [], raw))
            checked = call.get("checked")
            if isinstance(checked, dict) and isinstance(checked.get("text"), str):  # as it was shown live
                updates.append(update_agent_thought_text(f"{checked['text']}\n"))
        if isinstance(entry.get("plan"), list):
            updates.append(plan_update(entry["plan"]))
        reply = entry.get("reply") or ("(cancelled)" if entry.get("cancelled") else "")
        if reply:
            updates.append(with_id(update_agent_message_text(reply)))
    return updates


def with_id(chunk: Any) -> Any:
    chunk.message_id = new_message_id()
    return chunk


def new_message_id() -> str:
    """An opaque id no other message of the session has."""
    return "msg_" + secrets.token_hex(8)


def plan_update(entries: list[dict[str, Any]]) -> AgentPlanUpdate:
    """The ``plan`` update of the model's whole checklist (ACP wants a priority: medium unless given)."""
    return update_plan(plan_entry(e["content"], priority=e.get("priority", "medium"), status=e["status"]) for e in entries)


def replayed_images(images: Any, message_id: str) -> list[Any]:
    """A stored prompt's images as chunks of its message, each read from its file (one gone since is left out)."""
    chunks = []
    for image in images if isinstance(images, list) else []:
        try:
            media_type, data = image_data(image)
        except (ProviderError, TypeError, AttributeError) as error:
            log.info("not replaying an image: %s", error)
            continue
        chunk = update_user_message(image_block(data, media_type))
        chunk.message_id = message_id
        chunks.append(chunk)
    return chunks


def usage_update(event: dict[str, Any]) -> UsageUpdate:
    """The ``usage_update`` of a turn's ``usage`` event: the context against its size, the cost so far."""
    cost = Cost(amount=event["cost"], currency=event["currency"]) if "cost" in event else None
    used = event["contextTokens"]
    return UsageUpdate(session_update="usage_update", used=used, size=max(event.get("contextWindow", used), used), cost=cost)


class TurnUpdates(ProgressSink):
    def __init__(self, outbox: Outbox, calls: ToolCalls, root: Path) -> None:
        self.outbox, self.calls, self.root = outbox, calls, root
        self.ended: str | None = None
        self.said = False  # some of the reply went out: an error after it starts a paragraph of its own
        self.message_ids = {kind: new_message_id() for kind in TEXT_UPDATES}  # new ones after each tool call

    def add(self, event: dict[str, Any]) -> None:
        if self.ended is not None:
            return
        kind = event["type"]
        if kind in TEXT_UPDATES:
            self.said = self.said or kind == "saying"
            self.outbox.put_text(kind, event["text"], self.message_ids[kind])
        elif kind == "doing":
            self.message_ids = {kind: new_message_id() for kind in TEXT_UPDATES}
            call_id = self.calls.announce(event["id"])
            title = self.calls.titles[call_id] = event["title"]
            self.outbox.put(tool_call_of(call_id, title, event["name"], event["arguments"], self.root, "pending"))
        elif kind == "result":
            self.calls.current = None
            call_id = self.calls.finish(event["id"])
            content = self.calls.content.pop(call_id, [])
            raw: dict[str, Any] = {k: event[k] for k in ("ok", "summary", "error") if k in event}
            self.outbox.put(outcome_of(call_id, event["ok"], event.get("error"), content, raw))
        elif kind in ("context", "compacted"):
            self.outbox.put_text("thinking", event["text"] + "\n")
        elif kind == "checked":  # the check after a step that changed files: its row, as a thought
            self.outbox.put_text("thinking", f"{event['text']}\n")
        elif kind == "plan":
            self.outbox.put(plan_update(event["entries"]))
        elif kind == "usage":
            self.outbox.put(usage_update(event))

    def started(self, call_id: str) -> None:
        """The call runs now: it was pending (streamed, or waiting for permission) until here."""
        self.calls.current = self.calls.of(call_id)
        self.outbox.put(update_tool_call(self.calls.current, status="in_progress"))

    def end(self, message: str) -> None:
        self.ended = message
