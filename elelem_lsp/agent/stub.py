"""The stub provider of elelem's core: no model, a fixed and predictable reply."""

from __future__ import annotations

from .messages import Emit, Message, ToolDefinition


class StubProvider:
    def fetch(self, messages: list[Message], tools: list[ToolDefinition], emit: Emit) -> None:
        emit({"type": "thinking", "text": "considering the request"})
        if messages and messages[-1]["role"] == "tool":
            emit({"type": "saying", "text": "done."})
            return
        emit({"type": "saying", "text": "let me check."})
        if tools:
            emit({"type": "doing", "id": "stub-1", "name": tools[0]["function"]["name"], "arguments": {}})
