"""A folder's MCP servers as one ``ToolSource``: those its settings name and those a front end
attached, started when a turn first needs them, a call routed by its ``NAME__`` to its server after
its arguments are checked and the person asked (``permission``), and every failure told to the person
once and given to the model as an ``ok: false`` result."""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ...agent.messages import ToolDefinition
from ...agent.toolbox import ToolSource, count, describe, failure, line_count
from ..frontend import BadRequest, Frontend, Level
from ..permission import allow_mcp_tool
from ..settings import McpServerConfig, Settings
from .calls import outcome, schema_problem, shown_call
from .connection import Connection
from .errors import InvalidResult, NotSent, ServerGone, describe_error
from .tools import SEPARATOR


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
        wanted, policy = self.configured(), self.settings().sandbox_policy(self.root)
        stale = [
            c
            for name, c in self.connections.items()
            if wanted.get(name) != c.config or (getattr(c.config, "sandbox", False) and c.policy != policy)
        ]
        for connection in stale:
            del self.connections[connection.name]
        self._stop_soon(stale)
        for name, config in wanted.items():
            if name not in self.connections:
                self.connections[name] = Connection(
                    name, config, self.root, on_garbage=self._tell_garbage, on_crash=self._tell_crash, policy=policy
                )

    async def definitions(self) -> list[ToolDefinition]:
        await self._start_those(("stopped", "crashed"))
        return [d for c in self.connections.values() if c.state == "ready" for d in c.definitions()]

    async def counted(self) -> list[ToolDefinition]:
        # A server not started yet is started to know its tools; one that crashed is left for the
        # next turn to start again, its last listing counted (those are the tools it will offer).
        await self._start_those(("stopped",))
        return [d for c in self.connections.values() if c.state in ("ready", "crashed") for d in c.definitions()]

    async def _start_those(self, states: tuple[str, ...]) -> None:
        self.sync()
        waiting = [c for c in self.connections.values() if c.state in states]
        if waiting:
            await asyncio.gather(*(self._start(connection) for connection in waiting))

    async def _start(self, connection: Connection) -> None:
        await connection.start()
        if connection.state == "failed":
            self._tell(connection)

    def _tell(self, connection: Connection, what: str | None = None, level: Level = "error") -> None:
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
    def attach(self, servers: dict[str, Any]) -> None:
        """Servers a front end got from its protocol (ACP's ``session/new``), in the ``mcpServers``
        settings' shape, beside the settings'; BadRequest naming what is wrong with them."""
        try:
            self.attached = Settings.model_validate({"mcpServers": servers}).mcp_servers
        except ValidationError as error:
            raise BadRequest(f"mcpServers: {describe(error)}") from None

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

            def close_stderr(_: asyncio.Future[None], connection: Connection = connection) -> None:
                connection.close_stderr()

            task.add_done_callback(close_stderr)
            self.stopping.add(task)
            task.add_done_callback(self.stopping.discard)

    async def stop(self) -> None:
        """Stop every server and wait until each has."""
        self.stop_soon()
        await asyncio.gather(*list(self.stopping))
