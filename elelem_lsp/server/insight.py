"""LspInsight: the agent's Insight port, answered by an editor client of ours over LSP.

A client that can answer says so in ``initialize``:
``capabilities.experimental.elelem = {"diagnostics": true, "definition": true, ...}``; only
then is it sent ``elelem/diagnostics``, ``elelem/definition``, ``elelem/references`` or
``elelem/symbols`` (docs/contract.md, "The editor's language servers"). Positions go out in
the negotiated encoding and come back to code points; every request has a time limit.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer

from ..agent.insight import KINDS, Diagnostics, Insight, InsightUnavailable, Location, Problem, Symbol
from .documents import document_path

log = logging.getLogger(__name__)
# How long an editor may take to answer, beyond the wait asked for: a language server's first
# answer waits for it to load the project (TypeScript's, on a busy machine, well over 10 s).
ANSWER_SECONDS = 30.0
SYMBOL_KINDS = {kind.value: kind.name.lower() for kind in lsp.SymbolKind}
ZERO_RANGE = {"start": {"line": 0, "character": 0}}


class LspInsight(Insight):
    def __init__(self, server: LanguageServer) -> None:
        self.server = server

    @property
    def offers(self) -> frozenset[str]:
        capabilities = self.server.client_capabilities
        experimental = capabilities.experimental if capabilities is not None else None
        announced = experimental.get("elelem") if isinstance(experimental, dict) else None
        if not isinstance(announced, dict):
            return frozenset()
        return frozenset(kind for kind in KINDS if announced.get(kind) is True)

    async def _ask(self, method: str, params: dict[str, Any], seconds: float | None = None) -> Any:
        seconds = ANSWER_SECONDS if seconds is None else seconds  # looked up now: a test may shorten it
        try:
            return plain(await asyncio.wait_for(self.server.protocol.send_request_async(method, params), seconds))
        except TimeoutError:
            raise InsightUnavailable(f"the editor did not answer {method} within {seconds:g}s") from None
        except JsonRpcException as error:
            raise InsightUnavailable(f"the editor could not answer {method}: {error}") from None

    # -- positions ----------------------------------------------------------------
    def _uri(self, path: Path) -> str:
        for document in self.server.workspace.text_documents.values():
            if document.path and Path(document.path).resolve() == path:
                return document.uri  # the editor's own spelling of it
        return path.as_uri()

    def _position(self, uri: str, line: int, column: int, to_client: bool) -> tuple[int, int]:
        """A position converted between code points and the client's units, on the document's text."""
        try:
            document = self.server.workspace.get_text_document(uri)
            lines = document.lines
            codec = document.position_codec
            position = lsp.Position(line=line, character=column)
            converted = (
                codec.position_to_client_units(lines, position)
                if to_client
                else codec.position_from_client_units(lines, position)
            )
            return converted.line, converted.character
        except (OSError, ValueError, IndexError):  # not readable here (not a file, gone): as sent
            return line, column

    def _location(self, uri: Any, range_: Any) -> Location | None:
        """A location the client sent; None for one that is not a file."""
        try:
            path = document_path(uri) if isinstance(uri, str) else None
            start = range_["start"]
            line, column = self._position(uri, int(start["line"]), int(start["character"]), to_client=False)
        except (JsonRpcException, KeyError, TypeError, ValueError):
            return None
        return Location(path, line, column) if path is not None else None

    # -- the four requests ----------------------------------------------------------
    async def diagnostics(self, paths: list[Path] | None, *, wait_ms: int = 0, since: int | None = None) -> Diagnostics:
        params: dict[str, Any] = {}
        if paths is not None:
            params["uris"] = [self._uri(path) for path in paths]
        if wait_ms:
            params["waitMs"] = wait_ms
            if since is not None:
                params["since"] = since
        answer = await self._ask("elelem/diagnostics", params, wait_ms / 1000 + ANSWER_SECONDS)
        problems, unchecked = [], set()
        for item in answer.get("items", []) if isinstance(answer, dict) else []:
            if not isinstance(item, dict):
                continue
            for diagnostic in item.get("diagnostics", []):
                problem = self._problem(item.get("uri"), diagnostic)
                if problem is not None:
                    problems.append(problem)
            if item.get("checked") is False and (location := self._location(item.get("uri"), ZERO_RANGE)) is not None:
                unchecked.add(location.path)
        generation = answer.get("generation") if isinstance(answer, dict) else None
        return Diagnostics(problems, generation if isinstance(generation, int) else None, frozenset(unchecked))

    def _problem(self, uri: Any, diagnostic: Any) -> Problem | None:
        if not isinstance(diagnostic, dict) or not isinstance(diagnostic.get("message"), str):
            return None
        location = self._location(uri, diagnostic.get("range"))
        if location is None:
            return None
        severity = diagnostic.get("severity")
        source, code = diagnostic.get("source"), diagnostic.get("code")
        return Problem(
            location.path,
            location.line,
            location.column,
            severity if severity in (1, 2, 3, 4) else 1,
            diagnostic["message"],
            source if isinstance(source, str) else None,
            str(code) if isinstance(code, (str, int)) and not isinstance(code, bool) else None,
        )

    async def _place(self, method: str, path: Path, line: int, column: int, **extra: Any) -> list[Location]:
        uri = self._uri(path)
        client_line, character = self._position(uri, line, column, to_client=True)
        params = {"uri": uri, "position": {"line": client_line, "character": character}, **extra}
        answer = await self._ask(method, params)
        found = answer if isinstance(answer, list) else [answer] if isinstance(answer, dict) else []
        locations = []
        for item in found:
            if not isinstance(item, dict):
                continue
            # a Location, or a LocationLink (targetUri, targetSelectionRange)
            uri_of, range_of = ("targetUri", "targetSelectionRange") if "targetUri" in item else ("uri", "range")
            location = self._location(item.get(uri_of), item.get(range_of))
            if location is not None:
                locations.append(location)
        return locations

    async def definition(self, path: Path, line: int, column: int) -> list[Location]:
        return await self._place("elelem/definition", path, line, column)

    async def references(self, path: Path, line: int, column: int, *, include_declaration: bool) -> list[Location]:
        return await self._place("elelem/references", path, line, column, includeDeclaration=include_declaration)

    async def symbols(self, path: Path | None, query: str) -> list[Symbol]:
        uri = self._uri(path) if path is not None else None
        answer = await self._ask("elelem/symbols", {"uri": uri} if uri else {"query": query})
        found: list[Symbol] = []
        self._gather(answer if isinstance(answer, list) else [], uri, None, found)
        return found

    def _gather(self, items: list[Any], uri: str | None, container: str | None, found: list[Symbol]) -> None:
        """Symbols as a flat list: a DocumentSymbol's children follow it, named by their container."""
        for item in items:
            if not isinstance(item, dict) or not isinstance(item.get("name"), str):
                continue
            if "location" in item:  # a SymbolInformation / WorkspaceSymbol
                where = item["location"] if isinstance(item["location"], dict) else {}
                location = self._location(where.get("uri"), where.get("range", ZERO_RANGE))
                parent = item.get("containerName") if isinstance(item.get("containerName"), str) else None
            else:  # a DocumentSymbol
                location = self._location(uri, item.get("selectionRange") or item.get("range"))
                parent = container
            if location is not None:
                number = item.get("kind")
                kind = SYMBOL_KINDS.get(number, "symbol") if isinstance(number, int) else "symbol"
                found.append(Symbol(item["name"], kind, location, parent or None))
            children = item.get("children")
            if isinstance(children, list):
                inner = f"{container}.{item['name']}" if container else item["name"]
                self._gather(children, uri, inner, found)


def plain(value: Any) -> Any:
    """An answer as JSON has it: pygls turns an object result into named tuples (lists it leaves)."""
    if isinstance(value, tuple) and hasattr(value, "_asdict"):
        return {key: plain(item) for key, item in value._asdict().items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    return value
