"""Host: the folder agents behind a face, in no protocol's terms.

A registry: one ``folder_agent.FolderAgent`` per workspace folder the face has, found by the
path a request names; what concerns every folder at once (settings changed, readying the
first turn, the tool list, reloading plugins, shutting down) is asked of each agent here. A
face answers ``BadRequest`` and ``Refused`` (``frontend``) with its protocol's errors.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from ..agent.toolbox import Toolbox
from .folder_agent import FolderAgent
from .frontend import BadRequest, Frontend
from .tool_list import listed_tools


class Host:
    def __init__(self, frontend: Frontend) -> None:
        self.frontend = frontend
        self.toolbox = Toolbox()  # one for every agent, and for answering which tools there are
        self.agents: dict[str, FolderAgent] = {}

    def sync_folders(self, roots: dict[str, Path]) -> None:
        """The front end's folders now (id -> root); a folder that left has its turn cancelled."""
        for uri, root in roots.items():
            if uri not in self.agents:
                self.agents[uri] = FolderAgent(root.resolve(), uri, self.frontend, self.toolbox)
        for uri in set(self.agents) - set(roots):
            self.agents.pop(uri).close()

    def agent_for(self, path: Path | None, named: str = "") -> FolderAgent:
        """The agent of the innermost folder containing ``path``; the first folder's for None."""
        if path is None:
            return next(iter(self.agents.values()))
        matches = [a for a in self.agents.values() if path == a.root or a.root in path.parents]
        if not matches:
            raise BadRequest(f"uri: {named or path} is not inside a workspace folder")
        return max(matches, key=lambda a: len(a.root.parts))

    async def settings_changed(self) -> None:
        """The front end says settings changed: take them again, now."""
        for agent in list(self.agents.values()):
            agent.settings_fresh = False
            await agent.refresh_settings()

    async def prepare(self) -> None:
        """Ready each folder's provider, and the conversation it continues, ahead of its first turn."""
        for agent in list(self.agents.values()):
            await agent.prepare()

    def tools(self) -> dict[str, Any]:
        """The built-in tools, then each running MCP server's (with its ``server``)."""
        return listed_tools(self.toolbox, self.agents.values())

    def reload(self) -> dict[str, Any]:
        """Load plugin files again and restart the MCP servers (each when a turn next needs it)."""
        failures: list[str] = []
        for agent in self.agents.values():
            failures += agent.reload()
        return {"pluginErrors": failures}

    async def shutdown(self) -> None:
        """The front end is going away: stop every folder's turn and MCP servers, and wait for them."""
        await asyncio.gather(*(agent.shutdown() for agent in list(self.agents.values())))
