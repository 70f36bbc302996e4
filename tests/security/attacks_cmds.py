"""Helpers for the command and path attacks: a workspace that runs what it is given,
and a look at whether a process is still alive."""

from __future__ import annotations

import time
from pathlib import Path

from elelem_lsp.agent.workspace import Workspace


class Permissive(Workspace):
    """A headless workspace whose person allows every command, so only the tool's own rules act."""

    async def allow_command(self, command: str) -> tuple[bool, str]:
        return True, ""


def alive(pid: int) -> bool:
    """Whether ``pid`` is a running process (a zombie waiting for its parent is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")


def still_alive_after(pid: int, seconds: float) -> bool:
    """Whether ``pid`` is still running ``seconds`` from now (a SIGKILL takes a moment to land)."""
    deadline = time.monotonic() + seconds
    while alive(pid):
        if time.monotonic() > deadline:
            return True
        time.sleep(0.01)
    return False
