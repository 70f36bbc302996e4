"""The words a client shows of turns: a plain client's message and markdown transcript, and a
stored conversation's entries as every client draws them again.

A plain client (vim-lsp, Helix, Zed, Kate, Sublime LSP...), one that shows neither progress nor
results, is shown the start of the reply as a message at the end of each turn, and the whole turn
as a markdown transcript under the user's state directory, opened where the front end can open
files. This module writes the words and the file; the host hands them to the front end.

A stored conversation (``elelem.transcript``, ``elelem.resume``) is served with the words its
entries had live, so no client composes them: each turn's usage row, each tool row's titles
(worded now for an entry stored before titles were kept) and its footer's ``text``, and a note's
``text`` on every other entry (a compaction, a reset, a rewind).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..agent.private_files import create_private, private_folder, state_dir
from ..agent.tools import BUILTIN_ALIASES
from ..agent.wording import call_title, compaction_text, shorten, turn_footer
from .usage import with_usage_text

PREVIEW_LENGTH = 240


def preview(reply: str, length: int = PREVIEW_LENGTH) -> str:
    """The start of the reply on one line, for a notification."""
    return shorten(reply, length)


@dataclass
class TurnRecord:
    """A turn's events as they happen, written out as markdown at its end."""

    prompt: str
    parts: list[str] = field(default_factory=list)
    last_kind: str = ""

    def add(self, event: dict[str, Any]) -> None:
        kind = event["type"]
        if kind in ("saying", "thinking"):
            self._text(kind, event["text"])
        elif kind == "doing":
            self.last_kind = kind
        elif kind == "result":
            outcome = event.get("summary", "done") if event.get("ok") else f"failed: {event.get('error', '')}"
            self.parts.append(f"\n\n- `{event['title']}` → {outcome}\n\n")
            self.last_kind = kind

    def _text(self, kind: str, text: str) -> None:
        if kind != self.last_kind:
            self.parts.append("\n\n> _thinking:_ " if kind == "thinking" else "\n\n")
        self.parts.append(text.replace("\n", "\n> ") if kind == "thinking" else text)
        self.last_kind = kind

    def markdown(self, folder: str, result: dict[str, Any]) -> str:
        quoted = self.prompt.replace("\n", "\n> ")
        body = "".join(self.parts).strip()
        if result.get("error") and result["reply"] not in body:
            body += f"\n\n**{result['reply']}**"
        return f"# elelem · {folder}\n\n> {quoted}\n\n{body}\n\n---\n{result['text']}\n"


def transcript_dir() -> Path:
    return state_dir() / "transcripts"


def write_transcript(folder: str, markdown: str) -> Path:
    """A new private file for the turn, named by folder and time, outside the workspace."""
    directory = private_folder(transcript_dir())
    stamp = time.strftime("%Y%m%d-%H%M%S")
    content = markdown.encode("utf-8", "backslashreplace")  # a model may send lone surrogates
    path, number = directory / f"{folder}-{stamp}.md", 1
    while not create_private(path, content):
        number += 1
        path = directory / f"{folder}-{stamp}-{number}.md"
    return path


def drawn_again(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Stored entries as a client draws them again, each with the words it had live: a turn's
    ``usage`` with its row's ``text`` and its tool rows' titles, any other entry a ``text``."""
    return [
        _with_footer(_with_titles(entry)) if entry.get("kind") == "turn" else _with_note(entry)
        for entry in with_usage_text(entries)
    ]


def _with_footer(entry: dict[str, Any]) -> dict[str, Any]:
    """A turn with the ``text`` of its footer, as its answer said it live (its steps, when kept)."""
    failed = isinstance(entry.get("error"), str) and bool(entry["error"])
    footer = turn_footer(
        entry.get("provider"), entry.get("model"), entry.get("steps"), cancelled=entry.get("cancelled") is True, failed=failed
    )
    return entry | {"text": footer}


def _with_note(entry: dict[str, Any]) -> dict[str, Any]:
    """A compaction, a reset or a rewind with the one line a client shows for it."""
    kind = entry.get("kind")
    if kind == "compaction":
        turns = entry.get("turns")
        text = compaction_text(turns if isinstance(turns, int) and not isinstance(turns, bool) else 0)
    elif kind == "reset":
        text = "the conversation started over here: the model no longer sees the turns above"
    elif kind == "rewind":
        text = f"rewound to before turn {entry.get('checkpoint')}: the model no longer sees it or the turns after it"
    else:
        return entry
    return entry | {"text": text}


def _with_titles(entry: dict[str, Any]) -> dict[str, Any]:
    """A turn whose tool rows lack the titles they had live (stored before titles were kept),
    given them as the agent words them now."""
    tools = entry.get("tools")
    if not isinstance(tools, list) or all(not isinstance(call, dict) or "title" in call for call in tools):
        return entry
    return entry | {"tools": [_titled(call) if isinstance(call, dict) else call for call in tools]}


def _titled(call: dict[str, Any]) -> dict[str, Any]:
    if "title" in call:
        return call
    name = str(call.get("name", "?"))
    arguments = call["arguments"] if isinstance(call.get("arguments"), dict) else {}
    tool = BUILTIN_ALIASES.get(name, name)
    return call | {"title": call_title(tool, arguments), "outcomeTitle": call_title(tool, arguments, done=call.get("ok") is True)}
