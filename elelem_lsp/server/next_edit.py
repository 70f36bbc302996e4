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

import functools
import re
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Protocol

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcInvalidParams
from pygls.workspace import PositionCodec, TextDocument

from .documents import document_name, document_path, named_path

if TYPE_CHECKING:
    from ..completion.counts import Counts
    from ..host.folder_agent import FolderAgent
    from ..nextedit.history import Edit
    from ..nextedit.service import NextEdits
    from .completion import InlineCompletions
    from .next_edit_params import Position
    from .router import LspRouter

NEXT_EDIT = "elelem/nextEdit"
LINE_BREAK = re.compile(r"\r\n|\r|\n")
SPLIT_DOCUMENTS = 4  # documents whose lines are kept split between keystrokes
# Set as each request arrives, so the request's handler (a task started then) sees its own
ASKED: ContextVar[tuple[str, str, list[tuple[str, Edit]]] | None] = ContextVar("elelem_next_edit_asked", default=None)


class NextEditBridge:
    def __init__(self, router: LspRouter, completions: InlineCompletions) -> None:
        self.router, self.completions = router, completions
        self._service: NextEdits | None = None
        self.counts: dict[str, Counts] = {}  # folder uri -> what next edit did there
        self.told: dict[str, list[str]] = {}  # folder uri -> the problems of its nextEdit settings said
        # document uri -> its text and its lines as last changed, for the few documents last typed in
        self._split: OrderedDict[str, tuple[str, Sequence[str]]] = OrderedDict()

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
    def changed(self, document: TextDocument, before: str, changes: Sequence[Any]) -> None:
        """``changes`` (one didChange's) applied to ``document``, whose text was ``before``."""
        only = changes[0] if len(changes) == 1 else None  # several: compared as a whole text is
        lines = None
        if isinstance(only, lsp.TextDocumentContentChangePartial):
            lines = (only.range.start.line, only.range.end.line)
        # The lines split after the last change are the lines before this one: a big document is
        # split once a keystroke, not twice.
        known = self._split.pop(document.uri, None)
        before_lines = known[1] if known is not None and known[0] is before else before.splitlines(True)
        after, after_lines = document.source, document.lines
        self._split[document.uri] = (after, after_lines)
        if len(self._split) > SPLIT_DOCUMENTS:
            self._split.popitem(last=False)
        self.service.changed(document.uri, self._name(document), before_lines, after_lines, lines)

    def closed(self, uri: str) -> None:
        self._split.pop(uri, None)
        if self._service is not None:
            self._service.closed(uri)

    # -- the request -------------------------------------------------------------------
    def arrived(self, method: str, params: Any) -> None:
        """A request as it arrives: for ``elelem/nextEdit``, the text its position is in, kept for
        its handler, which starts only after the messages read with it (a keystroke) are handled."""
        if method != NEXT_EDIT:
            ASKED.set(None)  # the tasks of other requests carry no document text along
            return
        uri = getattr(getattr(params, "textDocument", None), "uri", None)
        if not isinstance(uri, str) or (document := self.router.server.workspace.text_documents.get(uri)) is None:
            ASKED.set(None)  # malformed or never opened: the handler says so
            return
        ASKED.set((uri, document.source, self.service.history.snapshot()))

    async def request(self, raw: Any) -> dict[str, Any] | None:
        from .next_edit_params import parsed  # pydantic, imported after initialize

        params = parsed(raw)
        uri = params.text_document.uri
        workspace = self.router.server.workspace
        document = workspace.text_documents.get(uri)
        if document is None:
            return None  # never opened: nothing the editor shows
        asked = ASKED.get()  # the text the position is in, and the edits before it, as the request arrived
        if asked is None or asked[0] != uri:
            asked = (uri, document.source, self.service.history.snapshot())
        _, source, kept = asked
        codec = document.position_codec
        lines, line, character = cursor_in(source, params.position, codec)
        if lines == [""]:
            return None  # an empty document: nothing to follow from
        path = document_path(uri)
        try:
            agent = self.router.agent_for(uri)
        except JsonRpcInvalidParams:
            return None  # outside every folder: no folder's settings say a model may read it
        completion = await self.completions.settings_of(agent)
        settings = agent.settings.next_edit
        if settings.problems and settings.problems != self.told.get(agent.uri):  # said once, not at every pause
            self.told[agent.uri] = settings.problems
            agent.frontend.show_message("warning", "elelem: " + "; ".join(settings.problems))
        if path is not None and self._private(agent, uri, path, completion.exclude):
            return None
        try:
            name, provider, model = self.completions.provider_of(agent, _provider_settings(settings, completion))
        except Exception as error:  # an unknown provider, one that cannot be built: logged, never a popup
            self.completions.log(f"elelem: next edit has no provider: {error}")
            return None
        enabled = settings.enabled if settings.enabled is not None else completion.enabled
        from ..completion.routing import is_local
        from ..nextedit.asking import Tokens, answer, route_of

        if not (enabled if enabled is not None else is_local(name, provider)):
            return None
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
            shared = self._shareable(agent, completion.exclude)
            suggestion = await self.service.suggest(uri, self._name(document), lines, line, character, ask, shared, kept)
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
                "range": {
                    "start": client_position(lines, edit.start_line, edit.start_char, codec),
                    "end": client_position(lines, edit.end_line, edit.end_char, codec),
                },
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

    def _shareable(self, agent: FolderAgent, exclude: list[str]) -> Callable[[str], bool]:
        """Whose recent edits a request of ``agent``'s folder may send: its own documents', not a private file's."""

        @functools.cache  # asked for each edit: once a document
        def shareable(uri: str) -> bool:
            try:
                path = document_path(uri)
                if self.router.agent_for(uri) is not agent:
                    return False  # another folder's, perhaps for another provider
            except JsonRpcInvalidParams:
                return False  # outside every folder
            return path is None or not self._private(agent, uri, path, exclude)

        return shareable

    def _private(self, agent: FolderAgent, uri: str, path: Path, exclude: list[str]) -> bool:
        """Whether the folder's rules keep the document from any model, by the path the editor names
        as well as by the file it resolves to (a ``.env`` linked to an ordinary name is a ``.env``)."""
        private = self.completions.engine.private
        return private(agent.uri, agent.root, path, exclude) or private(agent.uri, agent.root, named_path(uri, path), exclude)

    def _name(self, document: TextDocument) -> str:
        try:
            path = document_path(document.uri)
        except JsonRpcInvalidParams:
            path = None
        if path is None:
            return document.uri
        try:
            return document_name(path, self.router.agent_for(document.uri).root)
        except JsonRpcInvalidParams:  # outside every folder: kept under its URI, sent with no folder's prompt
            return document.uri


class HasNextEdits(Protocol):
    next_edit: NextEditBridge


def _provider_settings(settings: Any, completion: Any) -> Any:
    """Which provider and model next edit asks: its own settings', else completion's."""
    if settings.provider is None:
        return SimpleNamespace(provider=completion.provider, model=settings.model or completion.model)
    return SimpleNamespace(provider=settings.provider, model=settings.model)


def cursor_in(source: str, position: Position, codec: PositionCodec) -> tuple[list[str], int, int]:
    """The lines of ``source`` and the cursor's line and character (code points) in them; a line past
    the end is InvalidParams. The empty line after the last break is kept only when the cursor is there."""
    lines = lines_of(source)
    if position.line >= len(lines):
        raise JsonRpcInvalidParams(f"position.line: {position.line} is past the document's end ({len(lines)} lines)")
    character = code_points(lines[position.line], position.character, codec)
    if position.line < len(lines) - 1 and lines[-1] == "":
        lines.pop()
    return lines, position.line, character


def lines_of(text: str) -> list[str]:
    """The lines of ``text`` as LSP counts them (LF, CRLF or CR ends one), without their breaks;
    a text ending with a break has an empty last line, where the person may be typing."""
    return LINE_BREAK.split(text)


def code_points(line: str, units: int, codec: PositionCodec) -> int:
    """The code point ``units`` of the client's encoding reach in ``line``; past its end, its end."""
    counted = 0
    for index, char in enumerate(line):
        if counted >= units:
            return index
        counted += codec.client_num_units(char)
    return len(line)


def client_position(lines: list[str], line: int, character: int, codec: PositionCodec) -> dict[str, int]:
    """A position in code points as the client counts it, in ``lines`` (the text the request saw)."""
    return {"line": line, "character": codec.client_num_units(lines[line][:character])}
