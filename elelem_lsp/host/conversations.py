"""Conversations on disk: each workspace folder's conversations, one append-only JSONL file each.

Bridges a folder's turns to the user's state directory (``platformdirs``), so a conversation
outlives the server: a line per transcript entry (``docs/conversations.md``), appended as each
turn ends, under a lock so two servers on one folder never interleave. Files are 0600 in 0700
folders, opened without following symlinks; a torn last line is skipped when read. Only what
the transcript shows is written: prompt, reply, tool calls and outcomes, provider and model
names, times. The history a provider sees is rebuilt from the entries (``history_from``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from filelock import FileLock

from ..agent.history import exchange, summary_message
from ..agent.messages import Image, Message
from ..agent.private_files import NO_FOLLOW, open_private, private_folder, state_dir, write_private
from .frontend import BadRequest
from .images import remove_unnamed_images
from .transcript import preview

log = logging.getLogger(__name__)

ID_CHARACTERS = r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}"
ID_PATTERN = f"^{ID_CHARACTERS}$"  # for pydantic, whose ``$`` is the very end
TITLE_LENGTH = 60
CURRENT = "current"  # the file naming the folder's current conversation
SUFFIX = ".jsonl"
KINDS = ("turn", "compaction", "reset", "rewind")


class StoreError(OSError):
    """The state directory cannot be used safely (a symlink planted in it, a file where a folder goes)."""


def now() -> str:
    """The time as stored: ISO 8601 UTC, to the millisecond, so entries sort by it."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def conversations_dir() -> Path:
    return state_dir() / "conversations"


def folder_key(root: Path) -> str:
    """A folder's directory name: its name made file-safe, and a hash of its whole path."""
    name = re.sub(r"[^A-Za-z0-9._-]", "_", root.name)[:40] or "root"
    return f"{name}-{hashlib.sha256(str(root).encode('utf-8', 'surrogateescape')).hexdigest()[:16]}"


def new_id() -> str:
    """A conversation id: when it began, then random, so ids sort by age and never collide."""
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%S") + "-" + secrets.token_hex(4)


def valid_id(conversation: str) -> bool:
    return re.fullmatch(ID_CHARACTERS, conversation) is not None  # ``$`` would let a final newline through


class ConversationStore:
    """One folder's conversations, keyed by the folder's resolved root."""

    def __init__(self, root: Path, base: Path | None = None) -> None:
        self.base = base or conversations_dir()
        self.directory = self.base / folder_key(root)

    # -- reading ---------------------------------------------------------------
    def current(self) -> str | None:
        """The conversation the folder continues: the one last made current, else the newest."""
        named = self._read(self.directory / CURRENT).strip()
        if valid_id(named):
            return named
        listed = self.list()
        return listed[0]["id"] if listed else None

    def entries(self, conversation: str) -> list[dict[str, Any]]:
        """The stored entries, oldest first; lines that do not parse (a torn last line) are skipped.

        Split on newlines only: ``json.dumps(ensure_ascii=False)`` leaves U+2028, U+2029 and U+0085
        raw inside a line, where ``str.splitlines`` would cut the entry in two."""
        entries = []
        for number, line in enumerate(self._read(self.path(conversation)).split("\n"), 1):
            if not line.strip():
                continue  # the end of the file after its last newline
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                log.warning("conversation %s: line %d is not JSON (a write cut short?); skipped", conversation, number)
                continue
            if isinstance(entry, dict) and entry.get("kind") in KINDS:
                entries.append(entry)
        return entries

    def exists(self, conversation: str) -> bool:
        return self.path(conversation).is_file()

    def list(self) -> list[dict[str, Any]]:
        """Every stored conversation's summary, newest first."""
        found = []
        for conversation in self._stored_ids():
            try:
                entries = self.entries(conversation)
            except StoreError as error:  # one unreadable file does not hide the others
                log.warning("conversation %s is not listed: %s", conversation, error)
                continue
            if entries:
                found.append(summary(conversation, entries))
        return sorted(found, key=lambda c: (str(c["updated"] or ""), c["id"]), reverse=True)

    def _stored_ids(self) -> Iterator[str]:
        """The ids of the folder's conversation files (not a symlink planted among them)."""
        if not self.directory.is_dir():
            return
        for path in self.directory.glob("*" + SUFFIX):
            conversation = path.name[: -len(SUFFIX)]
            if valid_id(conversation) and not path.is_symlink():
                yield conversation

    def path(self, conversation: str) -> Path:
        if not valid_id(conversation):
            raise BadRequest(f"id: {conversation!r} is not a conversation id")
        return self.directory / (conversation + SUFFIX)

    # -- writing ---------------------------------------------------------------
    def append(self, conversation: str, entry: dict[str, Any]) -> None:
        """Add one entry as one line, under the conversation's lock.

        A line left torn by a killed process is closed first, so it stays one bad line
        (skipped on load) instead of swallowing this one."""
        path = self.path(conversation)
        line = json.dumps(entry, ensure_ascii=False).encode("utf-8", "backslashreplace") + b"\n"
        self._ready()
        with lock(path):
            descriptor = open_private(path, os.O_RDWR | os.O_APPEND | os.O_CREAT)
            try:
                size = os.fstat(descriptor).st_size
                if size and os.pread(descriptor, 1, size - 1) != b"\n":
                    line = b"\n" + line
                os.write(descriptor, line)
            finally:
                os.close(descriptor)

    def make_current(self, conversation: str) -> None:
        """Name the conversation the folder continues at the next start (written whole, atomically)."""
        self.path(conversation)
        self._ready()
        write_private(self.directory / CURRENT, conversation.encode("ascii") + b"\n")

    def delete(self, conversation: str) -> None:
        """Remove the conversation's file, under its lock so that no append is cut off midway,
        and the images only it named.

        The lock file stays: another process may hold it or wait on it, and one arriving after
        a new lock file took its path would lock that file instead, beside the holder."""
        path = self.path(conversation)
        if not path.is_file():
            raise BadRequest(f"id: no conversation {conversation!r} in this folder")
        with lock(path):
            path.unlink(missing_ok=True)
        if self._read(self.directory / CURRENT).strip() == conversation:
            (self.directory / CURRENT).unlink(missing_ok=True)
        named = self._named_images()
        if named is not None:
            remove_unnamed_images(self.directory, named)

    def _named_images(self) -> set[str] | None:
        """The image paths the folder's conversations name; None when one cannot be read (its
        images are not known, so none is removed)."""
        named: set[str] = set()
        for conversation in self._stored_ids():
            try:
                entries = self.entries(conversation)
            except OSError:
                return None
            named.update(image["path"] for entry in entries for image in stored_images(entry.get("images")))
        return named

    # -- the directory -----------------------------------------------------------
    def _ready(self) -> None:
        """Make the folders, private; refuse any that is a symlink (planted to redirect our writes)."""
        for directory in (self.base, self.directory):
            if directory.is_symlink():
                raise StoreError(f"{directory} is a symlink; conversations are not stored through one")
            private_folder(directory)
            if not directory.is_dir():
                raise StoreError(f"{directory} is not a folder")

    def _read(self, path: Path) -> str:
        """A file's text, or "" when it is missing; never through a symlink."""
        try:
            with os.fdopen(os.open(path, os.O_RDONLY | NO_FOLLOW), "rb") as file:
                content = file.read()
        except FileNotFoundError:
            return ""
        except OSError as error:  # a symlink, a folder where the file goes, no permission
            raise StoreError(f"cannot read {path.name}: {error.strerror or error}") from None
        return content.decode("utf-8", "replace")


def lock(path: Path) -> FileLock:
    """The lock a conversation's file is written and deleted under, shared by every process."""
    return FileLock(str(path) + ".lock", mode=0o600)


def summary(conversation: str, entries: list[dict[str, Any]]) -> dict[str, Any]:
    """``{id, title, created, updated, turns, provider, model}`` of one conversation."""
    turns = [entry for entry in entries if entry["kind"] == "turn"]
    first, last = entries[0], entries[-1]
    return {
        "id": conversation,
        "title": title(entries),
        "created": first.get("started") or first.get("at"),
        "updated": last.get("ended") or last.get("at"),
        "turns": len(turns),
        "provider": turns[-1].get("provider") if turns else None,
        "model": turns[-1].get("model") if turns else None,
    }


def title(entries: list[dict[str, Any]]) -> str:
    """The first prompt (its context when it has no words), on one line and shortened."""
    first = next((entry for entry in entries if entry["kind"] == "turn"), {})
    return preview(text(first.get("prompt")) or text(first.get("context")), TITLE_LENGTH)


def history_from(entries: list[dict[str, Any]]) -> list[Message]:
    """The history a provider sees, rebuilt from the entries as the session built it.

    A compaction replaces the summary before it (if any) and the oldest ``turns`` turns
    after that with one summary message; a reset leaves out everything before it (a session
    that cannot change conversation, as an ACP session, starts its context over this way);
    a rewind leaves out the turn of its ``checkpoint`` and every turn after it."""
    units: list[list[Message]] = []  # a turn's messages, or a summary
    checkpoints: list[int | None] = []  # the checkpoint of each unit's turn
    summarised = False  # whether units[0] is a summary
    for entry in entries:
        if entry["kind"] == "turn":
            asked = Asked(text(entry.get("prompt")), text(entry.get("context")), stored_images(entry.get("images")))
            units.append(exchange(asked.text, text(entry.get("reply")), entry.get("cancelled") is True, asked.images))
            checkpoints.append(checkpoint_of(entry))
        elif entry["kind"] == "reset":
            units, checkpoints, summarised = [], [], False
        elif entry["kind"] == "rewind":
            cut = checkpoints.index(entry.get("checkpoint")) if entry.get("checkpoint") in checkpoints else len(units)
            units, checkpoints = units[:cut], checkpoints[:cut]
        else:
            turns = entry.get("turns")
            replaced = (turns if isinstance(turns, int) and turns > 0 else 0) + (1 if summarised else 0)
            units = [[summary_message(text(entry.get("summary")))], *units[replaced:]]
            checkpoints = [None, *checkpoints[replaced:]]
            summarised = True
    return [message for unit in units for message in unit]


def checkpoint_of(entry: dict[str, Any]) -> int | None:
    """The checkpoint (``host/checkpoints.py``) a stored turn entry names, if any."""
    kept = entry.get("checkpoint")
    return kept.get("turn") if isinstance(kept, dict) and isinstance(kept.get("turn"), int) else None


def text(value: Any) -> str:
    """A stored field as text: a hand-edited file may hold anything."""
    return value if isinstance(value, str) else "" if value is None else str(value)


def stored_images(value: Any) -> tuple[Image, ...]:
    """A stored turn's images: each ``{mimeType, path}`` a hand-edited file still holds whole, whose
    file is still there (one removed since is left out, rather than failing every later turn)."""
    if not isinstance(value, list):
        return ()
    return tuple(
        {"mimeType": image["mimeType"], "path": image["path"]}
        for image in value
        if isinstance(image, dict)
        and isinstance(image.get("mimeType"), str)
        and isinstance(image.get("path"), str)
        and os.path.isfile(image["path"])
    )


@dataclass(frozen=True)
class Asked:
    """What a turn was asked: the person's words, the context the front end added to them
    (the file or selection they asked from) and the images given with them."""

    prompt: str
    context: str = ""
    images: tuple[Image, ...] = ()  # sent with the prompt: a ``path`` (stored) or the ``data``

    @property
    def text(self) -> str:
        """What the model reads: the prompt, then its context."""
        return "\n\n".join(part for part in (self.prompt, self.context) if part)


def turn_entry(asked: Asked, result: dict[str, Any], started: str, tools: list[dict[str, Any]]) -> dict[str, Any]:
    """The stored entry of one finished (or cancelled) turn (``context`` and ``images`` kept only when
    there are some: an image by its path, never its bytes)."""
    images = [image for image in asked.images if "path" in image]
    return {
        "kind": "turn",
        "prompt": asked.prompt,
        **({"context": asked.context} if asked.context else {}),
        **({"images": images} if images else {}),
        "reply": result["reply"],
        "provider": result["provider"],
        "model": result["model"],
        "steps": result["steps"],
        "started": started,
        "ended": now(),
        "cancelled": bool(result["cancelled"]),
        "error": result["error"],
        "tools": tools,
    }


class ToolLog:
    """A turn's tool calls and their outcomes, gathered from its events; the check after a step
    that changed files (its ``checked`` event, as sent) goes with the step's last call."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def add(self, event: dict[str, Any]) -> None:
        if event["type"] == "doing":
            self.calls.append(
                {
                    "id": event["id"],
                    "name": event["name"],
                    "arguments": event["arguments"],
                    **({"title": event["title"]} if "title" in event else {}),
                    "ok": False,
                    "summary": None,
                    "error": None,
                }
            )
        elif event["type"] == "result":
            for call in reversed(self.calls):
                if call["id"] == event["id"]:
                    call.update(ok=bool(event["ok"]), summary=event.get("summary"), error=event.get("error"))
                    if "title" in event:
                        call["outcomeTitle"] = event["title"]  # "Ran npm test", as the result's row said
                    break
        elif event["type"] == "checked" and self.calls:
            # after the step's results: kept on its last call, where a redrawn transcript shows it
            self.calls[-1]["checked"] = dict(event)
