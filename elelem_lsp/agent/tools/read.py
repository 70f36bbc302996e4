"""``read``: a file's text, the editor's unsaved text when the file is open there."""

from pydantic import BaseModel, Field

from ..workspace import Workspace
from .base import Tool


class ReadArguments(BaseModel):
    path: str = Field(description="File path, relative to the workspace root")


async def read(args: ReadArguments, workspace: Workspace) -> dict:
    path = workspace.resolve(args.path)
    return {"content": await workspace.read_text(path), "path": workspace.relative(path)}


READ = Tool("read", "Read a text file", ReadArguments, read, changes_files=False)
