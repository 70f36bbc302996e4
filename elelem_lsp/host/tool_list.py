"""The tools a face lists for its folders: the built-in ones, the editor's and each MCP server's.

Bridges the folder agents to a face's tool listing (the LSP face's ``elelem.tools``, the ACP
face's ``/tools``): what a model could be offered, named once each, in the order a model sees
them. The editor's tools are listed where the folder's face answers them; an MCP server's once
it is ready, with its ``server``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from ..agent.editor_tools import offered_definitions
from ..agent.toolbox import Toolbox
from .frontend import Documents
from .mcp import McpServers


class ToolHolder(Protocol):
    """A folder agent, as far as its tools go."""

    @property
    def frontend(self) -> Documents: ...

    @property
    def mcp(self) -> McpServers: ...


def listed_tools(toolbox: Toolbox, agents: Iterable[ToolHolder]) -> dict[str, Any]:
    """The built-in tools, then each running MCP server's of the agents (with its ``server``)."""
    listed: list[dict[str, Any]] = [{**d["function"]} for d in toolbox.definitions()]
    seen = {tool["name"] for tool in listed}
    for agent in agents:  # those the editor answers (``diagnostics``...), where its face offers them
        for definition in offered_definitions(agent.frontend.insight.offers):
            if definition["function"]["name"] not in seen:
                seen.add(definition["function"]["name"])
                listed.append({**definition["function"]})
    for agent in agents:
        for connection in agent.mcp.connections.values():
            for definition in connection.definitions() if connection.state == "ready" else []:
                if definition["function"]["name"] not in seen:
                    seen.add(definition["function"]["name"])
                    listed.append({**definition["function"], "server": connection.name})
    return {"tools": listed}
