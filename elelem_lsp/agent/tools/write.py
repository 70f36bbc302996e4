"""``write``: replace a file's whole text, or create it."""

from pydantic import BaseModel, Field

from ..workspace import Workspace
from .base import Tool


class WriteArguments(BaseModel):
    path: str = Field(description="File path, relative to the workspace root")
    content: str = Field(description="The complete new text of the file")


async def write(args: WriteArguments, workspace: Workspace) -> dict:
    path = workspace.resolve(args.path)
    await workspace.update(path, lambda _current: args.content, tool="write")
    return {"path": workspace.relative(path), "bytes": len(args.content.encode("utf-8"))}


WRITE = Tool("write", "Write a file (creates it, or replaces all of its text)", WriteArguments, write)
