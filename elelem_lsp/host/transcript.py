"""The turn made visible to a plain client, one that shows neither progress nor results.

Such a client (vim-lsp, Helix, Zed, Kate, Sublime LSP...) is shown the start of the
reply as a message at the end of each turn, and the whole turn as a markdown
transcript under the user's state directory, opened where the front end can open
files. This module writes the words and the file; the host hands them to the front end.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..agent.private_files import create_private, private_folder, state_dir
from ..agent.wording import shorten

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
        steps = result.get("steps", 0)
        footer = f"{result.get('provider')} · {steps} step{'' if steps == 1 else 's'}"
        if result.get("cancelled"):
            footer += " · cancelled"
        return f"# elelem · {folder}\n\n> {quoted}\n\n{body}\n\n---\n{footer}\n"


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
