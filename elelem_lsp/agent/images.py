"""What the agent knows of images: which providers take them, which files are images, how large one may be.

A provider takes images when its ``images`` attribute is true (docs/contract.md); the others are
sent no image (``history.without_images``) or refuse one. An image is PNG, JPEG, GIF or WebP, told
by its first bytes, and at most ``MAX_FILE``: the smallest limit the APIs document (Anthropic's),
5 MiB of base64, a file of 3.75 MiB. ``providers/images.py`` puts images on the wire with these.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

MEDIA_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")  # what every image provider reads
MAX_BASE64 = 5 * 1024 * 1024
MAX_FILE = MAX_BASE64 // 4 * 3
# whether the running turn's provider takes images: a tool that finds one (read) gives it or refuses
turn_takes_images: ContextVar[bool] = ContextVar("elelem_turn_takes_images", default=False)
SIGNATURES = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def takes_images(provider: Any) -> bool:
    """Whether ``provider`` declares that it takes images (ACP's ``promptCapabilities.image``)."""
    return getattr(provider, "images", False) is True


def media_type_of(head: bytes) -> str | None:
    """The media type of an image by its first bytes (12 are enough), None for anything but the four."""
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return next((media_type for signature, media_type in SIGNATURES if head.startswith(signature)), None)


def mebibytes(size: int) -> str:
    return f"{size / (1024 * 1024):.2f} MiB"
