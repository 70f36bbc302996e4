"""``checkCommand`` where no editor reports problems: the terminal (``elelem-lsp ask``, which
announces nothing) runs it after the model's change, with the real ``ruff check``; the model
reads its output with the tool result, and the person sees the ``checked`` row. It runs in the
command sandbox, which sees a ``ruff`` installed under /tmp (a venv there) as any other."""

from __future__ import annotations

import json
import shutil
import sysconfig
from pathlib import Path

import pytest
from optional_parts import require
from scaffold import add_plugin, run_ask, write_script, write_user_settings
from security.sandbox_tmp import under_tmp  # noqa: F401  (a fixture)

RUFF = "ruff check --no-cache --output-format concise {files}"


@pytest.mark.parametrize("ruff_lives", ["on the PATH", "under /tmp"])
def test_the_terminal_runs_the_check_command_and_the_model_reads_ruff(project: Path, home: Path, under_tmp: Path, ruff_lives) -> None:
    ruff = shutil.which("ruff", path=sysconfig.get_path("scripts")) or shutil.which("ruff")  # the program, not a shim
    require(ruff is not None, "ruff", "ruff", "python3 -m pip install -e '.[dev]'")
    assert ruff is not None
    env = {}
    if ruff_lives == "under /tmp":  # the only ruff on the PATH is a copy in /tmp, outside the workspace
        (under_tmp / "bin").mkdir()
        shutil.copy(Path(ruff).resolve(), under_tmp / "bin" / "ruff")
        env = {"PATH": f"{under_tmp}/bin:/usr/bin:/bin"}
    add_plugin(project, "scripted")
    write_user_settings(home, {"provider": "scripted", "checkCommand": RUFF, "allowCommands": ["ruff check"]})
    write = {"type": "doing", "id": "w", "name": "write", "arguments": {"path": "app.py", "content": "print(undefined_name)\n"}}
    write_script(project, [[write], [{"type": "say_tool_result"}]])

    done = run_ask(project, "write app.py", env=env)

    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout)  # the model was handed the write's result, with the check in it
    checked = said["checked"].splitlines()
    assert checked[0] == "checked app.py: ruff check --no-cache --output-format concise app.py (exit 1)"
    assert "app.py:1:7: F821 Undefined name `undefined_name`" in checked
    assert "✓ checked app.py: ruff check --no-cache --output-format concise app.py (exit 1)" in done.stderr
    assert "    app.py:1:7: F821 Undefined name `undefined_name`" in done.stderr
