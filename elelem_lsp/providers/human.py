"""The ``human`` provider: a person types the reply.

Bridges the provider contract to the Workspace of the running turn: the
terminal clients read a line, an editor answers the server's ``elelem/input``
request with an input box. The typed text is the reply; no tools are asked for.
"""

from __future__ import annotations

from typing import Any

from ..agent.messages import Emit, Message, ProviderError, ToolDefinition
from ..agent.workspace import current_workspace

PROMPT_LENGTH = 2000


def prompt_for(messages: list[Message]) -> str:
    """What the person answers: the latest message that is not the system prompt."""
    for message in reversed(messages):
        if message["role"] != "system":
            text = message.get("content", "")
            return text if len(text) <= PROMPT_LENGTH else text[: PROMPT_LENGTH - 1] + "…"
    return ""


class HumanProvider:
    async def fetch(self, messages: list[Message], tools: list[ToolDefinition], emit: Emit) -> None:
        workspace = current_workspace.get(None)
        if workspace is None:
            raise ProviderError("the human provider needs a person: run it in elelem-lsp ask/chat or an editor")
        text = await workspace.ask_user(prompt_for(messages))
        if text is None:
            raise ProviderError("no reply: the input was dismissed")
        if text:
            emit({"type": "saying", "text": text})


def factory(**_: Any) -> HumanProvider:
    return HumanProvider()
