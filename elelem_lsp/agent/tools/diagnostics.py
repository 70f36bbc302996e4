"""``diagnostics``: the problems the editor's language servers report, for a file or the workspace."""

from typing import Literal

from pydantic import BaseModel, Field

from ..insight import SEVERITIES, describe_problem
from ..workspace import Workspace
from .base import Tool

LIMIT = 200
LEVELS = {name: number for number, name in SEVERITIES.items()}


class DiagnosticsArguments(BaseModel):
    path: str | None = Field(default=None, description="A file relative to the workspace root; omit it for the whole workspace")
    severity: Literal["error", "warning", "info", "hint"] = Field(
        default="warning", description="The least severe problems shown: 'error' shows errors only"
    )


async def diagnostics(args: DiagnosticsArguments, workspace: Workspace) -> dict:
    paths = [workspace.resolve(args.path)] if args.path is not None else None
    found = await workspace.insight.diagnostics(paths)
    inside = [p for p in found.problems if p.path == workspace.root or p.path.is_relative_to(workspace.root)]
    shown = sorted(
        (p for p in inside if p.severity <= LEVELS[args.severity]),
        key=lambda p: (p.severity, str(p.path), p.line, p.column),
    )
    lines = [describe_problem(problem, workspace.root) for problem in shown[:LIMIT]]
    return {"problems": lines, "count": len(shown), "truncated": len(shown) > LIMIT}


DIAGNOSTICS = Tool(
    "diagnostics",
    "The problems (errors, warnings...) the editor's language servers report for a file, or for every "
    f"file they checked (usually the open ones); most severe first, at most {LIMIT}",
    DiagnosticsArguments,
    diagnostics,
    changes_files=False,
    summary="The problems the editor reports for a file, or for every file.",
    core=False,
)
