"""The shapes a conversation's history holds: what one turn leaves in it, and what stands for turns.

Bridges a finished turn to the history the next turn's provider reads: the prompt and the final
reply (``exchange``), a cancelled turn marked so the model knows; an earlier message's images
named, not sent, to a provider that cannot take images (``without_images``); and the one message
that stands for compacted turns (``summary_message``), with the words a summary is asked in.
The session writes them (``session.Session``); the host's conversations store and read them back.
"""

from __future__ import annotations

from collections.abc import Sequence

from .messages import Image, Message, assistant, user

CANCELLED_MARK = "[cancelled by the user before the reply was finished]"
CANCELLED_EMPTY_MARK = "[cancelled by the user before any reply]"


def exchange(prompt: str, reply: str, cancelled: bool = False, images: Sequence[Image] = ()) -> list[Message]:
    """What one turn leaves in the history: the prompt (with its images) and the final reply.

    A cancelled turn is marked so the model knows; one cancelled before any reply adds no
    empty assistant message, only the prompt with the mark."""
    if cancelled and not reply:
        return [user(f"{prompt}\n\n{CANCELLED_EMPTY_MARK}", images)]
    if cancelled:
        return [user(prompt, images), assistant(f"{reply}\n\n{CANCELLED_MARK}")]
    return [user(prompt, images), assistant(reply)]


IMAGES_LEFT_OUT = "[{count} image(s) left out: this provider cannot take images]"


def without_images(message: Message) -> Message:
    """An earlier message as a provider that cannot take images is sent it: its images named, not sent,
    so that a conversation which held images goes on with such a provider."""
    if not message.get("images"):
        return message
    rest: Message = {key: value for key, value in message.items() if key != "images"}  # type: ignore[assignment]
    rest["content"] = f"{message['content']}\n\n{IMAGES_LEFT_OUT.format(count=len(message.get('images') or ()))}"
    return rest


SUMMARY_MARK = "[A summary of the earlier turns of this conversation, which were compacted]"
SUMMARY_INSTRUCTIONS = (
    "You summarise a conversation between a person and a coding agent so that the agent can go on "
    "from the summary alone. Keep every file name, the decisions made and why, and the open tasks; "
    "leave out pleasantries and anything already undone. A summary of earlier turns at the start "
    "is part of the conversation: fold it into yours. Answer with the summary only."
)
SUMMARY_REQUEST = "Summarise the conversation above as instructed."


def summary_message(summary: str) -> Message:
    """The one message that stands for the compacted turns."""
    return user(f"{SUMMARY_MARK}\n\n{summary}")


def is_summary(turn: list[Message]) -> bool:
    return len(turn) == 1 and turn[0]["content"].startswith(SUMMARY_MARK)
