"""Starting an MCP server's transport: a process over stdio (its stderr kept, in part, for the person)
or streamable HTTP; the read stream watched, so that the connection hears when the server ends."""

from __future__ import annotations

import asyncio
import dataclasses
import os
from collections.abc import Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

from ...agent.sandbox import SandboxPolicy, SandboxRefused, contain
from ..settings import McpServerConfig, StdioServer

STDERR_TAIL = 1500  # bytes of a failed server's stderr shown to the person
STDERR_KEPT = 64 * 1024  # bytes of a server's stderr kept, however much a chatty one writes


async def open_transport(
    config: McpServerConfig, root: Path, stack: AsyncExitStack, stderr: StderrPipe | None, policy: SandboxPolicy
) -> Any:
    """The SDK transport for ``config``: a stdio one writes its stderr to ``stderr`` (and runs in the
    sandbox of ``policy`` when its ``sandbox`` says so), an HTTP one has none."""
    if isinstance(config, StdioServer):
        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client

        assert stderr is not None
        argv = [config.command, *config.args]
        if config.sandbox:
            try:
                argv = (await contain(argv, root, dataclasses.replace(policy, mode="required"), lasting=True)).argv
            except SandboxRefused as refused:
                raise SandboxRefused(f"its settings ask for the sandbox and {refused}") from None
        parameters = StdioServerParameters(command=argv[0], args=argv[1:], env=config.env or None, cwd=root)
        return stdio_client(parameters, errlog=stderr.writer)
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    http = await stack.enter_async_context(  # the SDK's own timeouts: 30s, and 300s to read an event stream
        httpx2.AsyncClient(headers=config.headers, timeout=httpx2.Timeout(30, read=300))
    )
    return streamable_http_client(config.url, http_client=http)


class StderrPipe:
    """A process's stderr: a pipe read as the process writes, of which the last STDERR_KEPT bytes are kept."""

    def __init__(self) -> None:
        reader, writer = os.pipe()
        os.set_blocking(reader, False)
        self.reader: int | None = reader
        # the process's stderr (ours stays open: no end of input while it is); the process writes to
        # the descriptor itself, text mode is only the TextIO the SDK's stdio_client asks for
        self.writer = os.fdopen(writer, "w", encoding="utf-8")
        self.kept = bytearray()
        self.loop = asyncio.get_running_loop()
        self.loop.add_reader(reader, self.read)

    def read(self) -> None:
        """Whatever the process wrote since the last read."""
        while self.reader is not None:
            try:
                chunk = os.read(self.reader, 65536)
            except BlockingIOError:
                return
            if not chunk:  # every writer closed (not while ours is open)
                return
            self.kept += chunk
            del self.kept[:-STDERR_KEPT]

    def tail(self) -> str:
        self.read()  # what it wrote just before it ended, too
        return bytes(self.kept[-STDERR_TAIL:]).decode("utf-8", "replace").strip()

    def close(self) -> None:
        if self.reader is not None:
            self.loop.remove_reader(self.reader)
            os.close(self.reader)
            self.reader = None
            self.writer.close()


@asynccontextmanager
async def watched(transport: Any, ended: Callable[[], None]) -> Any:
    """The SDK transport, its read stream watched: ``ended`` is called when it ends."""
    async with transport as (read_stream, write_stream):
        yield WatchedStream(read_stream, ended), write_stream


class WatchedStream:
    """A transport's read stream (the SDK's ``ReadStream``) that tells when it ends: the server's
    process exited or closed its output, or the HTTP transport failed."""

    def __init__(self, stream: Any, ended: Callable[[], None]) -> None:
        self.stream = stream
        self.ended = ended

    @property
    def last_context(self) -> Any:  # the sender's contextvars, which the SDK's dispatcher looks for
        return getattr(self.stream, "last_context", None)

    async def receive(self) -> Any:
        import anyio

        try:
            return await self.stream.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            self.ended()
            raise

    def __aiter__(self) -> WatchedStream:
        return self

    async def __anext__(self) -> Any:
        import anyio

        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self.stream.aclose()

    async def __aenter__(self) -> WatchedStream:
        await self.stream.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> Any:
        return await self.stream.__aexit__(*exc_info)
