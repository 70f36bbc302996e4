"""The toolbox and each built-in tool, on a real folder."""

from __future__ import annotations

import json
import os

import pytest

from elelem_lsp.agent.toolbox import EVENT_OUTPUT_CHARS, Toolbox, encode
from elelem_lsp.agent.workspace import Workspace
from security.attacks_cmds import still_alive_after


class Permissive(Workspace):
    async def allow_command(self, command):
        return True, ""


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("alpha\nbeta\nalpha beta\n")
    return Permissive(root)


@pytest.fixture
def box():
    return Toolbox()


async def test_definitions_are_openai_functions_derived_from_the_models(box):
    definitions = {d["function"]["name"]: d for d in box.definitions()}
    assert set(definitions) == {"read", "write", "edit", "execute", "list", "grep", "plan"}
    edit = definitions["edit"]
    assert edit["type"] == "function"
    assert edit["function"]["parameters"]["type"] == "object"
    assert edit["function"]["parameters"]["required"] == ["path", "old", "new"]
    assert edit["function"]["parameters"]["properties"]["old"]["type"] == "string"
    assert "timeout" not in definitions["execute"]["function"]["parameters"]["required"]


async def test_unknown_tool_lists_the_available_ones(box, ws):
    result = await box.call("fly", {}, ws)
    assert result == {"ok": False, "error": 'unknown tool: "fly". Available: read, write, edit, execute, list, grep, plan'}


async def test_invalid_arguments_name_the_field(box, ws):
    result = await box.call("write", {"path": "x"}, ws)
    assert result["ok"] is False and "content: Field required" in result["error"]
    result = await box.call("read", {"path": 5}, ws)
    assert result["ok"] is False and "path" in result["error"]


async def test_read(box, ws):
    assert await box.call("read", {"path": "a.txt"}, ws) == {"content": "alpha\nbeta\nalpha beta\n", "path": "a.txt", "ok": True}
    missing = await box.call("read", {"path": "nope.txt"}, ws)
    assert missing == {"ok": False, "error": "nope.txt does not exist"}


async def test_write_creates_folders_and_replaces(box, ws):
    assert (await box.call("write", {"path": "d/e/new.txt", "content": "héllo"}, ws))["ok"]
    assert (ws.root / "d/e/new.txt").read_text() == "héllo"
    await box.call("write", {"path": "a.txt", "content": "x"}, ws)
    assert (ws.root / "a.txt").read_text() == "x"


async def test_edit_replaces_exactly_one_occurrence(box, ws):
    assert (await box.call("edit", {"path": "a.txt", "old": "beta\nalpha", "new": "BETA\nALPHA"}, ws))["ok"]
    assert (ws.root / "a.txt").read_text() == "alpha\nBETA\nALPHA beta\n"


async def test_edit_says_when_old_is_missing_or_repeated(box, ws):
    missing = await box.call("edit", {"path": "a.txt", "old": "gamma", "new": "x"}, ws)
    assert missing == {"ok": False, "error": "old text not found in a.txt"}
    repeated = await box.call("edit", {"path": "a.txt", "old": "alpha", "new": "x"}, ws)
    assert repeated["ok"] is False and "appears 2 times" in repeated["error"]
    assert (ws.root / "a.txt").read_text() == "alpha\nbeta\nalpha beta\n"


@pytest.mark.parametrize("name", ["execute", "bash", "sh", "exec"])
async def test_execute_and_its_aliases_run_in_the_root(box, ws, name):
    result = await box.call(name, {"command": "pwd; echo out; echo err >&2; exit 3"}, ws)
    assert result["ok"] and result["exit_code"] == 3
    assert result["output"].splitlines() == [str(ws.root), "out", "err"]


async def test_execute_timeout_kills_the_process_group(box, ws, tmp_path):
    marker, pid = tmp_path / "survived", tmp_path / "pid"
    background = f"sh -c 'echo $$ > {pid}; sleep 2; touch {marker}' &"
    result = await box.call("execute", {"command": f"{background} sleep 30", "timeout": 0.5}, ws)
    assert result["ok"] is False and "timed out after 0.5s" in result["error"]
    # dead by its pid, so it can never write the marker (no waiting out its two seconds)
    assert not still_alive_after(int(pid.read_text()), 1.0)
    assert not marker.exists()


async def test_execute_output_is_capped(box, ws):
    result = await box.call("execute", {"command": "head -c 200000 /dev/zero | tr '\\0' x"}, ws)
    assert result["truncated"] is True and len(result["output"]) == 64 * 1024


async def test_execute_is_denied_when_nobody_can_answer(box, tmp_path):
    result = await box.call("execute", {"command": "true"}, Workspace(tmp_path))
    assert result["ok"] is False and "not allowed" in result["error"]


async def test_list_and_grep(box, ws):
    (ws.root / "sub").mkdir()
    (ws.root / "sub/b.py").write_text("x = 'alpha'\n")
    (ws.root / ".git").mkdir()
    (ws.root / ".git/config").write_text("alpha")
    listing = await box.call("list", {}, ws)
    assert listing == {"files": ["a.txt", "sub/b.py"], "total": 2, "truncated": False, "ok": True}
    found = await box.call("grep", {"pattern": "^alpha"}, ws)
    assert [(m["path"], m["line"]) for m in found["matches"]] == [("a.txt", 1), ("a.txt", 3)]
    bad = await box.call("grep", {"pattern": "("}, ws)
    assert bad["ok"] is False and bad["error"].startswith("bad pattern")


@pytest.mark.parametrize("tool, arguments", [
    ("read", {"path": "../outside.txt"}),
    ("read", {"path": "/etc/passwd"}),
    ("write", {"path": "../outside.txt", "content": "x"}),
    ("edit", {"path": "link/secret.txt", "old": "s", "new": "t"}),
    ("read", {"path": "link/secret.txt"}),
    ("list", {"path": ".."}),
    ("grep", {"pattern": "s", "path": "link"}),
])
async def test_paths_that_lead_out_are_refused(box, ws, tmp_path, tool, arguments):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    os.symlink(outside, ws.root / "link")
    result = await box.call(tool, arguments, ws)
    assert result["ok"] is False and "outside the workspace" in result["error"]
    assert (outside / "secret.txt").read_text() == "secret"
    assert not (tmp_path / "outside.txt").exists()


def test_results_are_json():
    assert json.loads(encode({"ok": True, "content": "é"})) == {"ok": True, "content": "é"}


async def test_a_commands_result_event_carries_the_end_of_its_output_capped(box, ws):
    result = await box.call("execute", {"command": "seq 1 3000; echo the-last-line"}, ws)
    event = box.event("call-1", "execute", result)
    assert event["summary"] == "exit 0, 3001 lines of output"
    assert event["output"].endswith("2999\n3000\nthe-last-line\n")
    assert len(event["output"]) == EVENT_OUTPUT_CHARS < len(result["output"])
    read = box.event("call-2", "read", await box.call("read", {"path": "a.txt"}, ws))
    assert read == {"type": "result", "id": "call-2", "name": "read", "ok": True, "summary": "3 lines"}
    failed = box.event("call-3", "read", await box.call("read", {"path": "missing.txt"}, ws))
    assert failed["ok"] is False and failed["error"] and "output" not in failed
