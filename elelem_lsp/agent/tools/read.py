"""``read``: lines of a file's text, numbered, the editor's unsaved text when the file is open there.

A result shows a window of the file: from line ``offset`` (counting from 1), at most ``limit``
lines, and never more than fits the room a tool result has in the turn's context budget
(``budget.result_room``). Each line is its number, right-aligned, a tab, and the line's text, as
``cat -n`` prints it; a line longer than ``LINE_CHARS`` is cut with a marker. A window that ends
before the file does ends with one sentence saying which lines were shown and the offset to read
on from, so a model never takes part of a file for all of it.

An image file (PNG, JPEG, GIF or WebP by its first bytes) is given to a provider that takes
images: the result says what it is (``image: true``, its ``mimeType`` and ``bytes``) and the tool
message carries it by path (``images``; the session puts it beside the result). With a provider
that cannot, read refuses and says so.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, Field, WithJsonSchema

from .. import budget
from ..images import MAX_FILE, mebibytes, media_type_of, turn_takes_images
from ..messages import encode
from ..workspace import Workspace
from .base import Tool, ToolFailure

DEFAULT_LIMIT = 2000  # lines shown when the model gives no limit (fewer when they would not fit)
LINE_CHARS = 2000  # characters of one line shown
RESULT_OVERHEAD = 60  # tokens the result's other fields and its closing sentence take

DESCRIPTION = (
    "Read a text file (the editor's unsaved text when it is open there). Use it before changing a file, "
    "and to look at code grep found. Lines come numbered like `cat -n`: the line number, a tab, the text; "
    "the numbers are not part of the file, so never copy them into edit's old text. "
    f"Reads from line `offset` (from 1) at most `limit` lines: up to {DEFAULT_LIMIT} by default, fewer when "
    "they would not fit the context window; a result that stops before the end of the file says so and gives "
    f"the offset to read on from. Lines longer than {LINE_CHARS:,} characters are cut. "
    "An image file (PNG, JPEG, GIF, WebP) is shown to you when your provider takes images. "
    "Other binary files and folders cannot be read (use list for a folder)."
)


class ReadArguments(BaseModel):
    path: str = Field(description="File path, relative to the workspace root")
    offset: int = Field(default=1, ge=1, description="The first line to read, counting from 1")
    limit: Annotated[int | None, WithJsonSchema({"type": "integer", "minimum": 1})] = Field(  # null taken as not given
        default=None, ge=1, description=f"How many lines to read at most (default {DEFAULT_LIMIT}, or what fits)"
    )


def numbered(number: int, width: int, line: str) -> str:
    """One line as read shows it: ``  12\\tlike this``, cut with a marker when it is very long."""
    if len(line) > LINE_CHARS:
        line = f"{line[:LINE_CHARS]} [… line cut: {len(line) - LINE_CHARS:,} more characters]"
    return f"{number:>{width}}\t{line}"


def window(text: str, offset: int, limit: int, room: int) -> tuple[list[str], int]:
    """The numbered lines of ``text`` from line ``offset`` (from 1), at most ``limit`` and as many
    as fit ``room`` tokens (one at least), and how many lines the text has."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # the break that ends the last line starts no line of its own
    last = min(len(lines), offset - 1 + limit)
    width = len(str(last))
    shown: list[str] = []
    used = RESULT_OVERHEAD
    for number in range(offset, last + 1):
        line = numbered(number, width, lines[number - 1])
        used += budget.estimate_tokens(encode(line))  # as the result is counted: JSON, escapes and all
        if shown and used > room:
            break
        shown.append(line)
    return shown, len(lines)


def image_type(path: Path) -> str | None:
    """The media type of the file when it is an image a provider takes, told by its first bytes."""
    try:
        # Not a plain open: on a FIFO that waits for a writer, stalling the turn (read_text says what it is).
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None  # read_text says why
    if not stat.S_ISREG(os.fstat(descriptor).st_mode):  # a folder opens too, but is no file to wrap
        os.close(descriptor)
        return None
    with os.fdopen(descriptor, "rb") as file:
        return media_type_of(file.read(12))


def image(path: Path, name: str, media_type: str) -> dict:
    """The result of reading an image: what it is, and the image itself (by path) for the tool message."""
    if not turn_takes_images.get():
        raise ToolFailure(f"{name} is an image ({media_type}) and this provider cannot take images, so it cannot be read")
    size = path.stat().st_size
    if size > MAX_FILE:
        raise ToolFailure(f"{name} is an image of {mebibytes(size)}, more than the {mebibytes(MAX_FILE)} a provider takes")
    given = [{"mimeType": media_type, "path": str(path)}]
    return {"path": name, "image": True, "mimeType": media_type, "bytes": size, "images": given}


async def read(args: ReadArguments, workspace: Workspace) -> dict:
    path = workspace.resolve(args.path)
    name = workspace.relative(path)
    if path.is_dir():  # models often read a folder: tell them the tool that shows one
        raise ToolFailure(f"{name} is a directory: use list to see the files in it")
    media_type = image_type(path)
    if media_type is not None:
        return image(path, name, media_type)
    text = await workspace.read_text(path)
    shown, total = window(text, args.offset, args.limit or DEFAULT_LIMIT, budget.result_room.get())
    if total == 0:
        return {"path": name, "total_lines": 0, "content": "[the file is empty]"}
    if not shown:
        raise ToolFailure(f"offset {args.offset} is past the end of {name}, which has {total} lines")
    first, last = args.offset, args.offset + len(shown) - 1
    result: dict = {"path": name, "total_lines": total, "lines": [first, last], "content": "\n".join(shown)}
    if last < total:
        result["content"] += f"\n[lines {first}-{last} of {total} shown; read again with offset={last + 1} to continue]"
        result["next_offset"] = last + 1
    return result


SUMMARY = "Read a file's numbered lines (numbers not in the file)."
READ = Tool("read", DESCRIPTION, ReadArguments, read, changes_files=False, summary=SUMMARY)
