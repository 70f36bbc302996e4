"""The MCP servers the tests configure: the SDK-written tool_server.py over stdio or streamable
HTTP, and the reference filesystem server from npm; plus a check that a process is gone."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

TOOL_SERVER = Path(__file__).resolve().parent / "tool_server.py"
MCP_CACHE = Path.home() / ".cache" / "elelem-mcp"  # where .ci/run installs the npm reference servers
FILESYSTEM_SERVER = "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"
FILESYSTEM_INSTALL = (
    "mkdir -p ~/.cache/elelem-mcp && cp tests/mcp/reference/package*.json ~/.cache/elelem-mcp/ && npm ci --prefix ~/.cache/elelem-mcp"
)


SAY_RESULT = [{"type": "say_tool_result"}]  # a fetch of the scripted provider: the reply is the tool result it read


def call(tool: str, call_id: str = "1", /, **arguments: Any) -> list[dict[str, Any]]:
    """A fetch of the scripted provider asking for one tool call."""
    return [{"type": "doing", "id": call_id, "name": tool, "arguments": arguments}]


def tool_server(log: Path | None = None, **config: Any) -> dict[str, Any]:
    """The ``mcpServers`` entry of the stdio tool server; ``log`` collects its calls and cancellations."""
    env = {**config.pop("env", {}), **({"TOOL_SERVER_LOG": str(log)} if log else {})}
    return {"command": sys.executable, "args": [str(TOOL_SERVER)], **({"env": env} if env else {}), **config}


def start_http_tool_server(folder: Path) -> tuple[subprocess.Popen, str]:
    """The tool server on streamable HTTP at 127.0.0.1 and a port the OS picked; the process and its URL."""
    port_file = folder / "port"
    with open(folder / "http-server.log", "wb") as log:  # not a pipe: nobody reads it while it runs
        process = subprocess.Popen([sys.executable, str(TOOL_SERVER), "--http", str(port_file)], stderr=log)
    return process, str(port_file)


def alive(pid: int) -> bool:
    """Whether the process exists and is not a zombie waiting to be reaped."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def read_log(log: Path) -> list[str]:
    """What the tool server noted: ``started PID`` when it started, then its calls and cancellations."""
    return log.read_text().splitlines() if log.exists() else []


def calls_seen(log: Path) -> list[str]:
    """The calls and cancellations the tool server noted."""
    return [line for line in read_log(log) if not line.startswith("started ")]


def filesystem_server_path() -> Path:
    return Path(os.environ.get("ELELEM_MCP_CACHE", MCP_CACHE)) / FILESYSTEM_SERVER
