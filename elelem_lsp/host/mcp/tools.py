"""A server's tools as the model is offered them: listed page after page, named ``NAME__tool``
(those whose name no model API takes left out), described with the server's JSON schema made lean
(``agent.lean_schema``: no generated titles, references inlined, every limit kept), and the server's
schema made a validator for the call's arguments."""

from __future__ import annotations

import logging
import re
from typing import Any

from ...agent.lean_schema import lean_schema
from ...agent.messages import ToolDefinition

log = logging.getLogger(__name__)

SEPARATOR = "__"
TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")  # what the model APIs accept as a function's name


def offered(server: str, tools: list[Any]) -> tuple[dict[str, Any], list[str]]:
    """The server's tools, as the model is offered them: those whose name a model API takes; and the
    names of those left out."""
    offered = {tool.name: tool for tool in tools if TOOL_NAME.match(f"{server}{SEPARATOR}{tool.name}")}
    unnamed = sorted(tool.name for tool in tools if tool.name not in offered)
    if unnamed:
        log.warning(
            "MCP server %s: tools left out, their names do not fit [A-Za-z0-9_-]{1,64}: %s",
            server,
            ", ".join(unnamed),
        )
    return offered, unnamed


def definition(server: str, tool: Any) -> ToolDefinition:
    return {
        "type": "function",
        "function": {
            "name": f"{server}{SEPARATOR}{tool.name}",
            "description": tool.description or "",
            "parameters": lean_schema(tool.input_schema),  # as a model needs it: titles gone, references inlined
        },
    }


def schema_validator(schema: Any) -> Any:
    """A jsonschema validator of a tool's input schema (None when the schema itself is broken)."""
    import jsonschema

    cls = jsonschema.validators.validator_for(schema)
    try:
        cls.check_schema(schema)
        return cls(schema)
    except jsonschema.SchemaError:
        return None  # the server will judge the arguments itself


async def list_tools(client: Any) -> list[Any]:
    """Every tool the server lists, page after page."""
    tools: list[Any] = []
    cursor = None
    while True:
        page = await client.list_tools(cursor=cursor)
        tools += page.tools
        cursor = page.next_cursor
        if not cursor:
            return tools
