"""``definition``, ``references`` and ``symbols``: code navigation answered by the editor's language servers.

The model names a symbol as it is written on a line (a line and a column are easy to get
wrong); the tools find it there, ask the editor, and answer with ``file:line:col`` and the
text of that line.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, Field, model_validator

from ..insight import Location, place
from ..workspace import Workspace, WorkspaceError
from .base import Tool, ToolFailure

LIMIT = 100
SYMBOL_LIMIT = 200
LINE_SHOWN = 160  # characters of a found line shown beside its place


class PlaceArguments(BaseModel):
    path: str = Field(description="File path, relative to the workspace root")
    symbol: str = Field(min_length=1, description="The name as written in the file, e.g. 'total' or 'Parser.parse'")
    line: int | None = Field(
        default=None, ge=1, description="The 1-based line it is on; omitted: the first line where it appears"
    )


class ReferencesArguments(PlaceArguments):
    include_declaration: bool = Field(default=True, description="Count the declaration itself as a reference")


class SymbolsArguments(BaseModel):
    path: str | None = Field(default=None, description="A file: its symbols (classes, functions...), nested ones too")
    query: str | None = Field(default=None, description="Else: symbols of the whole workspace whose name matches this")

    @model_validator(mode="after")
    def one_of_them(self) -> SymbolsArguments:
        if (self.path is None) == (self.query is None):
            raise ValueError("give either path (a file's symbols) or query (the workspace's)")
        return self


def find_symbol(text: str, symbol: str, line: int | None) -> tuple[int, int]:
    """The 0-based line and code-point column of the last name of ``symbol`` (``parse`` of
    ``Parser.parse``) on ``line``, or on the first line it appears on as a whole word."""
    name = symbol.rsplit(".", 1)[-1]
    word = re.compile(rf"(?<![\w$]){re.escape(name)}(?![\w$])")
    lines = text.split("\n")
    candidates: Sequence[int]
    if line is not None:
        if line > len(lines):
            raise ToolFailure(f"line {line} is past the end ({len(lines)} lines)")
        candidates = [line - 1]
    else:
        candidates = range(len(lines))
    for number in candidates:
        match = word.search(lines[number]) or (re.search(re.escape(name), lines[number]) if line else None)
        if match:
            return number, match.start()
    where = f"on line {line}" if line is not None else "in the file"
    raise ToolFailure(f"{symbol!r} does not appear {where}")


async def located(args: PlaceArguments, workspace: Workspace) -> tuple[Path, int, int]:
    path = workspace.resolve(args.path)
    line, column = find_symbol(await workspace.read_text(path), args.symbol, args.line)
    return path, line, column


async def shown(locations: list[Location], workspace: Workspace, limit: int = LIMIT) -> list[str]:
    """``lib.ts:1:17  export function add(...)``: each place, with its line's text when it is in the workspace."""
    texts: dict[Path, list[str] | None] = {}
    lines = []
    for location in locations[:limit]:
        if location.path not in texts:
            try:
                texts[location.path] = (await workspace.read_text(workspace.resolve(str(location.path)))).split("\n")
            except (WorkspaceError, OSError):  # outside the workspace (a library), or gone
                texts[location.path] = None
        text = texts[location.path]
        found = text[location.line].strip()[:LINE_SHOWN] if text and location.line < len(text) else ""
        lines.append(f"{place(workspace.root, location.path, location.line, location.column)}  {found}".rstrip())
    return lines


async def definition(args: PlaceArguments, workspace: Workspace) -> dict:
    path, line, column = await located(args, workspace)
    found = await workspace.insight.definition(path, line, column)
    return {"definitions": await shown(found, workspace), "count": len(found)}


async def references(args: ReferencesArguments, workspace: Workspace) -> dict:
    path, line, column = await located(args, workspace)
    found = await workspace.insight.references(path, line, column, include_declaration=args.include_declaration)
    return {"references": await shown(found, workspace), "count": len(found), "truncated": len(found) > LIMIT}


async def symbols(args: SymbolsArguments, workspace: Workspace) -> dict:
    path = workspace.resolve(args.path) if args.path is not None else None
    found = await workspace.insight.symbols(path, args.query or "")
    lines = [
        f"{place(workspace.root, s.location.path, s.location.line, s.location.column)} {s.kind} "
        + (f"{s.container}." if s.container else "")
        + s.name
        for s in found[:SYMBOL_LIMIT]
    ]
    return {"symbols": lines, "count": len(found), "truncated": len(found) > SYMBOL_LIMIT}


DEFINITION = Tool(
    "definition",
    "Where a symbol is defined, as the editor's language server says: give the file and the name as written "
    "there (and its line, if it appears more than once)",
    PlaceArguments,
    definition,
    changes_files=False,
    summary="Where a symbol is defined, named as written in the file.",
    core=False,
)
REFERENCES = Tool(
    "references",
    f"Where a symbol is used across the workspace, as the editor's language server says (at most {LIMIT})",
    ReferencesArguments,
    references,
    changes_files=False,
    summary="Where a symbol is used, named as written in the file.",
    core=False,
)
SYMBOLS = Tool(
    "symbols",
    "The symbols (classes, functions, variables...) of a file, or those of the workspace whose name matches a query",
    SymbolsArguments,
    symbols,
    changes_files=False,
    summary="The symbols of a file, or the workspace's matching a query.",
    core=False,
)
