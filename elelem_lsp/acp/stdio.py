"""``elelem-lsp acp``: the ACP agent on stdin/stdout, until the client closes stdin or a stop
signal comes; only protocol messages reach stdout."""

from __future__ import annotations

import asyncio
import os
import sys

from acp import run_agent, stdio_streams
from acp.core import DEFAULT_STDIO_BUFFER_LIMIT_BYTES

from ..stop_signals import StopSignals
from .agent import ElelemAgent
from .wire import CheckedTransport


async def serve(stop_signals: StopSignals, *, trust: bool = False) -> None:
    """Speak ACP on stdin/stdout until the client closes stdin or a stop signal comes."""
    reader, writer = await protocol_streams()
    agent = ElelemAgent(trust=trust)
    try:
        # The Agent protocol lists every method; ours answers those it supports, the connection the rest.
        # Bad lines are answered, never fatal (wire.CheckedTransport). The package's schema (1.19)
        # still routes session/close and session/resume as unstable, as it does session/fork; the
        # current stable schema has the first two, which we answer, and the flag routes only these
        # three (fork, which we do not answer, stays "method not found").
        transport = CheckedTransport(reader, writer)
        await stop_signals.serve(run_agent(agent, transport, use_unstable_protocol=True))  # type: ignore[arg-type]
    finally:  # the MCP servers the sessions started, and their turns' commands, go with them
        await asyncio.gather(*(session.agent.shutdown() for session in agent.sessions.values()))


async def protocol_streams() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """stdin/stdout as the protocol's streams, with anything else written to stdout (a plugin's
    print, a child process) sent to stderr instead: only protocol messages reach the client."""
    protocol_out = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout, stdout = protocol_out, sys.stdout  # stdio_streams takes whatever sys.stdout is
    try:
        return await stdio_streams(limit=DEFAULT_STDIO_BUFFER_LIMIT_BYTES)
    finally:
        sys.stdout = stdout
