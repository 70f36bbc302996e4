"""``grep``: lines matching a regular expression in every file of a folder, through the Workspace port."""

from typing import Annotated

from pydantic import BaseModel, Field, WithJsonSchema

from ..workspace import Workspace
from .base import Tool, ToolFailure

MATCH_LIMIT = 200
CONTEXT_LIMIT = 10

DESCRIPTION = (
    "Search file contents for a regular expression: use it to find where something is defined or used "
    "before reading or changing it. Rust regex syntax, as ripgrep uses (no look-around or backreferences). "
    "Every file under the path is searched, .gitignore'd, binary and .git files skipped; `glob` narrows the "
    "files (e.g. '*.py' or 'src/**/*.ts'), `context` adds lines around each match (marked context: true). "
    f"At most {MATCH_LIMIT} matching lines are shown, with the true totals: narrow the pattern, path or glob "
    "when a result is truncated. Each match gives its path and line number: read with offset there to see more."
)


class GrepArguments(BaseModel):
    pattern: str = Field(description="A regular expression in Rust regex syntax, e.g. 'def \\w+\\(' or '(?i)todo'")
    path: str = Field(default=".", description="File or folder to search, relative to the workspace root")
    glob: Annotated[str | None, WithJsonSchema({"type": "string"})] = Field(  # null taken as not given
        default=None,
        min_length=1,
        description="Only files matching this glob, as ripgrep's --glob: '*.py' (any folder), 'src/**/*.ts', '*.{js,ts}'; "
        "a leading ! excludes",
    )
    context: int = Field(default=0, ge=0, le=CONTEXT_LIMIT, description="Lines to show before and after each match")


async def grep(args: GrepArguments, workspace: Workspace) -> dict:
    top = workspace.resolve(args.path)
    if not top.exists():
        raise ToolFailure(f"{args.path} does not exist")
    if not (top.is_dir() or top.is_file()):  # a pipe or a device would be read forever
        raise ToolFailure(f"{args.path} is not a file or a folder")
    return await workspace.search(top, args.pattern, limit=MATCH_LIMIT, context=args.context, glob=args.glob)


GREP = Tool("grep", DESCRIPTION, GrepArguments, grep, changes_files=False)
