"""``list``: the files under a folder of the workspace, through the Workspace port."""

from pydantic import BaseModel, Field

from ..workspace import Workspace
from .base import Tool, ToolFailure

LIMIT = 1000


class ListArguments(BaseModel):
    path: str = Field(default=".", description="Folder, relative to the workspace root")


async def list_files(args: ListArguments, workspace: Workspace) -> dict:
    top = workspace.resolve(args.path)
    if not top.is_dir():
        raise ToolFailure(f"{args.path} is not a folder")
    return await workspace.list_files(top, limit=LIMIT)


DESCRIPTION = (
    "List the files under a folder, every level down, as paths relative to the workspace root: use it to find "
    f"your way in a project. .gitignore'd files and .git are skipped; at most {LIMIT} files are shown, with the "
    "total: list a subfolder, or grep with a glob, when the list is truncated."
)

LIST = Tool("list", DESCRIPTION, ListArguments, list_files, changes_files=False, summary="List files under a folder.")
