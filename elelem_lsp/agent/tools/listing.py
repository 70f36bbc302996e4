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


LIST = Tool(
    "list",
    f"List the files under a folder (.gitignore'd files and .git skipped; at most {LIMIT} shown, with the total)",
    ListArguments,
    list_files,
    changes_files=False,
)
