"""LspRouter: LSP requests to the host, the inbound half of the LSP face (``editor.LspFrontend``
is the outbound half, the host's ports).

It builds the host on first use (after initialize, off the start-up path), finds the folder
agent a document URI belongs to, keeps the host's folders in step with the editor's, tells it
that settings changed, readies the first turn, and names each running turn by the LSP request
that asked for it and by its progress token, so ``$/cancelRequest`` and
``window/workDoneProgress/cancel`` stop it.
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pygls.exceptions import JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer

from ..host.frontend import BadRequest
from .documents import document_path, folder_path
from .editor import LspFrontend

if TYPE_CHECKING:
    from ..agent.messages import Image
    from ..host.folder_agent import FolderAgent
    from ..host.host import Host

log = logging.getLogger(__name__)


class LspRouter:
    def __init__(self, server: LanguageServer, frontend: LspFrontend) -> None:
        self.server, self.frontend = server, frontend
        self._host: Host | None = None
        self.turns_by_request: dict[Any, FolderAgent] = {}
        self.turns_by_token: dict[Any, FolderAgent] = {}

    @property
    def host(self) -> Host:
        """The agent host, imported on first use (after initialize, off the start-up path)."""
        if self._host is None:
            from ..host.host import Host

            self._host = Host(self.frontend)
        return self._host

    @property
    def host_loaded(self) -> bool:
        return self._host is not None

    async def stop_host(self) -> None:
        """Stop what the host runs outside this process (MCP servers) before the server exits."""
        if self.host_loaded:
            await self.host.shutdown()

    # -- folders and settings --------------------------------------------------
    def agent_for(self, uri: str | None) -> FolderAgent:
        """The folder agent for a document URI (the first folder's for none); InvalidParams naming uri."""
        self.sync_folders()
        try:
            return self.host.agent_for(document_path(uri) if uri is not None else None, uri or "")
        except BadRequest as error:
            raise JsonRpcInvalidParams(str(error)) from None

    def sync_folders(self) -> None:
        workspace = self.server.workspace
        uris = list(workspace.folders) or [workspace.root_uri or Path.cwd().as_uri()]
        self.host.sync_folders({uri: folder_path(uri) for uri in uris})

    async def settings_changed(self) -> None:
        self.frontend.settings_pushed = True
        if self.host_loaded:
            await self.host.settings_changed()

    async def prepare_first_turn(self) -> None:
        """After initialize: import the agent and ready each folder's provider, off the event loop,
        so the first turn costs what a warm one does."""
        try:
            await self.frontend.register_for_settings()
            await asyncio.to_thread(importlib.import_module, f"{__package__}.commands")
            self.sync_folders()
            await self.host.prepare()
        except Exception:  # whatever failed here fails again, and is reported, in the turn
            log.info("preparing the first turn failed", exc_info=True)
        # The agent's modules (pydantic, httpx and the models: some 200,000 objects kept for the
        # process's life) left out of the collections a turn sets off, as the server's own are.
        gc.freeze()

    # -- turns and their cancellation ------------------------------------------
    async def turn(
        self, agent: FolderAgent, prompt: str, *, context: str, token: Any, request: Any, images: Sequence[Image] = ()
    ) -> dict[str, Any]:
        """The agent's turn, named by ``request`` and its progress token while it runs."""
        names: list[tuple[dict[Any, FolderAgent], Any]] = []

        def started(progress_token: Any) -> None:
            names.append((self.turns_by_request, request))
            if progress_token is not None:
                names.append((self.turns_by_token, progress_token))
            for table, key in names:
                table[key] = agent

        try:
            return await agent.turn(prompt, context=context, images=images, token=token, on_start=started)
        finally:
            for table, key in names:
                if table.get(key) is agent:
                    del table[key]

    def cancel_request(self, request: Any) -> None:
        agent = self.turns_by_request.get(request)
        if agent is not None:
            agent.cancel()

    def cancel_progress(self, token: Any) -> None:
        agent = self.turns_by_token.get(token)
        if agent is not None:
            agent.cancel()
