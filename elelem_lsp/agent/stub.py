"""The stub provider of elelem's core: no model, a fixed and predictable reply.

Its one tool call is a demo: the first tool that needs no argument (``list``
among the built-ins), so the demo turn succeeds instead of showing an error.
"""

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
            emit({"type": "doing", "id": "stub-1", "name": demo_tool(tools), "arguments": {}})


def demo_tool(tools: list[ToolDefinition]) -> str:
    """The first tool whose parameters are all optional, else the first tool."""
    for tool in tools:
        if not tool["function"].get("parameters", {}).get("required"):
            return tool["function"]["name"]
    return tools[0]["function"]["name"]
