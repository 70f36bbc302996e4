"""``grep``: lines matching a regular expression in every file of a folder, through the Workspace port."""

from pydantic import BaseModel, Field

from ..workspace import Workspace
from .base import Tool, ToolFailure

MATCH_LIMIT = 200

DESCRIPTION = (
    "Search files for lines matching a regular expression (Rust regex syntax, as ripgrep uses: "
    "no look-around or backreferences). Every file is searched, .gitignore'd, binary and .git files "
    f"skipped; at most {MATCH_LIMIT} matching lines are shown, with the true totals"
)


class GrepArguments(BaseModel):
    pattern: str = Field(description="A regular expression in Rust regex syntax, e.g. 'def \\w+\\(' or '(?i)todo'")
    path: str = Field(default=".", description="File or folder to search, relative to the workspace root")


async def grep(args: GrepArguments, workspace: Workspace) -> dict:
    top = workspace.resolve(args.path)
    if not top.exists():
        raise ToolFailure(f"{args.path} does not exist")
    if not (top.is_dir() or top.is_file()):  # a pipe or a device would be read forever
        raise ToolFailure(f"{args.path} is not a file or a folder")
    return await workspace.search(top, args.pattern, limit=MATCH_LIMIT)


GREP = Tool("grep", DESCRIPTION, GrepArguments, grep, changes_files=False)
