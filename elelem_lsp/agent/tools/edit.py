"""``edit``: replace an exact text in a file, once or everywhere it occurs."""

import re

from pydantic import BaseModel, Field

from ..textfile import Replacement, for_model
from ..workspace import Workspace
from .base import Tool, ToolFailure

DESCRIPTION = (
    "Change a file by replacing an exact text with a new one: the way to make small, focused changes. "
    "Read the file first: `old` must match its text exactly, indentation and line breaks included, but without "
    "the line numbers and tab read puts before each line. `old` must occur once (add lines around it until it "
    "is unique) unless `replace_all` is true, which replaces every occurrence (renaming a variable, say). "
    "To create a file or replace all of its text, use write."
)
LINE_NUMBER = re.compile(r"^ *\d+\t", re.MULTILINE)


class EditArguments(BaseModel):
    path: str = Field(description="File path, relative to the workspace root")
    old: str = Field(description="The exact text to replace, as it is in the file (no line numbers)")
    new: str = Field(description="The text to put in its place")
    replace_all: bool = Field(default=False, description="Replace every occurrence of old, not only a unique one")


def not_found(old: str, name: str) -> str:
    """Why ``old`` was not found, with a hint when it looks copied from read's numbered lines."""
    if LINE_NUMBER.match(old):
        return f"old text not found in {name}: it starts with a line number and a tab, as read shows lines; leave those out"
    return f"old text not found in {name}: it must match the file's text exactly (read the file again to see it)"


async def edit(args: EditArguments, workspace: Workspace) -> dict:
    if not args.old:
        raise ToolFailure("old must not be empty")
    path = workspace.resolve(args.path)
    await workspace.allow_change(path)
    name = workspace.relative(path)
    old = for_model(args.old)  # the model reads "\n" breaks; it may still send the file's own
    replaced = 0

    def replace(text: str | None) -> str | Replacement:
        nonlocal replaced
        if text is None:
            raise ToolFailure(f"{name} does not exist")
        replaced = text.count(old)
        if not replaced:
            raise ToolFailure(not_found(args.old, name))
        if args.replace_all:
            return text.replace(old, args.new)
        if replaced > 1:
            raise ToolFailure(
                f"old text appears {replaced} times in {name}; include more of the lines around it so it is unique, "
                "or set replace_all to change every one"
            )
        start = text.find(old)
        return Replacement(start, start + len(old), args.new)

    await workspace.update(path, replace, tool="edit")
    return {"path": name, "replacements": replaced}


SUMMARY = "Replace exact text old with new (unique unless replace_all)."
EDIT = Tool("edit", DESCRIPTION, EditArguments, edit, summary=SUMMARY)
