"""``grep``: lines matching a regular expression in every file of a folder, through the Workspace port."""

from typing import Annotated

from pydantic import BaseModel, Field, WithJsonSchema

from .. import budget
from ..workspace import Workspace
from .base import Tool, ToolFailure

MATCH_LIMIT = 200
MATCH_TOKENS = 25  # what one match takes of a result, about: its path, line number and text
FEWEST_MATCHES = 10  # shown however small the room
CONTEXT_LIMIT = 10

DESCRIPTION = (
    "Search file contents for a regular expression: use it to find where something is defined or used "
    "before reading or changing it. Rust regex syntax, as ripgrep uses (no look-around or backreferences). "
    "Every file under the path is searched, .gitignore'd, binary and .git files skipped; `glob` narrows the "
    "files (e.g. '*.py' or 'src/**/*.ts'), `context` adds lines around each match (marked context: true). "
    f"At most {MATCH_LIMIT} matching lines are shown (fewer in a small context window), with the true totals: "
    "narrow the pattern, path or glob "
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
    if "\0" in args.pattern:  # no program's arguments can hold one
        raise ToolFailure("pattern holds a NUL byte, which cannot be passed to the search: write it as \\x00")
    if args.glob is not None and "\0" in args.glob:
        raise ToolFailure("glob holds a NUL byte, which no file name has")
    top = workspace.resolve(args.path)
    if not top.exists():
        raise ToolFailure(f"{args.path} does not exist")
    if not (top.is_dir() or top.is_file()):  # a pipe or a device would be read forever
        raise ToolFailure(f"{args.path} is not a file or a folder")
    limit = match_limit(budget.result_room.get())
    found = await workspace.search(top, args.pattern, limit=limit, context=args.context, glob=args.glob)
    if found.get("truncated"):
        found["more"] = (
            f"{found['matches_shown']} of {found['matches_found']} matching lines shown: narrow the pattern, "
            "path or glob to see the others, or read a file with offset at a match"
        )
    return found


def match_limit(room: int) -> int:
    """The matching lines shown: ``MATCH_LIMIT``, fewer when a result has less room in the context window."""
    return max(FEWEST_MATCHES, min(MATCH_LIMIT, room // MATCH_TOKENS))


SUMMARY = "Search files for a regex."
GREP = Tool("grep", DESCRIPTION, GrepArguments, grep, changes_files=False, summary=SUMMARY)
