"""Inline completion over LSP: ``textDocument/inlineCompletion`` (and, with ``completion.menu``,
``textDocument/completion``) answered by the completion engine (``elelem_lsp/completion``).

Bridges pygls' open documents and the host's folder agents to the engine, which knows neither:
the cursor in the negotiated position encoding becomes an offset in the text, the other open
documents go most recently edited first (``didChange`` is watched for that), the folder's
``completion`` settings and provider come through the folder agent's public members (its own
provider reused when the completion asks for the same one), and the suggestion becomes an item
whose command records its acceptance. The engine is imported on the first request, off the
start-up path.
"""

from __future__ import annotations

import logging
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcInvalidParams
from pygls.workspace import TextDocument

from .documents import document_name, document_path, named_path

if TYPE_CHECKING:
    from ..completion.engine import CompletionEngine, FolderSource
    from ..completion.settings import CompletionSettings
    from ..host.folder_agent import FolderAgent
    from .router import LspRouter

ACCEPTED = "elelem.completionAccepted"
WORD_END = re.compile(r"\w+$")

logger = logging.getLogger(__name__)


class InlineCompletions:
    def __init__(self, router: LspRouter) -> None:
        self.router = router
        self._engine: CompletionEngine | None = None
        self.edited: dict[str, tuple[float, int]] = {}  # uri -> (when, line) of its last change
        self.built: dict[str, tuple[tuple[Any, ...], Any]] = {}  # folder -> (what was built, provider)
        self.told: dict[str, list[str]] = {}  # folder -> the settings problems said

    @property
    def engine(self) -> CompletionEngine:
        if self._engine is None:
            from ..completion.engine import CompletionEngine

            self._engine = CompletionEngine()
            self._engine.on_failure = self.log
        return self._engine

    def log(self, message: str) -> None:
        self.router.server.window_log_message(lsp.LogMessageParams(type=lsp.MessageType.Warning, message=message))

    # -- documents --------------------------------------------------------------------
    def changed(self, params: lsp.DidChangeTextDocumentParams) -> None:
        line = 0
        for change in params.content_changes:
            if isinstance(change, lsp.TextDocumentContentChangePartial):
                line = change.range.start.line
        self.edited[params.text_document.uri] = (time.monotonic(), line)

    def closed(self, uri: str) -> None:
        self.edited.pop(uri, None)
        if self._engine is not None:
            self._engine.closed(uri)

    # -- the requests ----------------------------------------------------------------
    async def inline(self, params: lsp.InlineCompletionParams) -> lsp.InlineCompletionList:
        invoked = params.context.trigger_kind == lsp.InlineCompletionTriggerKind.Invoked
        suggestion = await self._suggest(params.text_document.uri, params.position, invoked=invoked)
        if suggestion is None:
            return lsp.InlineCompletionList(items=[])
        at = lsp.Range(start=params.position, end=params.position)
        command = lsp.Command(title="elelem: suggestion accepted", command=ACCEPTED, arguments=[{"id": suggestion.id}])
        return lsp.InlineCompletionList(items=[lsp.InlineCompletionItem(insert_text=suggestion.text, range=at, command=command)])

    async def menu(self, params: lsp.CompletionParams) -> lsp.CompletionList:
        """The suggestion as a completion item, for clients without inline completion (``completion.menu``)."""
        empty = lsp.CompletionList(is_incomplete=True, items=[])
        agent = self._agent(params.text_document.uri)
        if agent is None or not (await self.settings_of(agent)).menu:
            return empty
        suggestion = await self._suggest(params.text_document.uri, params.position)
        if suggestion is None:
            return empty
        # The edit starts at the word being typed, so that a client filtering by it keeps the item.
        document = self.router.server.workspace.get_text_document(params.text_document.uri)
        lines = document.lines
        cursor = document.position_codec.position_from_client_units(lines, params.position)
        content = lines[cursor.line].rstrip("\r\n") if cursor.line < len(lines) else ""
        character = min(cursor.character, len(content))  # past the line's end is at its end, not after its break
        word = WORD_END.search(content[:character])
        typed = word.group() if word else ""
        start = document.position_codec.position_to_client_units(
            lines, lsp.Position(line=cursor.line, character=character - len(typed))
        )
        text = typed + suggestion.text
        command = lsp.Command(title="elelem: suggestion accepted", command=ACCEPTED, arguments=[{"id": suggestion.id}])
        item = lsp.CompletionItem(
            label=(text.split("\n", 1)[0].strip() or text.strip())[:60],
            kind=lsp.CompletionItemKind.Text,
            detail="elelem",
            text_edit=lsp.TextEdit(range=lsp.Range(start=start, end=params.position), new_text=text),
            filter_text=text.split("\n", 1)[0],
            command=command,
        )
        return lsp.CompletionList(is_incomplete=True, items=[item])

    def accept(self, item: str, chars: int | None) -> bool:
        return self._engine is not None and self._engine.accept(item, chars)

    def counts(self, agent: FolderAgent) -> dict[str, Any]:
        from ..completion.counts import Counts

        return self._engine.counts(agent.uri) if self._engine is not None else Counts().summary()

    async def _suggest(self, uri: str, position: lsp.Position, *, invoked: bool = False) -> Any:
        """The engine's suggestion; a failure of ours is logged and answered with none, never a popup."""
        try:
            return await self._ask(uri, position, invoked)
        except JsonRpcInvalidParams:
            raise
        except Exception as error:  # the editor asks at every pause: a popup each time would be worse than nothing
            logger.exception("inline completion failed")
            self.log(f"elelem: inline completion failed: {type(error).__name__}: {error}")
            return None

    async def _ask(self, uri: str, position: lsp.Position, invoked: bool) -> Any:
        from ..completion.context import OpenText
        from ..completion.engine import Ask

        workspace = self.router.server.workspace
        document = workspace.text_documents.get(uri) or workspace.text_documents.get(_unquoted(uri))
        if document is None:
            return None  # never opened: nothing the editor shows
        path = document_path(uri)
        agent = self._agent(uri)
        if agent is None:
            return None
        if path is not None and self.engine.private(
            agent.uri, agent.root, named_path(uri, path), agent.settings.completion.exclude
        ):
            return None  # a private file under the name the editor shows (a symlink to an ordinary one)
        lines = document.lines
        if position.line > len(lines):
            raise JsonRpcInvalidParams(f"position: line {position.line} is past the document's end")
        offset = cursor_offset(document, lines, position)
        text = document.source
        active = OpenText(self._name(document.uri, path, agent.root), document.language_id or _language(path), text)

        def others() -> list[tuple[Path | None, OpenText]]:
            found = []
            for other_uri, other in workspace.text_documents.items():
                if other_uri in (uri, document.uri):
                    continue
                try:
                    other_path = document_path(other_uri)
                except JsonRpcInvalidParams:
                    other_path = None
                if other_path is not None and self._private_elsewhere(agent, other_uri, other_path):
                    continue
                edited = self.edited.get(other_uri, (0.0, 0))
                opened = OpenText(self._name(other_uri, other_path, agent.root), other.language_id or "", other.source, edited[1])
                found.append((edited[0], other_path, opened))
            found.sort(key=lambda entry: entry[0], reverse=True)
            return [(other_path, opened) for _, other_path, opened in found]

        ask = Ask(uri, self._source(agent), path, active, offset, others, invoked)
        return await self.engine.complete(ask)

    def _private_elsewhere(self, agent: FolderAgent, uri: str, path: Path) -> bool:
        """Whether a document of another workspace folder is private by that folder's own rules
        (its ``.gitignore``, its ``exclude``); the asking folder's rules the engine applies itself."""
        owner = self._agent(uri)
        if owner is None or owner is agent:
            return False
        return self.engine.private(owner.uri, owner.root, path, owner.settings.completion.exclude)

    def _agent(self, uri: str) -> FolderAgent | None:
        """The folder agent of a document; None for one outside every folder (asked about at each
        pause in typing, it gets no suggestion rather than an error each time)."""
        try:
            return self.router.agent_for(uri)
        except JsonRpcInvalidParams:
            return None

    @staticmethod
    def _name(uri: str, path: Path | None, root: Path) -> str:
        return uri if path is None else document_name(path, root)

    # -- the folder, through its agent ---------------------------------------------------
    def _source(self, agent: FolderAgent) -> FolderSource:
        from ..completion.engine import FolderSource

        return FolderSource(
            agent.uri,
            agent.root,
            lambda: self.settings_of(agent),
            lambda settings: self.provider_of(agent, settings),
            lambda: agent.settings.prices,
        )

    async def settings_of(self, agent: FolderAgent) -> CompletionSettings:
        if not agent.settings_fresh:
            await agent.refresh_settings()
        settings = agent.settings.completion
        if settings.problems and settings.problems != self.told.get(agent.uri):
            self.told[agent.uri] = settings.problems
            agent.frontend.show_message("warning", "elelem: " + "; ".join(settings.problems))
        return settings

    def provider_of(self, agent: FolderAgent, settings: Any) -> tuple[str, Any, str | None]:
        """The provider the settings name: the folder's own (built once) unless they name another."""
        folder = agent.provider_choice.choice()
        name = settings.provider or folder.name
        model = settings.model or (folder.model if name == folder.name else None)
        own = name == folder.name and model == folder.model
        if own and agent.session is not None and not agent.provider_choice.stale(folder):
            return name, agent.session.provider, model  # the folder's, loaded once (a local model)
        wanted = (id(agent.provider_choice.config), name, model)
        built = self.built.get(agent.uri)
        if built is None or built[0] != wanted:
            options = {"model": model} if model else {}
            built = (wanted, agent.provider_choice.config.build(name, **options))
            self.built[agent.uri] = built
        return name, built[1], model


class HasCompletions(Protocol):
    completion: InlineCompletions


def cursor_offset(document: TextDocument, lines: list[str], position: lsp.Position) -> int:
    """The cursor's offset in the text; a character past a line's end is its end (pygls would put
    it before the last character of a last line without a line break)."""
    line = lines[position.line] if position.line < len(lines) else ""
    content = line.rstrip("\r\n")
    if position.character >= document.position_codec.client_num_units(content):
        return sum(len(earlier) for earlier in lines[: position.line]) + len(content)
    return document.offset_at_position(position)


def _unquoted(uri: str) -> str:
    from urllib.parse import unquote

    return unquote(uri)


def _language(path: Path | None) -> str:
    return path.suffix.lstrip(".") if path is not None else ""
