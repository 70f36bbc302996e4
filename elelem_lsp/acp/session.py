"""AcpSession: one ACP session, holding the agent of its folder and the front end that answers it.

Its prompt runs as the folder agent's turn, with the stop reason ACP asks for, and ends with a
``session_info_update`` (the conversation's title once it has one, and the time); cancelling
stops the turn, or whatever the prompt does before or instead of one; a change of its
provider or model is announced as a ``config_option_update``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from acp import RequestError, update_agent_message_text
from acp.schema import ConfigOptionUpdate, PromptResponse, SessionInfoUpdate, StopReason

from ..agent.editor_context import EditorContext, render
from ..agent.toolbox import Toolbox
from ..host.conversations import TITLE_LENGTH, Asked, now
from ..host.folder_agent import FolderAgent
from ..host.frontend import Refused
from ..host.transcript import preview
from .frontend import AcpFrontend
from .options import config_options

# A turn's stop reason in ACP's terms; a failed turn ended as an answer (its error said in the reply).
STOP_REASONS: dict[str, StopReason] = {
    "end": "end_turn",
    "cancelled": "cancelled",
    "max_steps": "max_turn_requests",
    "error": "end_turn",
}


class AcpSession:
    """One ACP session: its id, the agent of its folder, and the front end that answers it."""

    def __init__(self, root: Path, frontend: AcpFrontend) -> None:
        self.id, self.root, self.frontend = "", root, frontend
        self.agent = FolderAgent(root.resolve(), root.as_uri(), frontend, Toolbox())
        self.prompting: asyncio.Task[PromptResponse] | None = None  # the prompt being answered
        self.title = ""  # the conversation's, as the client was last told

    async def options_changed(self) -> None:
        options = await config_options(self.agent)
        self.frontend.outbox.put(ConfigOptionUpdate(session_update="config_option_update", config_options=options))

    async def turn(self, asked: Asked) -> StopReason:
        """Run one turn; its stop reason."""
        before = self.frontend.turn
        try:
            editor = await render(EditorContext(self.agent.root, trusted=self.agent.settings.trusted))  # cwd: git's state
            context = "\n\n".join(part for part in (asked.context, editor) if part)
            result = await self.agent.turn(asked.prompt, context=context, images=asked.images)
        except Refused as error:
            raise RequestError(-32600, str(error)) from None
        title = self.title or preview(asked.prompt or asked.context, TITLE_LENGTH)  # the first prompt's, as stored
        self.frontend.outbox.put(
            SessionInfoUpdate(
                session_update="session_info_update", updated_at=now(), title=title if title != self.title else None
            )
        )
        self.title = title
        if result["error"] and not result["cancelled"]:
            turn = self.frontend.turn
            said = turn is not before and turn is not None and turn.said  # None: it failed before it began
            self.frontend.outbox.put(update_agent_message_text(("\n\n" if said else "") + result["reply"]))
        await self.frontend.outbox.sent()
        return STOP_REASONS[result["stopReason"]]

    def cancel(self) -> None:
        """Stop the prompt: a running turn through its agent (it ends cancelled, and is stored so);
        anything before or instead of a turn (the plugins question, reading attached files, a slash
        command such as /compact) where it is."""
        if not self.agent.cancel() and self.prompting is not None:
            self.prompting.cancel()
