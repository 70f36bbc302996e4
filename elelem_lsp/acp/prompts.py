"""What a ``session/prompt`` asks, from its content blocks: the person's words (text, links kept
as links), as the turn's context the files attached (resource links inside the workspace,
read with their unsaved text, and embedded text resources), each fenced with its path, and
the images (``image`` blocks), kept once as files beside the stored conversations so that the
conversation names them by path."""

from __future__ import annotations

import base64
import binascii
import logging
import mimetypes
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
from ..host.conversations import Asked, ConversationStore
from ..host.workspace import FrontendWorkspace
from ..providers.images import MAX_BASE64, MEDIA_TYPES
from .errors import invalid

log = logging.getLogger(__name__)


async def prompt_text(blocks: list[Any], workspace: FrontendWorkspace, store: ConversationStore | None) -> Asked:
    """The person's words (text, links kept as links), as the context the files attached, and
    the images: kept in ``store`` when the conversation is stored, else sent as they came."""
    words, files, images = [], [], []
    for index, block in enumerate(blocks):
        if isinstance(block, ImageContentBlock):
            images.append(image_of(block, f"prompt[{index}]", store))
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


def image_of(block: ImageContentBlock, field: str, store: ConversationStore | None) -> Image:
    """An image block as a message's image: checked, and written to ``store`` (its path) if any."""
    if block.mime_type not in MEDIA_TYPES:
        raise invalid(field, f"images must be PNG, JPEG, GIF or WebP, got {block.mime_type!r}")
    if len(block.data) > MAX_BASE64:
        raise invalid(field, f"the image is larger than the {MAX_BASE64 // 4 * 3:,} bytes a provider takes")
    try:
        data = base64.b64decode(block.data, validate=True)
    except binascii.Error:
        raise invalid(field, "the image's data is not base64") from None
    if store is None:
        return {"mimeType": block.mime_type, "data": block.data}
    suffix = mimetypes.guess_extension(block.mime_type) or ""
    try:
        path = store.keep_image(data, suffix)
    except OSError as error:
        log.warning("could not keep an image with the conversation (%s); sending it as it came", error)
        return {"mimeType": block.mime_type, "data": block.data}
    return {"mimeType": block.mime_type, "path": str(path)}


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
