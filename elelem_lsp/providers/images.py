"""Images of user messages, made ready for a provider's wire: read, checked, in base64.

Bridges the agent's image shape (``agent.messages.Image``: a media type and either the base64
bytes or the path of a file read when the message is sent) to the ``(media type, base64)``
pair every wire format is written from, and says which providers take images at all: a
provider does when its ``images`` attribute is true (openai and the compatible servers that
declare it, anthropic, vertex, ollama: ``agent.images.takes_images``). One limit for all of them,
the smallest the APIs document (Anthropic's): an image's base64 text may be 5 MiB, a file of
about 3.75 MiB (``agent.images``).
"""

from __future__ import annotations

import base64
import binascii
import functools
import mimetypes
import os

from ..agent.images import MAX_BASE64, MAX_FILE, MEDIA_TYPES, mebibytes
from ..agent.messages import Image, Message, ProviderError


def has_images(messages: list[Message]) -> bool:
    return any(message.get("images") for message in messages)


def refuse_images(name: str, messages: list[Message], hint: str = "") -> None:
    """Raise before any request when the conversation holds images provider ``name`` cannot take."""
    if has_images(messages):
        hint = hint or "use one that can: openai, anthropic, vertex, ollama, or a compatible server that declares it"
        raise ProviderError(f'provider "{name}" cannot take images; {hint}')


def image_data(image: Image) -> tuple[str, str]:
    """The image's media type and base64 text, read from its file when it has a path."""
    path = image.get("path")
    media_type = image.get("mimeType") or (mimetypes.guess_type(path)[0] if path else None) or ""
    if media_type not in MEDIA_TYPES:
        raise ProviderError(f"images must be PNG, JPEG, GIF or WebP, got {media_type or 'an unknown type'}")
    if path:
        try:
            status = os.stat(path)
        except OSError as error:
            raise ProviderError(f"the image {path} cannot be read: {error.strerror or error}") from None
        if status.st_size > MAX_FILE:
            raise too_large(f"the image {path}", status.st_size)
        return media_type, file_base64(path, status.st_mtime_ns, status.st_size)
    data = image.get("data")
    if not isinstance(data, str) or not data:
        raise ProviderError("an image needs its data (base64) or the path of its file")
    if len(data) > MAX_BASE64:
        raise too_large("an image", len(data) // 4 * 3)
    try:
        base64.b64decode(data, validate=True)
    except binascii.Error:
        raise ProviderError("an image's data is not base64") from None
    return media_type, data


@functools.lru_cache(maxsize=8)
def file_base64(path: str, mtime_ns: int, size: int) -> str:
    # Every fetch of a turn sends the conversation again: a file unchanged since is not read again.
    try:
        with open(path, "rb") as file:
            return base64.b64encode(file.read()).decode("ascii")
    except OSError as error:
        raise ProviderError(f"the image {path} cannot be read: {error.strerror or error}") from None


def too_large(what: str, size: int) -> ProviderError:
    return ProviderError(f"{what} is {mebibytes(size)}, more than the {mebibytes(MAX_FILE)} a provider takes: scale it down")
