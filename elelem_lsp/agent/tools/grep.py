"""``grep``: lines matching a regular expression in the workspace's files."""

import re

from pydantic import BaseModel, Field

from ..workspace import Workspace, WorkspaceError
from .base import Tool, ToolFailure
from .listing import walk

MATCH_LIMIT = 200


class GrepArguments(BaseModel):
    pattern: str = Field(description="A Python regular expression")
    path: str = Field(default=".", description="File or folder to search, relative to the workspace root")


async def grep(args: GrepArguments, workspace: Workspace) -> dict:
    try:
        regex = re.compile(args.pattern)
    except re.error as error:
        raise ToolFailure(f"bad pattern: {error}") from None
    top = workspace.resolve(args.path)
    files = [workspace.relative(top)] if top.is_file() else walk(workspace, top)[0]
    matches = []
    for name in files:
        try:
            text = await workspace.read_text(workspace.resolve(name))
        except WorkspaceError:
            continue  # binary or unreadable: nothing to match
        for number, line in enumerate(text.splitlines(), 1):
            if regex.search(line):
                matches.append({"path": name, "line": number, "text": line[:500]})
                if len(matches) == MATCH_LIMIT:
                    return {"matches": matches, "truncated": True}
    return {"matches": matches, "truncated": False}


GREP = Tool("grep", "Search files for lines matching a regular expression", GrepArguments, grep)
