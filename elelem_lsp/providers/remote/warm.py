"""Readying the HTTP stack before the first turn: what a first request would otherwise pay for.

httpx imports most of what a request runs (httpcore, h11, anyio's asyncio backend) on first
use, and an https URL needs the CA bundle loaded; together well over 100 ms, paid by the first
turn unless paid earlier. ``prepare(url)`` pays it on the calling thread (the server calls it
on a worker thread after ``initialize``): it builds the TLS context the URL needs, if any, and
sends one request to a listener of its own on loopback, on a private event loop, through the
same client factory the providers use. Nothing is sent to the model server.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

import httpx

from .http import http_client, tls_context


async def _one_loopback_request() -> None:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
        await writer.drain()
        writer.close()

    listener = await asyncio.start_server(answer, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{listener.sockets[0].getsockname()[1]}/"
    async with listener:
        # An explicit transport keeps proxy settings from the environment out of a loopback request.
        transport = httpx.AsyncHTTPTransport(verify=tls_context(url))
        async with http_client(url, transport, timeout=5.0) as client, client.stream("GET", url) as response:
            await response.aread()


def prepare(url: str) -> None:
    """Make now what the first request to ``url`` needs; run it off the event loop."""
    tls_context(url)
    asyncio.run(_one_loopback_request())


class StreamsFromURL(Protocol):
    """A provider's ``url``: an attribute of some, a property (built from its settings) of others."""

    @property
    def url(self) -> str: ...


class PreparesHTTP:
    """For providers that stream from ``self.url``: ``prepare()`` readies their first request."""

    def prepare(self: StreamsFromURL) -> None:
        prepare(self.url)
