"""One MCP server's connection: its state, its tools and the task that holds the SDK session open
from start to stop, and a call through it with its timeout, each way it can fail an exception."""

from __future__ import annotations

import asyncio
import importlib
import logging
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...agent.messages import ToolDefinition
from ...agent.sandbox import SandboxPolicy
from ..settings import McpServerConfig, StdioServer
from .errors import InvalidResult, NotSent, ServerGone, describe_error, lost_connection, refused_connection, unreadable
from .tools import definition, list_tools, offered, schema_validator
from .transport import StderrPipe, open_transport, watched

log = logging.getLogger(__name__)

STOP_TIMEOUT = 10.0  # seconds a server is given to stop (the SDK closes stdin, then terminates, then kills)
CONNECTION_CLOSED = -32000  # the SDK's error code for a connection that ended


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
    policy: SandboxPolicy = field(default_factory=SandboxPolicy)  # the sandbox of a server whose config asks for it

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
        self.tools, self.unnamed = offered(self.name, tools)
        self.validators = {}

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
        self.close_stderr()
        if isinstance(self.config, StdioServer):
            self.stderr = StderrPipe()  # its end kept after the process ends, for the person
        return await open_transport(self.config, self.root, stack, self.stderr, self.policy)

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
            self.validators[tool] = schema_validator(self.tools[tool].input_schema)
        return self.validators[tool]

    def definitions(self) -> list[ToolDefinition]:
        return [definition(self.name, tool) for tool in self.tools.values()]

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
