"""Images a person gives with a prompt, checked and kept once on disk beside the conversation.

Bridges what a face receives (base64 in ``elelem.ask``'s ``images``, an ACP image block, a file
named to ``elelem-lsp ask --image``) to the ``{mimeType, path}`` a message carries
(``agent.messages.Image``): the bytes are checked (PNG, JPEG, GIF or WebP by their first bytes, at
most ``providers.images.MAX_FILE``) and written once, named by their SHA-256, in an ``images``
folder of the conversation folder (``conversations/<folder>/images/<sha256>.png``), a 0600 file
in a 0700 folder; the same image sent twice is one file. A stored conversation keeps the path;
deleting a conversation removes the images no other conversation of the folder names.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import time
from collections.abc import Set
from pathlib import Path

from ..agent.images import MAX_BASE64, MAX_FILE, MEDIA_TYPES, media_type_of
from ..agent.messages import Image
from ..agent.private_files import private_folder, write_private
from ..providers.images import too_large

IMAGES = "images"  # the folder, inside a conversation folder
# An image given this recently may belong to a turn still running (stored when it ends), perhaps
# in another process on the same folder: it stays when conversations that named it are deleted.
GIVEN_LATELY = 3600.0  # seconds
EXTENSIONS = {"image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif", "image/webp": ".webp"}


class ImageError(ValueError):
    """An image that no provider would take: its type, its bytes or its size; the message says which."""


def check_image_type(media_type: str) -> None:
    if media_type not in MEDIA_TYPES:
        raise ImageError(f"{media_type or 'no type'} is not an image type a provider takes (PNG, JPEG, GIF, WebP)")


def check_image(media_type: str, content: bytes) -> None:
    """Refuse a type other than the four, bytes that are not an image of the type said, and more than MAX_FILE."""
    check_image_type(media_type)
    found = media_type_of(content[:12])
    if found != media_type:
        raise ImageError(f"the bytes are not {media_type}" + (f" but {found}" if found else ", nor an image a provider takes"))
    if len(content) > MAX_FILE:
        raise ImageError(str(too_large("the image", len(content))))


def decode_image(media_type: str, data: str) -> bytes:
    """The bytes of a base64 image, checked (``check_image``)."""
    if len(data) > MAX_BASE64:  # refused before decoding what would be refused after
        raise ImageError(str(too_large("the image", len(data) // 4 * 3)))
    try:
        content = base64.b64decode(data, validate=True)
    except binascii.Error:
        raise ImageError("not base64") from None
    check_image(media_type, content)
    return content


def read_image(path: Path) -> tuple[str, bytes]:
    """A file's media type (by its bytes) and bytes, checked; OSError when it cannot be read."""
    with path.open("rb") as file:
        content = file.read(MAX_FILE + 1)
    media_type = media_type_of(content[:12])
    if media_type is None:
        raise ImageError(f"{path} is not a PNG, JPEG, GIF or WebP image")
    if len(content) > MAX_FILE:
        raise ImageError(str(too_large(str(path), path.stat().st_size)))
    return media_type, content


def store_image(folder: Path, media_type: str, content: bytes) -> Image:
    """Keep the image in ``folder/images/<sha256><ext>`` (written once) and name it by that path.

    ``folder`` is a conversation folder (``ConversationStore.directory``); ImageError for an image
    ``check_image`` refuses, OSError when the folder cannot be used (a symlink is refused)."""
    check_image(media_type, content)
    images = folder / IMAGES
    for directory in (folder, images):
        if directory.is_symlink():
            raise OSError(f"{directory} is a symlink; images are not stored through one")
    private_folder(images)
    path = images / (hashlib.sha256(content).hexdigest() + EXTENSIONS[media_type])
    if not path.is_file() or path.is_symlink():
        write_private(path, content)  # atomic: a file under this name always holds these bytes whole
    else:
        os.utime(path)  # given again: lately, for remove_unnamed_images
    return {"mimeType": media_type, "path": str(path)}


def remove_unnamed_images(folder: Path, named: Set[str]) -> None:
    """Remove the images of conversation folder ``folder`` whose path no conversation names
    (``named``) and that were not given lately (``GIVEN_LATELY``)."""
    images = folder / IMAGES
    if images.is_symlink() or not images.is_dir():
        return
    lately = time.time() - GIVEN_LATELY
    for path in images.iterdir():
        try:
            if str(path) not in named and path.suffix in EXTENSIONS.values() and path.lstat().st_mtime < lately:
                path.unlink()
        except OSError:  # gone already, or not ours to remove: it stays
            continue
