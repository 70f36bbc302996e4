"""MCP servers: a folder's Model Context Protocol servers, as tools its session can call.

This bridges the official ``mcp`` SDK's client (a process over stdio, or streamable HTTP)
and the agent's ``ToolSource``. Servers start when a turn first needs the folder's tools,
in parallel, each within its start timeout; each keeps its SDK session open in a task of
its own until it is stopped. A server's tools are offered as ``NAME__tool`` with the
server's JSON schema as it is; arguments are checked against it (``jsonschema``) and the
person asked (``permission``) before a call goes out, and every call has a timeout. A
server that fails to start, stops mid-call, hangs or sends garbage gives the model an
``ok: false`` result and the person one message naming the server, what happened and
the end of its stderr; a server whose session ended (mid-call or between calls) is
started again on its next use.
Cancelling the turn cancels the call in flight (the SDK sends ``notifications/cancelled``).
"""

from __future__ import annotations

import asyncio
import importlib
import json
import logging
import os
import re
from collections.abc import Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..agent.messages import ToolDefinition
from ..agent.toolbox import ToolSource, count, encode, failure, line_count
from ..agent.tools.execute import OUTPUT_CAP
from .frontend import Frontend
from .permission import allow_mcp_tool
from .settings import McpServerConfig, Settings, StdioServer

log = logging.getLogger(__name__)

SEPARATOR = "__"
STDERR_TAIL = 1500  # bytes of a failed server's stderr shown to the person
STDERR_KEPT = 64 * 1024  # bytes of a server's stderr kept, however much a chatty one writes
ARGUMENTS_SHOWN = 300  # characters of a call's arguments in the question to the person
STOP_TIMEOUT = 10.0  # seconds a server is given to stop (the SDK closes stdin, then terminates, then kills)
CONNECTION_CLOSED = -32000  # the SDK's error code for a connection that ended
TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")  # what the model APIs accept as a function's name


class ServerGone(Exception):
    """The server's connection ended or never began; the message says how."""


class NotSent(ServerGone):
    """The connection had ended before the call went out: the server never saw it."""


class InvalidResult(Exception):
    """The server answered with what the SDK does not accept as a tool result."""


@dataclass
class Connection:
    """One configured server: its state, its tools and the task that holds its SDK session."""

    name: str
    config: McpServerConfig
    root: Path
    state: str = "stopped"  # stopped, starting, ready, failed, crashed (ended after it was ready: started again on next use)
    error: str | None = None
    tools: dict[str, Any] = field(default_factory=dict)  # the SDK's Tool objects, by the server's names
    unnamed: list[str] = field(default_factory=list)  # tools left out: NAME__tool is no name a model API takes
    validators: dict[str, Any] = field(default_factory=dict)
    client: Any = None
    calls: int = 0  # calls in flight: one that sees the session end tells of it
    task: asyncio.Task[None] | None = None
    stop_event: asyncio.Event = field(default_factory=asyncio.Event)
    stderr: StderrPipe | None = None  # the pipe the process writes its stderr to
    ended_by: BaseException | None = None  # what ended the session after it was ready, when it was an error
    garbage: str | None = None  # the last line it sent that is not JSON-RPC (the SDK skips it)
    on_garbage: Callable[[Connection], None] | None = None  # told of the first such line of each start
    on_crash: Callable[[Connection], None] | None = None  # told when its session ends between calls
    relisting: asyncio.Task[None] | None = None  # listing the tools again, after the server said they changed
    tools_stale: bool = False  # told of a change since the listing in progress began

    # -- starting and stopping ---------------------------------------------------
    async def start(self) -> None:
        """Connect and list the tools; on failure the state says why (nothing is raised)."""
        await self.stop()
        self.state, self.error, self.tools, self.garbage, self.ended_by = "starting", None, {}, None, None
        self.stop_event = asyncio.Event()
        ready: asyncio.Future[list[Any]] = asyncio.get_running_loop().create_future()
        self.task = asyncio.ensure_future(self._serve(ready))
        timeout = self.config.start_timeout
        try:
            async with asyncio.timeout(timeout):
                tools = await asyncio.shield(ready)
        except TimeoutError:
            await self.stop()
            self._failed(f"did not start within {timeout:g}s")
            return
        except asyncio.CancelledError:
            await self.stop()
            raise
        except Exception as error:
            await self.stop()
            self._failed(f"could not start: {describe_error(error)}")
            return
        self._offer(tools)
        self.state = "ready"

    def _offer(self, tools: list[Any]) -> None:
        """The server's tools, as the model is offered them: those whose name a model API takes."""
        offered = {tool.name: tool for tool in tools if TOOL_NAME.match(f"{self.name}{SEPARATOR}{tool.name}")}
        self.unnamed = sorted(tool.name for tool in tools if tool.name not in offered)
        if self.unnamed:
            log.warning(
                "MCP server %s: tools left out, their names do not fit [A-Za-z0-9_-]{1,64}: %s",
                self.name,
                ", ".join(self.unnamed),
            )
        self.tools, self.validators = offered, {}

    async def _serve(self, ready: asyncio.Future[list[Any]]) -> None:
        """Hold the SDK session open until stopped; what ends it early is the state's."""
        try:
            mcp = await asyncio.to_thread(importlib.import_module, "mcp")  # a second or more: off the loop
            async with AsyncExitStack() as stack:
                transport = watched(await self._transport(stack), self._session_ended)
                client = await stack.enter_async_context(mcp.Client(transport, message_handler=self._incoming))
                tools = await list_tools(client)
                self.client = client
                ready.set_result(tools)
                following = asyncio.ensure_future(self._follow_tool_changes(client))
                try:
                    await self.stop_event.wait()  # stop(), or the session ended
                finally:  # before the session closes
                    following.cancel()
                    await asyncio.wait([following])
        except asyncio.CancelledError:
            ready.cancel()
            raise
        except Exception as error:  # an ExceptionGroup from the SDK's task groups, too
            if not ready.done():
                ready.set_exception(error)
            else:
                log.info("MCP server %s ended: %s", self.name, describe_error(error))
                self.ended_by = error
        finally:
            self.client = None

    def _session_ended(self) -> None:
        """What the server sends ended (its process exited, or the HTTP transport failed): unless
        we stopped it, it crashed; a call in flight tells of that, else the person is told here."""
        if self.stop_event.is_set() or self.state != "ready":
            return  # stopped by us, or still starting: start() says why
        self.state, self.error = "crashed", "ended its session"
        self.stop_event.set()  # out of the session, so that the process is reaped
        if self.calls == 0 and self.on_crash is not None:
            self.on_crash(self)

    async def _incoming(self, message: Any) -> None:
        """What the SDK hands on besides answers: a line it could not read arrives as an exception,
        and a server whose tools changed says so (``notifications/tools/list_changed``)."""
        if isinstance(message, Exception):
            first = self.garbage is None
            self.garbage = unreadable(message)
            if first and self.on_garbage is not None:
                self.on_garbage(self)
        elif getattr(message, "method", None) == "notifications/tools/list_changed":  # a 2025-era server
            # Not awaited here: the SDK delivers the answer to our request through this same reader.
            self.tools_stale = True
            if self.relisting is None or self.relisting.done():  # a flood of notices: one listing at a time
                self.relisting = asyncio.ensure_future(self._relist())

    async def _follow_tool_changes(self, client: Any) -> None:
        """A 2026-07-28 server tells of a changed tool list on a ``subscriptions/listen`` stream;
        an older one sends a notification instead (``_incoming``)."""
        from mcp.client.subscriptions import ListenNotSupportedError

        tools = getattr(client.server_capabilities, "tools", None)
        if not (tools and tools.list_changed):
            return  # it says its tools never change
        try:
            async with client.listen(tools_list_changed=True) as changes:
                async for _change in changes:
                    await self._relist()
        except ListenNotSupportedError:
            pass
        except Exception as error:  # a server without subscriptions: its tools stay as listed
            log.info("MCP server %s: not following its tool list: %s", self.name, describe_error(error))

    async def _relist(self) -> None:
        """The tool list again, for the next request to the model; a failure keeps the old one."""
        client = self.client
        self.tools_stale = True
        while self.tools_stale and client is not None and self.state == "ready":
            self.tools_stale = False
            try:
                self._offer(await list_tools(client))
            except Exception as error:
                log.info("MCP server %s: could not list its changed tools: %s", self.name, describe_error(error))
                return

    async def _transport(self, stack: AsyncExitStack) -> Any:
        if isinstance(self.config, StdioServer):
            from mcp import StdioServerParameters
            from mcp.client.stdio import stdio_client

            self.close_stderr()
            self.stderr = StderrPipe()  # its end kept after the process ends, for the person
            parameters = StdioServerParameters(
                command=self.config.command, args=self.config.args, env=self.config.env or None, cwd=self.root
            )
            return stdio_client(parameters, errlog=self.stderr.writer)
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        self.close_stderr()
        http = await stack.enter_async_context(  # the SDK's own timeouts: 30s, and 300s to read an event stream
            httpx2.AsyncClient(headers=self.config.headers, timeout=httpx2.Timeout(30, read=300))
        )
        return streamable_http_client(self.config.url, http_client=http)

    async def stop(self) -> None:
        """End the session: the SDK closes the server's stdin, then terminates, then kills it."""
        task, self.task = self.task, None
        if task is None:
            return
        self.stop_event.set()
        done: set[Any] = set()
        if self.client is not None:  # serving: it leaves its session by itself
            done, _ = await asyncio.wait({task}, timeout=STOP_TIMEOUT)
        if not done:  # still in the handshake (or stuck): cancelled, the SDK still stops the process
            task.cancel()
            await asyncio.wait({task}, timeout=STOP_TIMEOUT)
        if self.state in ("ready", "starting"):
            self.state = "stopped"

    def _failed(self, why: str) -> None:
        self.state, self.error = "failed", why

    def _crashed(self, why: str) -> None:
        self.state, self.error = "crashed", why

    def close_stderr(self) -> None:
        if self.stderr is not None:
            self.stderr.close()
            self.stderr = None

    def stderr_tail(self) -> str:
        """The end of what the process wrote to stderr."""
        return self.stderr.tail() if self.stderr is not None else ""

    # -- calls -------------------------------------------------------------------
    async def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        """The SDK's CallToolResult. NotSent when the session had ended before the call went out,
        ServerGone when it ended under the call, TimeoutError when it hung, InvalidResult when the
        answer is no tool result; the SDK's MCPError when the server refused the call."""
        client = self.client
        if client is None or self.state != "ready":
            raise NotSent(f"ended its session ({self.error or self.state})")
        self.calls += 1
        try:
            return await self._call(client, tool, arguments)
        finally:
            self.calls -= 1

    async def _call(self, client: Any, tool: str, arguments: dict[str, Any]) -> Any:
        from mcp import MCPError

        try:
            async with asyncio.timeout(self.config.call_timeout):
                return await client.call_tool(tool, arguments)
        except MCPError as error:
            if error.code != CONNECTION_CLOSED:
                raise  # the server's own answer
            why = error.error.message
        except TimeoutError:
            raise
        except Exception as error:
            if not lost_connection(error):  # the SDK read the answer and could not take it as a result
                raise InvalidResult(unreadable(error).splitlines()[0]) from error
            why = describe_error(error)
        self._crashed(f"ended the connection ({why}) at a call of {tool}")
        await self.stop()  # after it, ended_by says what ended the session
        if refused_connection(self.ended_by):  # an HTTP server gone before the call: it never saw it
            raise NotSent(self.error)
        raise ServerGone(self.error)

    def validator(self, tool: str) -> Any:
        """A jsonschema validator of the tool's input schema (None when the schema itself is broken)."""
        if tool not in self.validators:
            import jsonschema

            schema = self.tools[tool].input_schema
            cls = jsonschema.validators.validator_for(schema)
            try:
                cls.check_schema(schema)
                self.validators[tool] = cls(schema)
            except jsonschema.SchemaError:
                self.validators[tool] = None  # the server will judge the arguments itself
        return self.validators[tool]

    def definitions(self) -> list[ToolDefinition]:
        return [
            {
                "type": "function",
                "function": {
                    "name": f"{self.name}{SEPARATOR}{tool.name}",
                    "description": tool.description or "",
                    "parameters": tool.input_schema,
                },
            }
            for tool in self.tools.values()
        ]

    def status(self) -> dict[str, Any]:
        tail = self.stderr_tail() if self.state in ("failed", "crashed") else ""
        return {
            "name": self.name,
            "transport": "stdio" if isinstance(self.config, StdioServer) else "http",
            "state": self.state,
            "tools": sorted(self.tools) if self.state == "ready" else [],
            "error": self.error,
            **({"leftOut": self.unnamed} if self.unnamed else {}),
            **({"stderr": tail} if tail else {}),
        }


async def list_tools(client: Any) -> list[Any]:
    """Every tool the server lists, page after page."""
    tools: list[Any] = []
    cursor = None
    while True:
        page = await client.list_tools(cursor=cursor)
        tools += page.tools
        cursor = page.next_cursor
        if not cursor:
            return tools


class McpServers(ToolSource):
    """A folder's MCP servers: those its settings name, plus those a front end attached."""

    def __init__(self, frontend: Frontend, root: Path, settings: Callable[[], Settings]) -> None:
        self.frontend = frontend
        self.root = root
        self.settings = settings
        self.attached: dict[str, McpServerConfig] = {}
        self.connections: dict[str, Connection] = {}
        self.allowed_for_session: set[str] = set()
        self.stopping: set[asyncio.Task[None]] = set()

    def configured(self) -> dict[str, McpServerConfig]:
        return {**self.settings().mcp_servers, **self.attached}

    async def prepare(self) -> None:
        """Import the SDK off the loop ahead of the first turn, when there are servers to start."""
        if self.configured():
            await asyncio.to_thread(importlib.import_module, "mcp")

    def sync(self) -> None:
        """Stop (in the background) the servers no longer configured, or configured otherwise; add the new ones."""
        wanted = self.configured()
        stale = [c for name, c in self.connections.items() if wanted.get(name) != c.config]
        for connection in stale:
            del self.connections[connection.name]
        self._stop_soon(stale)
        for name, config in wanted.items():
            if name not in self.connections:
                self.connections[name] = Connection(
                    name, config, self.root, on_garbage=self._tell_garbage, on_crash=self._tell_crash
                )

    async def definitions(self) -> list[ToolDefinition]:
        self.sync()
        waiting = [c for c in self.connections.values() if c.state in ("stopped", "crashed")]
        if waiting:
            await asyncio.gather(*(self._start(connection) for connection in waiting))
        return [d for c in self.connections.values() if c.state == "ready" for d in c.definitions()]

    async def _start(self, connection: Connection) -> None:
        await connection.start()
        if connection.state == "failed":
            self._tell(connection)

    def _tell(self, connection: Connection, what: str | None = None, level: str = "error") -> None:
        """One message to the person: the server, what happened (its state's error unless said), its stderr's end."""
        tail = connection.stderr_tail()
        self.frontend.show_message(
            level,
            f"elelem: MCP server {connection.name!r} {what or connection.error}"
            + (f"; its stderr ends:\n{tail}" if tail else ""),
        )

    def _tell_garbage(self, connection: Connection) -> None:
        self._tell(
            connection,
            f"wrote what is not JSON-RPC where only MCP messages belong ({connection.garbage}); such lines are skipped",
            "warning",
        )

    def _tell_crash(self, connection: Connection) -> None:
        self._tell(connection, f"{connection.error}; it is started again on its next use")

    def serves(self, name: str) -> bool:
        return self._connection_of(name) is not None

    def _connection_of(self, name: str) -> Connection | None:
        server, separator, _ = name.partition(SEPARATOR)
        return self.connections.get(server) if separator else None

    async def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        connection = self._connection_of(name)
        assert connection is not None  # serves() said so
        tool = name[len(connection.name) + len(SEPARATOR) :]
        if connection.state == "crashed":
            await self._start(connection)  # its session ended earlier: started again for this call
        if connection.state != "ready":
            return self._unavailable(connection)
        if tool not in connection.tools:
            return failure(f'unknown tool: "{name}". {connection.name} offers: {", ".join(connection.tools) or "nothing"}')
        problem = schema_problem(connection.validator(tool), arguments)
        if problem:
            return failure(f"invalid arguments for {name}: {problem}")
        allowed, why = await allow_mcp_tool(
            connection.name, tool, shown_call(tool, arguments), self.settings(), self.allowed_for_session, self.frontend
        )
        if not allowed:
            return failure(f"not allowed to call {name}: {why}")
        try:
            try:
                result = await connection.call(tool, arguments)
            except NotSent:  # its session ended while the person was asked, or before: once more, on a new one
                if self.connections.get(connection.name) is not connection:  # stopped for good meanwhile (reload)
                    return self._unavailable(connection)
                await self._start(connection)
                if connection.state != "ready":
                    return self._unavailable(connection)
                result = await connection.call(tool, arguments)
        except ServerGone as gone:
            self._tell(connection)
            return failure(f'MCP server "{connection.name}" {gone}; it is started again on its next use')
        except TimeoutError:
            timeout = connection.config.call_timeout
            why = f" (it wrote what is not JSON-RPC: {connection.garbage})" if connection.garbage else ""
            self._tell(connection, f"did not answer a call of {tool} within {timeout:g}s{why}; the call was cancelled")
            return failure(f"{name} did not answer within {timeout:g}s{why}; the call was cancelled")
        except InvalidResult as invalid:
            self._tell(connection, f"returned an invalid result to a call of {tool}: {invalid}")
            return failure(f'MCP server "{connection.name}" returned an invalid result: {invalid}')
        except Exception as error:  # the server answered with a JSON-RPC error
            return failure(f'MCP server "{connection.name}" refused the call: {describe_error(error)}')
        return outcome(result)

    def _unavailable(self, connection: Connection) -> dict[str, Any]:
        return failure(f'MCP server "{connection.name}" is not available: {connection.error or connection.state}')

    def summary(self, name: str, result: dict[str, Any]) -> str:
        cut = " (cut short)" if result.get("truncated") else ""
        return count(line_count(result.get("content", "")), "line") + cut

    # -- what a front end asks -------------------------------------------------------
    def attach(self, servers: dict[str, McpServerConfig]) -> None:
        """Servers a front end got from its protocol (ACP's ``session/new``), beside the settings'."""
        self.attached = dict(servers)

    def status(self) -> list[dict[str, Any]]:
        states = {name: c.status() for name, c in self.connections.items()}
        for name, config in self.configured().items():  # configured but not yet needed
            states.setdefault(name, Connection(name, config, self.root).status())
        return list(states.values())

    def stop_soon(self) -> None:
        """Stop every server without waiting; each starts again when a turn next needs it."""
        connections, self.connections = list(self.connections.values()), {}
        self._stop_soon(connections)

    def _stop_soon(self, connections: list[Connection]) -> None:
        for connection in connections:
            task = asyncio.ensure_future(connection.stop())
            task.add_done_callback(lambda _, connection=connection: connection.close_stderr())
            self.stopping.add(task)
            task.add_done_callback(self.stopping.discard)

    async def stop(self) -> None:
        """Stop every server and wait until each has."""
        self.stop_soon()
        await asyncio.gather(*list(self.stopping))


def shown_call(tool: str, arguments: dict[str, Any]) -> str:
    """``query {"sql": "DROP TABLE users"}``: the call as the person is asked about it, every argument
    shown (an MCP tool's arguments have no main one), cut short past ARGUMENTS_SHOWN characters."""
    shown = json.dumps(arguments, ensure_ascii=False) if arguments else ""
    if len(shown) > ARGUMENTS_SHOWN:
        shown = shown[:ARGUMENTS_SHOWN] + "…"
    return f"{tool} {shown}".rstrip()


def schema_problem(validator: Any, arguments: dict[str, Any]) -> str | None:
    """``path: problem`` for each way the arguments break the tool's schema, None when they fit
    (or when the schema cannot be followed: the server then judges the arguments itself)."""
    if validator is None:
        return None
    from referencing.exceptions import Unresolvable

    try:
        errors = sorted(validator.iter_errors(arguments), key=lambda e: [str(p) for p in e.absolute_path])
    except Unresolvable as error:  # a $ref to what the schema does not hold
        log.info("not checking arguments against a schema with an unresolvable reference: %s", error)
        return None
    problems = [f"{'.'.join(str(part) for part in error.absolute_path) or 'arguments'}: {error.message}" for error in errors]
    return "; ".join(problems) or None


def outcome(result: Any) -> dict[str, Any]:
    """The tool result the model reads: text, a placeholder per image or audio, resources, structured
    content; cut short (``truncated``) where its encoding would pass OUTPUT_CAP, as ``read``'s is."""
    text = "\n".join(filter(None, (content_text(block) for block in result.content)))
    if result.is_error:
        return capped(failure(text or "the tool reported an error and said nothing more"), "error")
    answer: dict[str, Any] = {"ok": True, "content": text}
    if result.structured_content is not None:
        answer["structured"] = result.structured_content
    return capped(answer, "content")


def capped(answer: dict[str, Any], field: str) -> dict[str, Any]:
    """The answer as it is when its encoding fits OUTPUT_CAP; else without structured content and
    with the text of ``field`` cut where the encoding fits."""
    if len(encode(answer)) <= OUTPUT_CAP:
        return answer
    answer = {key: value for key, value in answer.items() if key != "structured"}
    text, answer[field], answer["truncated"] = answer[field], "", True
    room = OUTPUT_CAP - len(encode(answer))  # for the text's escaped characters, the quotes are there
    fits, too_long = 0, min(len(text), room) + 1  # a character encodes to one or more: never fewer
    while too_long - fits > 1:  # the longest start of the text that fits
        middle = (fits + too_long) // 2
        if len(json.dumps(text[:middle], ensure_ascii=False)) - 2 <= room:
            fits = middle
        else:
            too_long = middle
    answer[field] = text[:fits]
    return answer


def content_text(block: Any) -> str:
    """One content block as text: images, audio and binary resources as a short placeholder."""
    kind = getattr(block, "type", "")
    if kind == "text":
        return block.text
    if kind in ("image", "audio"):
        size = len(block.data) * 3 // 4 - block.data[-2:].count("=")  # base64's length, decoded
        return f"[{kind}: {block.mime_type}, {size} bytes, not shown]"
    if kind == "resource_link":
        return f"[resource: {block.uri}{f' ({block.name})' if block.name else ''}]"
    if kind == "resource":
        resource = block.resource
        body = getattr(resource, "text", None)
        if body is not None:
            return f"[resource: {resource.uri}]\n{body}"
        return f"[resource: {resource.uri}, {resource.mime_type or 'binary'}, not shown]"
    return f"[{kind or 'unknown'} content, not shown]"


def lost_connection(error: BaseException) -> bool:
    """Whether what a call raised says the transport failed (rather than that an answer was wrong)."""
    import anyio
    import httpx2

    return isinstance(
        error, (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, httpx2.TransportError, OSError)
    )


def refused_connection(error: BaseException | None) -> bool:
    """Whether the session ended because the HTTP server could not be reached: no request got to it."""
    import httpx2

    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return isinstance(error, httpx2.ConnectError)


class StderrPipe:
    """A process's stderr: a pipe read as the process writes, of which the last STDERR_KEPT bytes are kept."""

    def __init__(self) -> None:
        reader, writer = os.pipe()
        os.set_blocking(reader, False)
        self.reader: int | None = reader
        self.writer = os.fdopen(writer, "wb")  # the process's stderr (ours stays open: no end of input while it is)
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


def unreadable(error: Exception) -> str:
    """A line the SDK could not read, in short: what was wrong and the start of the line."""
    errors = getattr(error, "errors", None)
    if callable(errors):  # pydantic's ValidationError: the JSON or the message shape was wrong
        first = errors()[0]
        return f"{first['msg']}: {str(first.get('input', ''))[:80]!r}"
    return describe_error(error)


def describe_error(error: BaseException) -> str:
    """What went wrong in one line: the first real error inside the SDK's exception groups."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    if isinstance(error, OSError) and error.strerror:
        return f"{error.strerror}: {error.filename}" if error.filename else error.strerror
    message = getattr(getattr(error, "error", None), "message", None) or str(error)
    return message or type(error).__name__
