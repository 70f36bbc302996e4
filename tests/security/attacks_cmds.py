"""Helpers for the command and path attacks: a workspace that runs what it is given,
a look at whether a process is still alive, and a way to be refused by file permissions as root."""

from __future__ import annotations

import os
import time
from pathlib import Path


from elelem_lsp.agent.workspace import Workspace
from optional_parts import require_program


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


def without_root_powers() -> list[str]:
    """A command prefix under which file permissions bind, as they do for a normal user.

    Root reads and writes through any mode bits; ``setpriv`` drops the two capabilities
    that let it (it stays uid 0, so the files it owns are still its own).
    """
    if os.geteuid() != 0:
        return []
    setpriv = require_program("setpriv", "setpriv", "apt-get install util-linux (as root, file permissions refuse nothing without it)")
    drop = "-dac_override,-dac_read_search"
    return [setpriv, f"--inh-caps={drop}", f"--bounding-set={drop}"]
