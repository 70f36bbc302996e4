"""``write``: replace a file's whole text, or create it."""

from pydantic import BaseModel, Field

from ..workspace import Workspace
from .base import Tool


class WriteArguments(BaseModel):
    path: str = Field(description="File path, relative to the workspace root")
    content: str = Field(description="The complete new text of the file")


async def write(args: WriteArguments, workspace: Workspace) -> dict:
    path = workspace.resolve(args.path)
    await workspace.allow_change(path)
    await workspace.update(path, lambda _current: args.content, tool="write")
    return {"path": workspace.relative(path), "bytes": len(args.content.encode("utf-8"))}


DESCRIPTION = (
    "Create a file, or replace all of its text: for new files and complete rewrites. To change part of an "
    "existing file use edit instead, which sends only the change. Missing folders are created. The content "
    "is written as given: no line numbers."
)

WRITE = Tool("write", DESCRIPTION, WriteArguments, write, summary="Create a file or replace all its text.")
