"""Paths no file system can hold, or that the OS refuses, given to every tool.

A model (or a prompt injection reaching it) sends a NUL byte, a name or path too long,
a lone surrogate, a path through a file, a symlink loop, a folder it may not enter.
Each is an `ok: false` result with a clear message, nothing on disk changes, and no
traceback is logged; through a real server the turn goes on and stderr stays clean.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

import pytest

from .attacks_cmds import Permissive, without_root_powers
from elelem_lsp.agent.toolbox import Toolbox
from scaffold import add_plugin, write_script

BAD_PATHS = {
    "NUL byte": ("a\0b.txt", "NUL byte"),
    "NUL after a folder": ("src/\0", "NUL byte"),
    "NUL in a long path": ("x" * 100 + "\0" + "y" * 100, "NUL byte"),
    "5000 characters": ("x" * 5000, "too long"),
    "300-character part": ("src/" + "y" * 300, "too long"),
    "300 bytes in 150 characters": ("é" * 150, "too long"),
    "4200 bytes of short parts": ("a/" * 2100 + "f.txt", "too long"),
    "lone surrogate": ("\ud800.txt", "not valid text"),
    "home of an unknown user": ("~no-such-user-here/x.txt", "no such user"),
    "through a file": ("file.txt/inner", "Not a directory"),
    "deeper through a file": ("file.txt/a/b.txt", "Not a directory"),
    "symlink loop": ("loop", "loop"),
    "through a symlink loop": ("loop/x.txt", "loop"),
}


def arguments(tool: str, path: str) -> dict:
    return {
        "read": {"path": path},
        "write": {"path": path, "content": "x"},
        "edit": {"path": path, "old": "a", "new": "b"},
        "list": {"path": path},
        "grep": {"pattern": "a", "path": path},
    }[tool]


TOOLS = ["read", "write", "edit", "list", "grep"]


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "file.txt").write_text("a file\n")
    (root / "src").mkdir()
    os.symlink("loop", root / "loop")
    return Permissive(root)


def snapshot(root):
    return sorted((str(p.relative_to(root)), p.is_symlink() or p.read_bytes() if p.is_file() else None) for p in root.rglob("*"))


@pytest.mark.parametrize("tool", TOOLS)
@pytest.mark.parametrize(("path", "says"), BAD_PATHS.values(), ids=BAD_PATHS.keys())
async def test_a_path_no_file_system_takes_is_a_clear_refusal(ws, caplog, tool, path, says):
    before = snapshot(ws.root)
    with caplog.at_level(logging.DEBUG):
        result = await Toolbox().call(tool, arguments(tool, path), ws)
    assert result["ok"] is False
    assert says in result["error"] or (says == "loop" and "symbolic links" in result["error"]), result["error"]
    assert "Error:" not in result["error"] and "Traceback" not in result["error"]  # a message, not a repr
    assert len(result["error"]) < 300  # a 5000-character path is not echoed back whole
    assert snapshot(ws.root) == before
    assert len(caplog.records) <= 1 and not any(record.exc_info for record in caplog.records)


async def test_an_execute_command_with_a_nul_byte_is_refused_before_anyone_is_asked(tmp_path):
    asked = []

    class Asking(Permissive):
        async def allow_command(self, command):
            asked.append(command)
            return True, ""

    (tmp_path / "ws").mkdir()
    result = await Toolbox().call("execute", {"command": "touch a\0b"}, Asking(tmp_path / "ws"))
    assert result["ok"] is False and "NUL byte" in result["error"] and asked == []


@pytest.mark.parametrize(
    ("command", "says"),
    [("echo " + "x" * 300_000, "Argument list too long"), ("true", "No such file or directory")],
    ids=["command too long for the OS", "workspace folder gone"],
)
async def test_a_command_the_os_cannot_start_is_a_clear_refusal(tmp_path, caplog, command, says):
    root = tmp_path / "ws"
    root.mkdir()
    ws = Permissive(root)
    if says.startswith("No such"):
        root.rmdir()
    with caplog.at_level(logging.DEBUG):
        result = await Toolbox().call("execute", {"command": command}, ws)
    assert result["ok"] is False and says in result["error"] and len(result["error"]) < 300
    assert not any(record.exc_info for record in caplog.records)


# The permission attacks run in a subprocess: as root only a process without the
# capabilities that override file modes can be refused.
PERMISSION_SCRIPT = """
import asyncio, json, sys
from pathlib import Path
from elelem_lsp.agent.toolbox import Toolbox
from elelem_lsp.agent.workspace import Workspace

class Permissive(Workspace):
    async def allow_command(self, command):
        return True, ""

async def main():
    ws = Permissive(Path(sys.argv[1]))
    results = [await Toolbox().call(name, args, ws) for name, args in json.loads(sys.argv[2])]
    print(json.dumps(results))

asyncio.run(main())
"""

NO_ENTRY = {
    "a file it may not read": "locked.txt",
    "a folder it may not read": "closed",
    "a file in a folder it may not enter": "closed/inside.txt",
    "a new file in a folder it may not enter": "closed/new.txt",
    "a folder in a folder it may not enter": "closed/sub",
}


@pytest.mark.parametrize("path", NO_ENTRY.values(), ids=NO_ENTRY.keys())
def test_a_path_the_os_refuses_to_open_is_a_clear_refusal(tmp_path, path):
    root = tmp_path / "ws"
    (root / "closed" / "sub").mkdir(parents=True)
    (root / "closed" / "inside.txt").write_text("secret a\n")
    (root / "locked.txt").write_text("secret a\n")
    (root / "locked.txt").chmod(0)
    (root / "closed").chmod(0)
    calls = [[tool, arguments(tool, path)] for tool in TOOLS]
    try:
        run = subprocess.run(
            [*without_root_powers(), sys.executable, "-c", PERMISSION_SCRIPT, str(root), json.dumps(calls)],
            capture_output=True, text=True, timeout=60,
        )
    finally:
        (root / "closed").chmod(0o755)
        (root / "locked.txt").chmod(0o644)
    assert run.returncode == 0 and run.stderr == "", run.stderr
    results = json.loads(run.stdout)
    for tool, result in zip(TOOLS, results):
        assert result["ok"] is False, (tool, result)
        refused = {("list", "locked.txt"): "not a folder", ("read", "closed"): "closed is a directory: use list"}.get(
            (tool, path), "Permission denied"
        )
        assert refused in result["error"], (tool, result)
        assert "secret" not in json.dumps(result)
    assert (root / "locked.txt").read_text() == "secret a\n"
    assert (root / "closed" / "inside.txt").read_text() == "secret a\n"
    assert not (root / "closed" / "new.txt").exists()


async def test_through_the_server_bad_paths_fail_their_call_and_the_turn_goes_on(project, start_editor, capfd):
    add_plugin(project, "scripted")
    (project / "file.txt").write_text("a file\n")
    os.symlink("loop", project / "loop")
    calls = [
        {"type": "doing", "id": f"{tool}-{name}", "name": tool, "arguments": arguments(tool, path)}
        for name, (path, _) in BAD_PATHS.items()
        for tool in TOOLS
    ]
    calls.append({"type": "doing", "id": "execute-nul", "name": "execute", "arguments": {"command": "touch a\0b"}})
    calls.append({"type": "doing", "id": "fine", "name": "read", "arguments": {"path": "file.txt"}})
    write_script(project, [calls, [{"type": "saying", "text": "still here"}]])
    editor = await start_editor(project, settings={"provider": "scripted", "execute": "allow"})
    result = await editor.ask("go")
    assert result["error"] is None and result["reply"] == "still here"
    outcomes = {e["id"]: e for e in editor.events() if e["type"] == "result"}
    assert len(outcomes) == len(calls)
    assert [i for i, e in outcomes.items() if e["ok"]] == ["fine"]
    for name, (_, says) in BAD_PATHS.items():
        for tool in TOOLS:
            error = outcomes[f"{tool}-{name}"]["error"]
            assert says in error or (says == "loop" and "symbolic links" in error), (tool, name, error)
    assert "NUL byte" in outcomes["execute-nul"]["error"]
    assert (await editor.ask("again", token="t2"))["reply"] == "done."
    err = capfd.readouterr().err
    assert "Traceback" not in err and "ERROR" not in err, err
    assert sorted(p.name for p in project.iterdir()) == [".agents", "README.md", "file.txt", "loop"]


@pytest.mark.timeout(30)
async def test_a_fifo_is_refused_at_once_instead_of_stalling_the_server(ws):
    """A plain open of a FIFO waits for a writer: one in the tree would stall read, grep and every turn."""
    (ws.root / "loop").unlink()  # list and grep failing on a loop in the tree is another matter
    os.mkfifo(ws.root / "pipe")
    (ws.root / "src" / "code.py").write_text("a = 1\n")
    read = await Toolbox().call("read", {"path": "pipe"}, ws)
    assert read["ok"] is False and "not a regular file" in read["error"]
    grep = await Toolbox().call("grep", {"pattern": "a"}, ws)
    assert grep["ok"] is True and {m["path"] for m in grep["matches"]} == {"file.txt", "src/code.py"}


@pytest.mark.timeout(30)
async def test_a_socket_is_refused(ws, tmp_path):
    import socket

    listener = socket.socket(socket.AF_UNIX)
    os.chdir(ws.root)  # a socket path is limited to about 100 bytes: bind it by a short relative name
    try:
        listener.bind("sock")
        result = await Toolbox().call("read", {"path": "sock"}, ws)
    finally:
        listener.close()
        os.chdir(tmp_path)
    assert result["ok"] is False and "sock" in result["error"]
