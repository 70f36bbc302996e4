"""Answers given from memory, with no model request.

Bridges what was shown before to a new request: ``TypingAlong`` keeps each document's last
suggestion with the text around it, so a person typing what it suggests gets the rest of it
(the text before the cursor grew by a start of the suggestion, the text after is unchanged).
``AnswerCache`` keeps the last answers by their context (a hash of it, so long prefixes cost
nothing to keep): deleting a character and typing it again asks nothing. Both are bounded.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from .context import CompletionContext

DOCUMENTS = 256  # documents whose last suggestion is kept
ANSWERS = 512  # answers kept by context


@dataclass(frozen=True)
class Shown:
    before: str  # the document's text before the cursor when the suggestion was shown
    after: str  # and after it
    text: str
    item: str = ""  # its id: what typing along gives of it is accepted as the same suggestion


class TypingAlong:
    def __init__(self) -> None:
        self.shown: OrderedDict[str, Shown] = OrderedDict()

    def remember(self, uri: str, shown: Shown) -> None:
        self.shown[uri] = shown
        self.shown.move_to_end(uri)
        while len(self.shown) > DOCUMENTS:
            self.shown.popitem(last=False)

    def forget(self, uri: str) -> None:
        self.shown.pop(uri, None)

    def rest(self, uri: str, before: str, after: str) -> tuple[str, str] | None:
        """What is left of the shown suggestion once the person typed its start, and the suggestion's
        id; None if they did not."""
        shown = self.shown.get(uri)
        if shown is None or len(before) <= len(shown.before) or len(before) - len(shown.before) >= len(shown.text):
            return None
        typed = before[len(shown.before) :]
        if not shown.text.startswith(typed) or after != shown.after or not before.startswith(shown.before):
            return None
        return shown.text[len(typed) :], shown.item


def context_key(context: CompletionContext, multiline: bool) -> int:
    return hash((context.path, context.prefix, context.suffix, multiline))


class AnswerCache:
    def __init__(self) -> None:
        self.answers: OrderedDict[tuple[str, int], str | None] = OrderedDict()

    def get(self, folder: str, key: int) -> tuple[bool, str | None]:
        """``(known, answer)``: an answer of None is known too (the model had nothing to say)."""
        if (folder, key) not in self.answers:
            return False, None
        self.answers.move_to_end((folder, key))
        return True, self.answers[(folder, key)]

    def put(self, folder: str, key: int, answer: str | None) -> None:
        self.answers[(folder, key)] = answer
        self.answers.move_to_end((folder, key))
        while len(self.answers) > ANSWERS:
            self.answers.popitem(last=False)

    def clear(self, folder: str) -> None:
        """Forget one folder's answers (its provider or settings changed)."""
        for key in [key for key in self.answers if key[0] == folder]:
            del self.answers[key]
