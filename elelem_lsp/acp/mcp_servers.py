"""The MCP servers an ACP client hands a session (``session/new``'s ``mcpServers``), in the shape
of the ``mcpServers`` setting that the folder agent attaches."""

from __future__ import annotations

from typing import Any

from acp.schema import HttpMcpServer, McpServerStdio

from .errors import invalid


def mcp_config(servers: list[Any]) -> dict[str, Any]:
    """ACP's ``mcpServers`` list as the ``mcpServers`` setting's shape: ``{NAME: {command, args,
    env}}`` for stdio, ``{NAME: {url, headers}}`` for streamable HTTP (SSE and ACP-routed servers
    are not supported: refused by name)."""
    config: dict[str, Any] = {}
    for index, server in enumerate(servers):
        if isinstance(server, McpServerStdio):
            config[server.name] = {
                "command": server.command,
                "args": list(server.args),
                "env": {variable.name: variable.value for variable in server.env},
            }
        elif isinstance(server, HttpMcpServer):
            config[server.name] = {"url": server.url, "headers": {h.name: h.value for h in server.headers}}
        else:
            raise invalid(f"mcpServers[{index}]", f"{server.type} MCP servers are not supported; use stdio or http")
    return config
