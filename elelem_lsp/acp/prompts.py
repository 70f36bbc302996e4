"""What a ``session/prompt`` asks, from its content blocks: the person's words (text, links kept
as links), as the turn's context the files attached (resource links inside the workspace,
read with their unsaved text, and embedded text resources), each fenced with its path, and
the images (``image`` blocks), which the folder agent keeps once as files beside the stored conversations so that the
conversation names them by path."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from acp.schema import (
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
)

from ..agent.messages import Image
from ..agent.workspace import WorkspaceError
from ..host.conversations import Asked
from ..host.images import ImageError, decode_image
from ..host.workspace import FrontendWorkspace
from .errors import invalid

log = logging.getLogger(__name__)


async def prompt_text(blocks: list[Any], workspace: FrontendWorkspace) -> Asked:
    """The person's words (text, links kept as links), as the context the files attached, and the
    images, checked (the folder agent keeps them beside the conversation: ``host/images.py``)."""
    words, files, images = [], [], []
    for index, block in enumerate(blocks):
        if isinstance(block, ImageContentBlock):
            images.append(image_of(block, f"prompt[{index}]"))
        elif isinstance(block, TextContentBlock):
            words.append(block.text)
        elif isinstance(block, ResourceContentBlock):
            file = await linked(block, workspace)
            if file is None:
                words.append(f"[{block.name}]({block.uri})")
            else:
                files.append(file)
        elif isinstance(block, EmbeddedResourceContentBlock):
            resource = block.resource
            if not isinstance(resource, TextResourceContents):
                raise invalid(f"prompt[{index}]", "a binary embedded resource cannot be read as text")
            files.append(attached(label(resource.uri, workspace.root), resource.text))
        else:
            raise invalid(f"prompt[{index}]", f"{block.type} content is not supported (see promptCapabilities)")
    words_text, files_text = "\n\n".join(part for part in words if part), "\n\n".join(part for part in files if part)
    return Asked(words_text, files_text, tuple(images))


def image_of(block: ImageContentBlock, field: str) -> Image:
    """An image block as a message's image, checked as every face's images are; InvalidParams names the block."""
    try:
        decode_image(block.mime_type, block.data)
    except ImageError as error:
        raise invalid(field, str(error)) from None
    return {"mimeType": block.mime_type, "data": block.data}


async def linked(block: ResourceContentBlock, workspace: FrontendWorkspace) -> str | None:
    """A linked file inside the workspace, attached with its text; None for anything else
    (it stays a link among the person's words)."""
    path = file_path(block.uri)
    if path is not None:
        try:
            resolved = workspace.resolve(str(path))
            return attached(workspace.relative(resolved), await workspace.read_text(resolved))
        except (WorkspaceError, OSError) as error:
            log.info("not attaching %s: %s", block.uri, error)
    return None


def label(uri: str, root: Path) -> str:
    path = file_path(uri)
    if path is not None and path.is_relative_to(root):
        return path.relative_to(root).as_posix()
    return uri


def attached(label: str, text: str) -> str:
    """A file's text for the prompt, fenced so no backticks inside can end the fence."""
    fence = "`" * max(3, longest_run(text, "`") + 1)
    return f"{label}:\n{fence}\n{text.rstrip(chr(10))}\n{fence}"


def longest_run(text: str, char: str) -> int:
    longest = run = 0
    for c in text:
        run = run + 1 if c == char else 0
        longest = max(longest, run)
    return longest


def file_path(uri: str) -> Path | None:
    parsed = urlparse(uri)
    if parsed.scheme != "file" or parsed.netloc not in ("", "localhost"):
        return None
    return Path(unquote(parsed.path))
