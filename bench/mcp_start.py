"""MCP start-up: how long a folder's first turn waits for its MCP servers, one against several.

Host-level, no editor: each run is a fresh Host whose folder names N copies of the test tool
server (tests/mcp/tool_server.py, written with the SDK's MCPServer), and the figure is the time
``offered()`` takes to start them all and list their tools, then one call's round trip and the
time to stop them. Servers start in parallel: N servers cost less than N times one, down to what
the machine's cores allow (each tool server spends about a second of CPU importing the SDK).
``python bench/mcp_start.py [--runs R]`` (default 3 runs of N = 1 and N = 3; about 30 s).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from host.memory_frontend import MemoryFrontend  # noqa: E402

from elelem_lsp.host.host import Host  # noqa: E402

TOOL_SERVER = ROOT / "tests" / "mcp" / "tool_server.py"


async def one_run(root: Path, servers: int) -> tuple[float, float, float]:
    config = {"command": sys.executable, "args": [str(TOOL_SERVER)]}
    settings = {"mcpServers": {f"s{i}": config for i in range(servers)}, "mcp": "allow"}
    host = Host(MemoryFrontend(settings_by_folder={root.as_uri(): settings}))
    host.sync_folders({root.as_uri(): root})
    folder = host.agents[root.as_uri()]
    toolbox = (await folder.ready()).toolbox
    started = time.perf_counter()
    offered = await toolbox.offered()
    ready = time.perf_counter() - started
    assert sum(d["function"]["name"].endswith("__echo") for d in offered) == servers, "a server did not start"
    started = time.perf_counter()
    result = await toolbox.call("s0__echo", {"text": "hi"}, folder.workspace)
    call = time.perf_counter() - started
    assert result["ok"], result
    started = time.perf_counter()
    await host.shutdown()
    return ready, call, time.perf_counter() - started


def line(label: str, values: list[float]) -> str:
    ms = [v * 1000 for v in values]
    return f"{label:<42}{statistics.median(ms):9.1f} ({min(ms):.1f}–{max(ms):.1f})"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    runs = parser.parse_args().runs
    root = Path.cwd()
    import mcp  # noqa: F401  (the servers' start, not the SDK's import, is measured)

    print(f"{'figure (ms), median (min–max) of ' + str(runs) + ' runs':<42}")
    for servers in (1, 3):
        figures = [await one_run(root, servers) for _ in range(runs)]
        print(line(f"{servers} server(s): start and list tools", [f[0] for f in figures]))
        print(line(f"{servers} server(s): one echo call", [f[1] for f in figures]))
        print(line(f"{servers} server(s): stop all", [f[2] for f in figures]))


if __name__ == "__main__":
    asyncio.run(main())
