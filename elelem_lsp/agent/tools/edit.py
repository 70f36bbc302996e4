"""``edit``: replace exactly one occurrence of a text in a file."""

from pydantic import BaseModel, Field

from ..textfile import Replacement, for_model
from ..workspace import Workspace
from .base import Tool, ToolFailure


class EditArguments(BaseModel):
    path: str = Field(description="File path, relative to the workspace root")
    old: str = Field(description="The exact text to replace; it must occur exactly once")
    new: str = Field(description="The replacement text")


async def edit(args: EditArguments, workspace: Workspace) -> dict:
    if not args.old:
        raise ToolFailure("old must not be empty")
    path = workspace.resolve(args.path)
    name = workspace.relative(path)
    old = for_model(args.old)  # the model reads "\n" breaks; it may still send the file's own

    def replace_once(text: str | None) -> Replacement:
        if text is None:
            raise ToolFailure(f"{name} does not exist")
        start = text.find(old)
        if start < 0:
            raise ToolFailure(f"old text not found in {name}")
        if text.find(old, start + len(old)) >= 0:
            count = text.count(old)
            raise ToolFailure(f"old text appears {count} times in {name}; include more context so it is unique")
        return Replacement(start, start + len(old), args.new)

    await workspace.update(path, replace_once, tool="edit")
    return {"path": name}


EDIT = Tool("edit", "Replace one exact occurrence of old with new in a file", EditArguments, edit)
