"""An MCP server for the tests, written with the SDK's MCPServer: tools that answer, fail, hang,
crash and send what no client can read.

``python tool_server.py`` serves on stdio; ``--http PORT_FILE`` serves streamable HTTP on
127.0.0.1 at a port the OS picks, written to PORT_FILE once it listens. ``TOOL_SERVER_LOG``
names a file each call and each cancelled call is noted in, one a line. ``TOOL_SERVER_START``
set to ``hang`` never answers the handshake, ``fail`` exits at once saying why on stderr,
``banner`` prints a line on stdout before it serves.
"""

import asyncio
import fcntl
import os
import socket
import sys
from typing import Annotated

from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import (
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

server = MCPServer("testing")


def note(line: str) -> None:
    path = os.environ.get("TOOL_SERVER_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as log:
            log.write(line + "\n")


@server.tool()
def echo(text: str) -> str:
    """Answer with the text it was given."""
    note(f"echo {text}")
    return text


@server.tool()
def add(a: int, b: int) -> int:
    """Add two whole numbers."""
    note(f"add {a} {b}")
    return a + b


@server.tool()
def pid() -> str:
    """The server's process id."""
    return str(os.getpid())


@server.tool()
def header(name: str, ctx: Context) -> str:
    """The value of one header of the HTTP request that carried the call (empty on stdio)."""
    return (ctx.headers or {}).get(name.lower(), "")


@server.tool(name="dotted.name")
def dotted() -> str:
    """A name no model API takes as a function's."""
    return "unreachable"


@server.tool()
def fail(message: str) -> str:
    """Fail with the message."""
    raise ValueError(message)


@server.tool()
def refuse(size: int) -> str:
    """Fail with a message of ``size`` characters."""
    raise ToolError("E" * size)


@server.tool()
def query(path: str, sql: str) -> str:
    """Run SQL on a database file (it only says it did)."""
    note(f"query {path} {sql}")
    return "done"


class Count(BaseModel):
    n: int


@server.tool()
def miscount() -> Annotated[CallToolResult, Count]:
    """Structured content that breaks the output schema it lists: ``n`` a string, not an integer
    (this server's own check, in pydantic's lax mode, lets "7" pass as 7; a client's JSON Schema check does not)."""
    return CallToolResult(content=[TextContent(type="text", text="seven")], structuredContent={"n": "7"})


@server.tool()
async def hang(seconds: float = 3600) -> str:
    """Wait (cancellably), then answer."""
    note("hang started")
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        note("hang cancelled")
        raise
    return "woke up"


@server.tool()
def chatter(size: int) -> str:
    """Write ``size`` bytes of log lines to stderr."""
    line = b"tool_server: " + b"." * 86 + b"\n"
    for _ in range(size // len(line)):
        os.write(2, line)
    return "chattered"


@server.tool()
def crash() -> str:
    """Exit the whole server mid-call, saying why on stderr."""
    sys.stderr.write("tool_server: crashing as asked\n")
    sys.stderr.flush()
    os._exit(3)


@server.tool()
async def garbage() -> str:
    """Say so on stderr, write a line that is not JSON-RPC on the wire to the client, then never answer."""
    sys.stderr.write("tool_server: writing garbage\n")
    sys.stderr.flush()
    stderr = os.readlink("/proc/self/fd/2")  # a pipe too, which fd 1 now writes to
    for fd in map(int, os.listdir("/proc/self/fd")):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
            writable = fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_WRONLY
        except OSError:
            continue
        if target.startswith("pipe:") and target != stderr and writable:  # the SDK moved the wire off fd 1; this finds it
            os.write(fd, b"this is not json\n")
    await asyncio.sleep(3600)
    return "unreachable"


@server.tool()
def picture() -> list:
    """A caption and a one-pixel PNG."""
    pixel = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
    return [TextContent(type="text", text="a red pixel"), ImageContent(type="image", data=pixel, mimeType="image/png")]


@server.tool()
def documents() -> list:
    """A link to a resource, an embedded text resource and an embedded binary one."""
    return [
        ResourceLink(type="resource_link", uri="file:///notes/todo.md", name="todo"),
        EmbeddedResource(type="resource", resource=TextResourceContents(uri="file:///notes/a.md", text="# A\n")),
        EmbeddedResource(type="resource", resource=BlobResourceContents(uri="file:///a.bin", blob="AAEC", mimeType="application/x-bin")),
    ]


@server.tool()
async def grow(name: str, ctx: Context) -> str:
    """Add a tool called ``name`` (it answers "grown") and tell the client the tool list changed:
    on its ``subscriptions/listen`` stream (2026-07-28), or in a notification (the older handshake)."""
    server.add_tool(lambda: "grown", name=name, description="Added while the server runs.")
    await ctx.notify_tools_changed()
    await ctx.session.send_tool_list_changed()
    return f"added {name}"


@server.tool()
def flood(size: int) -> str:
    """A text of ``size`` characters."""
    return "x" * size


async def serve_http(port_file: str) -> None:
    import uvicorn

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    app = server.streamable_http_app(host="127.0.0.1")
    # A client's subscriptions/listen stream stays open: stopped, the server closes it after a second.
    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=1)
    http = uvicorn.Server(config)
    task = asyncio.ensure_future(http.serve(sockets=[listener]))
    while not http.started:
        await asyncio.sleep(0.01)
    with open(port_file + ".tmp", "w") as out:
        out.write(str(listener.getsockname()[1]))
    os.replace(port_file + ".tmp", port_file)
    await task


if __name__ == "__main__":
    note(f"started {os.getpid()}")
    start = os.environ.get("TOOL_SERVER_START")
    if start == "fail":
        sys.stderr.write("tool_server: cannot start, the database is missing\n")
        sys.exit(2)
    if start == "banner":  # what some servers print before they serve: not JSON-RPC
        print("tool_server 1.0 ready", flush=True)
    if start == "hang":
        import time

        time.sleep(3600)
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        asyncio.run(serve_http(sys.argv[2]))
    else:
        server.run()
