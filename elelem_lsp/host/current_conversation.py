"""CurrentConversation: the part of a folder agent that holds its current conversation (``current``).

Bridges the folder agent to its conversation's file (``conversations.ConversationStore``):
which conversation is current, the history a new session starts from, its tokens and cost so
far (``usage``) and the model's plan as it last sent it. It finds the folder's current
conversation on disk the first time it is needed, appends each turn's entry (a new
conversation becomes the one a restart continues once it holds a turn) and keeps a prompt's
images beside it (``images``). Nothing is read or written with ``history`` off; storage that
fails is said once, and the turn goes on unstored.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..agent.messages import Image, Message
from .conversations import ConversationStore, history_from, new_id
from .frontend import BadRequest, Face
from .images import ImageError, decode_image, store_image
from .settings import Settings
from .usage import Spent, stored_spent

log = logging.getLogger(__name__)


@dataclass
class CurrentConversation:
    root: Path
    settings: Callable[[], Settings]  # the folder's current settings
    face: Face
    id: str | None = None  # None until it is opened
    history: list[Message] = field(default_factory=list)  # what a new session starts from
    spent: Spent = field(default_factory=Spent)  # the conversation's tokens and cost so far
    last_turn: Spent = field(default_factory=Spent)  # the last turn's
    plan: list[dict[str, Any]] = field(default_factory=list)  # as the model last sent it
    told_unstored: bool = False  # whether the person was told the conversation cannot be stored

    def switch(self, conversation: str, history: list[Message], entries: list[dict[str, Any]] | None = None) -> None:
        """Make ``conversation`` current, with ``history``; its totals and plan are its stored
        ``entries``' (kept when the same conversation only starts over)."""
        if entries is not None or conversation != self.id:
            self.spent, self.last_turn = stored_spent(entries or []), Spent()
            self.plan = next((e["plan"] for e in reversed(entries or []) if isinstance(e.get("plan"), list)), [])
        self.id = conversation
        self.history = history

    def stored(self) -> tuple[str, list[Message], list[dict[str, Any]]]:
        """The folder's current conversation on disk, its history and entries; a new id when there
        is none (or ``history`` is off, or the files cannot be read)."""
        conversation, history, entries = None, [], []
        if self.settings().history:
            try:
                store = ConversationStore(self.root)
                conversation = store.current()
                if conversation is not None:
                    entries = store.entries(conversation)
                    history = history_from(entries)
            except OSError as error:
                self.storage_failed(error)
        return conversation or new_id(), history, entries

    def keep_images(self, images: tuple[Image, ...]) -> tuple[Image, ...]:
        """The images, each given as ``data`` written once beside the conversation (``host/images.py``)
        and named by its path; as given when history is off (nothing is written) or storing fails.
        BadRequest naming the image when one is not an image a provider takes."""
        if not self.settings().history or not any("data" in image for image in images):
            return images
        folder = ConversationStore(self.root).directory
        kept: list[Image] = []
        for number, image in enumerate(images):
            if "data" not in image:
                kept.append(image)
                continue
            try:
                kept.append(store_image(folder, image["mimeType"], decode_image(image["mimeType"], image["data"])))
            except ImageError as error:
                raise BadRequest(f"images[{number}]: {error}") from None
            except OSError as error:
                self.storage_failed(error)
                return images
        return tuple(kept)

    def store_entry(self, entry: dict[str, Any]) -> None:
        if not self.settings().history or self.id is None:
            return
        try:
            store = ConversationStore(self.root)
            first = not store.exists(self.id)
            store.append(self.id, entry)
            if first:  # a new conversation is the one a restart continues once it holds a turn
                store.make_current(self.id)
        except OSError as error:
            self.storage_failed(error)

    def storage_failed(self, error: OSError) -> None:
        log.warning("conversation storage for %s: %s", self.root, error)
        if self.told_unstored:  # told once: every turn would say it again
            return
        self.told_unstored = True
        self.face.show_message("warning", f"elelem: the conversation of {self.root.name} is not stored: {error}")
