"""The tools the editor's language servers answer (``diagnostics``, ``definition``, ``references``,
``symbols``), offered as a ``ToolSource`` in each turn whose front end says it can answer them:
a plain LSP client, ACP or the terminal is never offered a tool it cannot serve."""

from __future__ import annotations

import dataclasses
from typing import Any

from .insight import DEFINITION, DIAGNOSTICS, REFERENCES, SYMBOLS, InsightUnavailable
from .messages import ToolDefinition
from .toolbox import Toolbox, ToolSource, count
from .tools import Tool, ToolFailure
from .tools.diagnostics import DIAGNOSTICS as DIAGNOSTICS_TOOL
from .tools.navigation import DEFINITION as DEFINITION_TOOL
from .tools.navigation import REFERENCES as REFERENCES_TOOL
from .tools.navigation import SYMBOLS as SYMBOLS_TOOL
from .workspace import Workspace

# each tool, and what the front end must offer for it
NEEDS = {
    DIAGNOSTICS_TOOL.name: DIAGNOSTICS,
    DEFINITION_TOOL.name: DEFINITION,
    REFERENCES_TOOL.name: REFERENCES,
    SYMBOLS_TOOL.name: SYMBOLS,
}
FOUND = {"diagnostics": "problems", "definition": "definitions", "references": "references", "symbols": "symbols"}


def answered(tool: Tool) -> Tool:
    """``tool``, its editor's failure to answer told to the model as any tool failure is."""

    async def run(args: Any, workspace: Workspace) -> dict[str, Any]:
        try:
            return await tool.run(args, workspace)
        except InsightUnavailable as error:
            raise ToolFailure(str(error)) from None

    return dataclasses.replace(tool, run=run)


TOOLBOX = Toolbox(answered(tool) for tool in (DIAGNOSTICS_TOOL, DEFINITION_TOOL, REFERENCES_TOOL, SYMBOLS_TOOL))


def offered_names(offers: frozenset[str]) -> list[str]:
    """The tools a front end that answers ``offers`` serves."""
    return [name for name, needed in NEEDS.items() if needed in offers]


def offered_definitions(offers: frozenset[str]) -> list[ToolDefinition]:
    offered = set(offered_names(offers))
    return [d for d in TOOLBOX.definitions() if d["function"]["name"] in offered]


class EditorTools(ToolSource):
    changes_files = False  # they read what the editor's language servers know

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace

    async def definitions(self) -> list[ToolDefinition]:
        return offered_definitions(self.workspace.insight.offers)

    def serves(self, name: str) -> bool:
        return name in offered_names(self.workspace.insight.offers)

    async def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return await TOOLBOX.call(name, arguments, self.workspace)

    def summary(self, name: str, result: dict[str, Any]) -> str:
        noun = {"diagnostics": "problem", "definition": "definition", "references": "reference", "symbols": "symbol"}[name]
        return count(result.get("count", len(result.get(FOUND[name], []))), noun) + (
            " (cut short)" if result.get("truncated") else ""
        )
