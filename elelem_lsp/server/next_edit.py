"""Next edit over LSP: the custom request ``elelem/nextEdit`` answered by ``elelem_lsp/nextedit``.

Bridges pygls' open documents and the host's folder agents to the next-edit service, which knows
neither: only a client that announces ``capabilities.experimental.elelem.nextEdit`` has its
changes kept (``changed``, called by the protocol before pygls applies each change), positions
in the negotiated encoding become code points and the edits go back in it, the folder's
``nextEdit`` settings pick the provider (by default completion's, built the way completion
builds it), a private file is never sent, and each suggestion is counted beside completion's
(``elelem.completionAccepted`` records its acceptance too).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Protocol

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcInvalidParams
from pygls.workspace import TextDocument

from .documents import document_name, document_path

if TYPE_CHECKING:
    from ..completion.counts import Counts
    from ..host.folder_agent import FolderAgent
    from ..nextedit.service import NextEdits
    from .completion import InlineCompletions
    from .next_edit_params import Position
    from .router import LspRouter

NEXT_EDIT = "elelem/nextEdit"


class NextEditBridge:
    def __init__(self, router: LspRouter, completions: InlineCompletions) -> None:
        self.router, self.completions = router, completions
        self._service: NextEdits | None = None
        self.counts: dict[str, Counts] = {}  # folder uri -> what next edit did there

    @property
    def announced(self) -> bool:
        """Whether the client asked for next edits (a plain client is never sent or kept anything for them)."""
        capabilities = self.router.server.client_capabilities
        experimental = capabilities.experimental if capabilities is not None else None
        elelem = experimental.get("elelem") if isinstance(experimental, dict) else None
        return isinstance(elelem, dict) and elelem.get("nextEdit") is True

    @property
    def service(self) -> NextEdits:
        if self._service is None:
            from ..nextedit.service import NextEdits

            self._service = NextEdits()
        return self._service

    # -- documents --------------------------------------------------------------------
    def changed(self, document: TextDocument, before: Sequence[str], change: Any) -> None:
        """One change applied to ``document`` (whose lines were ``before``)."""
        lines = (
            (change.range.start.line, change.range.end.line) if isinstance(change, lsp.TextDocumentContentChangePartial) else None
        )
        self.service.changed(document.uri, self._name(document), before, document.lines, lines)

    def closed(self, uri: str) -> None:
        if self._service is not None:
            self._service.closed(uri)

    # -- the request -------------------------------------------------------------------
    async def request(self, raw: Any) -> dict[str, Any] | None:
        from .next_edit_params import parsed  # pydantic, imported after initialize

        params = parsed(raw)
        uri = params.text_document.uri
        workspace = self.router.server.workspace
        document = workspace.text_documents.get(uri)
        if document is None:
            return None  # never opened: nothing the editor shows
        path = document_path(uri)
        agent = self.router.agent_for(uri)
        completion = await self.completions.settings_of(agent)
        settings = agent.settings.next_edit
        if path is not None and self.completions.engine.private(agent.uri, agent.root, path, completion.exclude):
            return None
        name, provider, model = self.completions.provider_of(agent, _provider_settings(settings, completion))
        enabled = settings.enabled if settings.enabled is not None else completion.enabled
        from ..completion.routing import is_local
        from ..nextedit.asking import Tokens, answer, route_of

        if not (enabled if enabled is not None else is_local(name, provider)):
            return None
        lines = [line.rstrip("\r\n") for line in document.lines]
        if params.position.line >= max(len(lines), 1):
            raise JsonRpcInvalidParams(f"position: line {params.position.line} is past the document's end")
        if not lines:
            return None
        cursor = document.position_codec.position_from_client_units(document.lines, _lsp_position(params.position))
        route = route_of(settings.api, model, provider)
        counts = self._counts(agent)
        tokens = Tokens()
        started = time.monotonic()

        async def ask(prompt: str) -> str:
            try:
                return await answer(route, provider, prompt, settings.max_tokens, tokens)
            finally:
                counts.model_request(model, tokens.read or len(prompt) // 4, tokens.written or 0, agent.settings.prices)

        try:
            suggestion = await self.service.suggest(uri, self._name(document), lines, cursor.line, cursor.character, ask)
        except Exception as error:  # a provider's failure: logged, never a popup; nothing is suggested
            self.completions.log(f"elelem: next edit from {name!r} failed: {error}")
            return None
        if suggestion is None:
            return None
        counts.shown += 1
        counts.latencies.append((time.monotonic() - started) * 1000)
        self.completions.engine.acceptances.shown(suggestion.id, counts, sum(len(edit.text) for edit in suggestion.edits))
        edits = [
            {
                "range": _client_range(document, edit.start_line, edit.start_char, edit.end_line, edit.end_char),
                "newText": edit.text,
            }
            for edit in suggestion.edits
        ]
        return {"id": suggestion.id, "edits": edits}

    def summary(self, agent: FolderAgent) -> dict[str, Any]:
        return self._counts(agent).summary()

    def _counts(self, agent: FolderAgent) -> Counts:
        from ..completion.counts import Counts

        return self.counts.setdefault(agent.uri, Counts())

    def _name(self, document: TextDocument) -> str:
        try:
            path = document_path(document.uri)
        except JsonRpcInvalidParams:
            path = None
        if path is None:
            return document.uri
        return document_name(path, self.router.agent_for(document.uri).root)


class HasNextEdits(Protocol):
    next_edit: NextEditBridge


def _provider_settings(settings: Any, completion: Any) -> Any:
    """Which provider and model next edit asks: its own settings', else completion's."""
    if settings.provider is None:
        return SimpleNamespace(provider=completion.provider, model=settings.model or completion.model)
    return SimpleNamespace(provider=settings.provider, model=settings.model)


def _lsp_position(position: Position) -> lsp.Position:
    return lsp.Position(line=position.line, character=position.character)


def _client_range(document: TextDocument, start_line: int, start_char: int, end_line: int, end_char: int) -> dict[str, Any]:
    converted = document.position_codec.range_to_client_units(
        document.lines,
        lsp.Range(start=lsp.Position(line=start_line, character=start_char), end=lsp.Position(line=end_line, character=end_char)),
    )
    return {
        "start": {"line": converted.start.line, "character": converted.start.character},
        "end": {"line": converted.end.line, "character": converted.end.character},
    }
