"""Framing: the editor's byte stream to JSON-RPC message bodies, resynchronised after a bad frame.

LSP frames each message as ``Content-Length: N`` headers, a blank line and N
bytes of body. pygls' own reader trusts every header: one frame with the
length missing, non-numeric, too short or too long leaves it reading bodies as
headers for good, running but deaf. ``FrameReader`` instead skips what is not a
frame, says so once, and picks up again at the next ``Content-Length`` header,
even one a wrong length swallowed. ``serve`` runs it over any byte source and
hands each body on; a stream that is nothing but garbage ends it with one line.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass

log = logging.getLogger(__name__)

CHUNK = 65536
MAX_BODY = 64 * 1024 * 1024
HEADER = re.compile(rb"content-length[ \t]*:[ \t]*([^\r\n]*)", re.IGNORECASE)
OTHER_HEADER = re.compile(rb"^[A-Za-z0-9-]+[ \t]*:")
# A whole Content-Length line inside what should be a body: JSON cannot hold a raw CR or LF
# inside a string, nor that word outside one, so the declared length ran into the next frame.
EMBEDDED_HEADER = re.compile(rb"content-length[ \t]*:[ \t]*\d+[ \t]*\r?\n", re.IGNORECASE)
HEADER_SPAN = 64  # how far back a header may start across two reads


@dataclass
class Malformed:
    """Bytes that were not a well-formed frame, and were skipped."""

    reason: str


class StreamLost(Exception):
    """The stream cannot be read as frames any more; the editor should restart the server."""


class FrameReader:
    """A parser of the byte stream (no I/O): ``feed`` bytes, then take ``frames()``."""

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.declared: int | None = None  # the Content-Length of the header block being read
        self.invalid: str | None = None  # why that block's Content-Length cannot be used
        self.in_headers = False
        self.body_length: int | None = None  # set between a header block and its body
        self.scanned = 0  # how much of a waiting body has been searched for a header
        self.quiet = False  # a skip was reported; say nothing more until a good frame

    def feed(self, data: bytes) -> None:
        self.buffer += data
        if self.body_length is None and len(self.buffer) > MAX_BODY and b"\n" not in self.buffer:
            raise StreamLost(f"more than {MAX_BODY // 2**20} MiB arrived without a single header line")

    def frames(self) -> Iterator[bytes | Malformed]:
        """The bodies (and the skips) the buffer holds now; stops when it needs more bytes."""
        while True:
            if self.body_length is not None:
                found = self._body()
            else:
                found = self._header_line()
            if found is None:
                return
            yield from found

    @property
    def pending(self) -> bool:
        """True when the stream stopped inside a frame."""
        return bool(self.buffer.strip()) or self.body_length is not None or self.in_headers

    def _skip(self, reason: str) -> list[Malformed]:
        if self.quiet:
            return []
        self.quiet = True
        return [Malformed(reason)]

    def _header_line(self) -> Sequence[bytes | Malformed] | None:
        end = self.buffer.find(b"\n")
        if end < 0:
            return None
        line = bytes(self.buffer[: end + 1])
        del self.buffer[: end + 1]
        if not line.strip():
            return self._end_of_headers()
        header = HEADER.search(line)
        if header is None:
            if OTHER_HEADER.match(line):  # Content-Type and friends
                self.in_headers = True
                return []
            return self._skip(f"skipped {len(line)} bytes that were not a frame")
        self.in_headers = True
        value = header.group(1).strip()
        if value.isdigit() and int(value) <= MAX_BODY:
            self.declared, self.invalid = int(value), None
        else:
            self.declared, self.invalid = None, f"invalid Content-Length {value[:40].decode(errors='replace')!r}"
        if header.start() > 0:  # the rest of a body that was cut short, then the next frame
            return self._skip(f"skipped {header.start()} bytes that were not a frame")
        return []

    def _end_of_headers(self) -> Sequence[bytes | Malformed]:
        declared, invalid, started = self.declared, self.invalid, self.in_headers
        self.declared, self.invalid, self.in_headers = None, None, False
        if declared is not None:
            self.body_length, self.scanned = declared, 0
            return []
        if started:
            return self._skip(f"{invalid or 'a frame without Content-Length'}: skipped it")
        return []  # a stray blank line

    def _body(self) -> Sequence[bytes | Malformed] | None:
        length = self.body_length
        assert length is not None
        available = min(len(self.buffer), length)
        # only the bytes not searched yet (a big body arrives in many reads)
        embedded = EMBEDDED_HEADER.search(self.buffer, max(0, self.scanned - HEADER_SPAN), available)
        if embedded is None and available < length:
            self.scanned = available
            return None
        self.body_length = None
        if embedded is not None:  # the length was too long: what came before is the whole body
            body = bytes(self.buffer[: embedded.start()])
            del self.buffer[: embedded.start()]
            self.quiet = False
            return [*self._skip(f"Content-Length {length} ran past the end of its body"), body]
        body = bytes(self.buffer[:length])
        del self.buffer[:length]
        self.quiet = False
        return [body]


async def serve(read: Callable[[], Awaitable[bytes]], receive: Callable[[bytes], None], stopped: Callable[[], bool]) -> None:
    """Read chunks until the stream ends (or ``stopped()``), handing each frame body to ``receive``.

    Skipped bytes are logged as one warning line each; raises StreamLost when
    the stream cannot be framed any more.
    """
    reader = FrameReader()
    while not stopped():
        data = await read()
        if not data:
            break
        reader.feed(data)
        for frame in reader.frames():
            if isinstance(frame, Malformed):
                log.warning("malformed frame from the editor: %s", frame.reason)
            else:
                receive(frame)
    if reader.pending and not stopped():
        log.warning("the editor's stream ended inside a frame")
