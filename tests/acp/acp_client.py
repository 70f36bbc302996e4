"""An ACP client for tests: ``elelem-lsp acp`` as a real subprocess, driven through the
``agent-client-protocol`` package's client-side connection.

``RecordingClient`` keeps every ``session/update``; answers permission requests from a
list of option kinds (``allow_once``, ``allow_always``, ``reject_once``, ``cancelled``, or ``hold``:
the kind the test later sets on ``held``);
serves ``fs/*`` from its own buffers (unsaved text wins over the disk, as in an editor);
and runs ``terminal/*`` as real subprocesses. (This folder has no ``__init__.py``: a test
package named ``acp`` would hide the library.)
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, AsyncIterator

from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    CreateTerminalResponse,
    DeniedOutcome,
    FileSystemCapabilities,
    Implementation,
    ReadTextFileResponse,
    RequestPermissionResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    WaitForTerminalExitResponse,
)

AGENT_COMMAND = (sys.executable, "-m", "elelem_lsp", "acp")


@dataclass
class Terminal:
    process: asyncio.subprocess.Process
    command: list[str]
    cwd: str | None
    limit: int | None
    output: bytearray = field(default_factory=bytearray)
    reading: asyncio.Task[None] | None = None
    killed: bool = False
    released: bool = False


class RecordingClient:
    def __init__(self) -> None:
        self.updates: list[tuple[str, Any]] = []
        self.permission_answers: list[str] = []  # option kinds, in order; allow_once when they run out
        self.permission_requests: list[Any] = []
        self.held: asyncio.Future[str] | None = None  # the answer to a question on hold, when the test gives it
        self.buffers: dict[str, str] = {}  # path -> unsaved text
        self.reads: list[str] = []
        self.writes: list[tuple[str, str]] = []
        self.terminals: dict[str, Terminal] = {}
        self.counter = itertools.count(1)

    # -- what the agent sent ------------------------------------------------------
    def of(self, kind: str, session_id: str | None = None) -> list[Any]:
        return [u for s, u in self.updates if u.session_update == kind and session_id in (None, s)]

    def text(self, kind: str = "agent_message_chunk", since: int = 0) -> str:
        return "".join(u.content.text for _, u in self.updates[since:] if u.session_update == kind)

    def tool_updates(self, call_id: str) -> list[Any]:
        return [u for _, u in self.updates if u.session_update in ("tool_call", "tool_call_update") and u.tool_call_id == call_id]

    # -- the Client protocol --------------------------------------------------------
    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        self.updates.append((session_id, update))

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any], **_: Any) -> Any:
        self.permission_requests.append((tool_call, options))
        kind = self.permission_answers.pop(0) if self.permission_answers else "allow_once"
        if kind == "hold":
            self.held = asyncio.get_running_loop().create_future()
            kind = await self.held
        if kind == "cancelled":
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        [option] = [o for o in options if o.kind == kind]
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=option.option_id))

    async def read_text_file(self, session_id: str, path: str, **_: Any) -> ReadTextFileResponse:
        self.reads.append(path)
        if path in self.buffers:
            return ReadTextFileResponse(content=self.buffers[path])
        return ReadTextFileResponse(content=Path(path).read_text(encoding="utf-8"))

    async def write_text_file(self, session_id: str, path: str, content: str, **_: Any) -> None:
        self.writes.append((path, content))
        self.buffers[path] = content  # the editor's buffer shows it; the person saves it
        Path(path).write_text(content, encoding="utf-8")

    async def create_terminal(
        self, session_id: str, command: str, args: list[str] | None = None, cwd: str | None = None,
        output_byte_limit: int | None = None, **_: Any,
    ) -> CreateTerminalResponse:
        process = await asyncio.create_subprocess_exec(
            command, *(args or []), cwd=cwd, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT, start_new_session=True,
        )
        terminal_id = f"term-{next(self.counter)}"
        terminal = Terminal(process, [command, *(args or [])], cwd, output_byte_limit)
        terminal.reading = asyncio.ensure_future(self._read(terminal))
        self.terminals[terminal_id] = terminal
        return CreateTerminalResponse(terminal_id=terminal_id)

    async def _read(self, terminal: Terminal) -> None:
        assert terminal.process.stdout is not None
        while chunk := await terminal.process.stdout.read(65536):
            terminal.output += chunk

    async def terminal_output(self, session_id: str, terminal_id: str, **_: Any) -> TerminalOutputResponse:
        terminal = self.terminals[terminal_id]
        code = terminal.process.returncode
        if code is not None and terminal.reading is not None:
            await terminal.reading
        text = terminal.output.decode("utf-8", errors="replace")
        limit = terminal.limit or len(terminal.output) + 1
        return TerminalOutputResponse(
            output=text[-limit:], truncated=len(terminal.output) > limit,
            exit_status=TerminalExitStatus(exit_code=code if code is not None and code >= 0 else None) if code is not None else None,
        )

    async def wait_for_terminal_exit(self, session_id: str, terminal_id: str, **_: Any) -> WaitForTerminalExitResponse:
        code = await self.terminals[terminal_id].process.wait()
        return WaitForTerminalExitResponse(exit_code=code if code >= 0 else None, signal=None if code >= 0 else "SIGKILL")

    async def kill_terminal(self, session_id: str, terminal_id: str, **_: Any) -> None:
        terminal = self.terminals[terminal_id]
        terminal.killed = True
        with contextlib.suppress(ProcessLookupError):
            os.killpg(terminal.process.pid, signal.SIGKILL)

    async def release_terminal(self, session_id: str, terminal_id: str, **_: Any) -> None:
        terminal = self.terminals[terminal_id]
        terminal.released = True
        if terminal.process.returncode is None:
            await self.kill_terminal(session_id, terminal_id)

    def on_connect(self, conn: Any) -> None:
        pass


@dataclass
class RunningAgent:
    conn: Any
    process: asyncio.subprocess.Process
    client: RecordingClient
    root: Path
    stderr: Path
    session_id: str = ""
    init: Any = None
    new: Any = None
    wire: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (sender, message), every one both ways

    async def prompt(self, text: str | list[Any], session_id: str | None = None) -> Any:
        blocks = [text_block(text)] if isinstance(text, str) else text
        return await self.conn.prompt(session_id=session_id or self.session_id, prompt=blocks)

    async def raw(self, method: str, params: Any) -> Any:
        """A request as written, past the package's typed helpers (for malformed params)."""
        return await self.conn._conn.send_request(method, params)

    async def stop(self) -> int:
        """Close the agent's stdin, as a client that quits does, and wait for it to exit."""
        assert self.process.stdin is not None
        self.process.stdin.write_eof()
        return await asyncio.wait_for(self.process.wait(), 10)

    def log(self) -> str:
        return self.stderr.read_text(errors="replace")


def capabilities(fs: bool | str, terminal: bool) -> ClientCapabilities:
    """``fs``: both file methods (True), none (False), or only ``"read"`` or ``"write"``."""
    files = FileSystemCapabilities(read_text_file=fs in (True, "read"), write_text_file=fs in (True, "write"))
    return ClientCapabilities(fs=files, terminal=terminal)


@contextlib.asynccontextmanager
async def running_agent(
    root: Path, logs: Path, *, fs: bool | str = True, terminal: bool = True, args: tuple[str, ...] = ("--trust",),
    env: dict[str, str] | None = None, client: RecordingClient | None = None, new_session: bool = True,
) -> AsyncIterator[RunningAgent]:
    """``elelem-lsp acp`` in ``root``, initialized with the given client capabilities (and a session)."""
    client = client or RecordingClient()
    logs.mkdir(parents=True, exist_ok=True)
    stderr_path = logs / f"agent-{time.monotonic_ns()}.log"
    with stderr_path.open("wb") as stderr:
        async with spawn_agent_process(
            client, *AGENT_COMMAND, *args, cwd=root, env={**os.environ, **(env or {})},
            transport_kwargs={"stderr": stderr},
        ) as (conn, process):
            agent = RunningAgent(conn, process, client, root, stderr_path)
            conn._conn.add_observer(  # the messages as written on the pipe, for the schema check
                lambda event: agent.wire.append(("client" if event.direction.value == "outgoing" else "agent", event.message))
            )
            agent.init = await asyncio.wait_for(
                conn.initialize(
                    protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities(fs, terminal),
                    client_info=Implementation(name="test-client", title="Test Client", version="1.0"),
                ),
                30,
            )
            if new_session:
                agent.new = await conn.new_session(cwd=str(root), mcp_servers=[])
                agent.session_id = agent.new.session_id
            yield agent
