"""``list``: the files under a folder of the workspace, hidden and ignored folders skipped."""

import os

from pydantic import BaseModel, Field

from ..workspace import Workspace
from .base import Tool, ToolFailure

SKIPPED = {".git", "node_modules", "__pycache__", ".venv", ".mypy_cache", ".pytest_cache"}
LIMIT = 1000


class ListArguments(BaseModel):
    path: str = Field(default=".", description="Folder, relative to the workspace root")


def walk(workspace: Workspace, top) -> tuple[list[str], bool]:
    """Workspace-relative file paths below ``top``, at most LIMIT, sorted; and whether cut."""
    found: list[str] = []

    def refuse_top(error: OSError) -> None:
        if error.filename == os.fspath(top):  # the folder asked for cannot be read: say so, not "empty"
            raise error

    for folder, dirs, files in os.walk(top, onerror=refuse_top):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED)
        for name in sorted(files):
            if len(found) == LIMIT:
                return found, True
            found.append(workspace.relative(workspace.resolve(os.path.join(folder, name))))
    return found, False


async def list_files(args: ListArguments, workspace: Workspace) -> dict:
    top = workspace.resolve(args.path)
    if not top.is_dir():
        raise ToolFailure(f"{args.path} is not a folder")
    files, truncated = walk(workspace, top)
    return {"files": files, "truncated": truncated}


LIST = Tool("list", "List the files under a folder", ListArguments, list_files)
