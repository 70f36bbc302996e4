"""A workspace whose editor announces every kind of navigation (diagnostics, definition, references,
symbols), as VS Code does, with the toolbox such a face offers: for the agent's tests and
bench/context.py. The editor is never asked here: only what it announces matters."""

from __future__ import annotations

from pathlib import Path

from elelem_lsp.agent.editor_tools import EditorTools
from elelem_lsp.agent.insight import KINDS, NoInsight
from elelem_lsp.agent.toolbox import Toolbox
from elelem_lsp.agent.workspace import Workspace


class Announcing(NoInsight):
    @property
    def offers(self) -> frozenset[str]:
        return frozenset(KINDS)


class NavigatingWorkspace(Workspace):
    @property
    def insight(self) -> NoInsight:
        return Announcing()


def workspace_and_toolbox(root: Path, client: str, navigation: bool) -> tuple[Workspace, Toolbox]:
    """A face's workspace and toolbox: with ``navigation``, the editor's tools beside the built-in ones."""
    if not navigation:
        return Workspace(root, client=client), Toolbox()
    workspace = NavigatingWorkspace(root, client=client)
    return workspace, Toolbox().with_sources(EditorTools(workspace))
