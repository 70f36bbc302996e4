"""The operations on a folder's stored conversations, as a face asks for them: list, start a new
one, start over, resume, read a transcript, delete (``docs/conversations.md``).

Each takes the folder's agent, whose current conversation it may change; the files are
``conversations.ConversationStore``. What names no stored conversation is ``BadRequest``;
what cannot be done now (a turn is running, the files cannot be used) is ``Refused``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from .conversations import ConversationStore, history_from, new_id, now, title
from .folder_agent import FolderAgent
from .frontend import BadRequest, Refused
from .transcript import drawn_again


async def _stored(agent: FolderAgent, conversation: str | None = None) -> ConversationStore:
    """The folder's store, its settings taken and its conversation open; ``conversation``, when
    given, must name one of its stored conversations (none is read with ``history`` off)."""
    await agent.ready_conversation()
    store = ConversationStore(agent.root)
    if conversation is not None:
        store.path(conversation)  # an id at all
        if not agent.settings.history:
            raise BadRequest(
                f"id: history is off in {agent.root.name} (the history setting), so stored conversations are not read"
            )
        if not store.exists(conversation):
            raise BadRequest(f"id: no conversation {conversation!r} in {agent.root.name}")
    return store


@contextlib.contextmanager
def _refused_when_unusable(agent: FolderAgent, doing: str) -> Iterator[None]:
    """A stored conversation that cannot be read or deleted (a planted symlink, a folder in its
    place) is refused with the reason, as the front end says any refusal."""
    try:
        yield
    except OSError as error:
        raise Refused(f"the stored conversations of {agent.root.name} cannot be {doing}: {error}") from None


async def conversations(agent: FolderAgent) -> list[dict[str, Any]]:
    """The folder's stored conversations, newest first (none with ``history`` off: nothing is read)."""
    store = await _stored(agent)
    if not agent.settings.history:
        return []
    with _refused_when_unusable(agent, "read"):
        return store.list()


async def new_conversation(agent: FolderAgent) -> dict[str, Any]:
    """Start a new current conversation; the old one stays on disk, and stays the one a restart
    continues until the new one's first turn is stored (a client that starts and leaves without
    asking moves nothing)."""
    await agent.refresh_settings()
    agent.refuse_while_running("starting a new conversation")
    conversation = new_id()
    agent.continue_conversation(conversation, [])
    return {"reset": True, "id": conversation}


async def start_over(agent: FolderAgent) -> None:
    """The model forgets the conversation so far, which stays stored and goes on in the same
    conversation (for a face whose session is one conversation for good, as ACP's is)."""
    await agent.ready_conversation()
    agent.refuse_while_running("starting the conversation over")
    assert agent.current.id is not None
    agent.continue_conversation(agent.current.id, [])
    agent.current.store_entry({"kind": "reset", "at": now()})


async def resume(agent: FolderAgent, conversation: str) -> dict[str, Any]:
    """Make a stored conversation current; its transcript."""
    store = await _stored(agent, conversation)
    agent.refuse_while_running("resuming another conversation")
    with _refused_when_unusable(agent, "read"):
        entries = store.entries(conversation)
    agent.continue_conversation(conversation, history_from(entries), entries)
    try:
        store.make_current(conversation)
    except OSError as error:  # resumed all the same; a restart will not know
        agent.current.storage_failed(error)
    return {"id": conversation, "title": title(entries), "entries": drawn_again(entries)}


async def transcript(agent: FolderAgent, conversation: str | None = None) -> dict[str, Any]:
    """The stored entries of a conversation (the current one by default; none with ``history`` off)."""
    store = await _stored(agent, conversation)
    conversation = conversation or agent.current.id
    assert conversation is not None
    with _refused_when_unusable(agent, "read"):
        entries = store.entries(conversation) if agent.settings.history and store.exists(conversation) else []
    return {"id": conversation, "title": title(entries), "entries": drawn_again(entries)}


async def delete_conversation(agent: FolderAgent, conversation: str) -> dict[str, Any]:
    """Remove a stored conversation; deleting the current one starts a new one, whose id is
    ``started`` (a client then starts its transcript over, as after ``elelem.reset``)."""
    store = await _stored(agent, conversation)
    if conversation == agent.current.id:
        agent.refuse_while_running("deleting the conversation it belongs to")
    with _refused_when_unusable(agent, "deleted"):
        store.delete(conversation)
    if conversation != agent.current.id:
        return {"deleted": conversation}
    started = new_id()
    agent.continue_conversation(started, [])
    return {"deleted": conversation, "started": started}
