"""The toolbox and each built-in tool, on a real folder."""

from __future__ import annotations

import json
import os

import pytest

from elelem_lsp.agent.budget import estimate_tokens, result_room
from elelem_lsp.agent.session import Session
from test_session import Script
from elelem_lsp.agent.toolbox import Toolbox, encode
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
    assert await box.call("read", {"path": "a.txt"}, ws) == {
        "path": "a.txt",
        "total_lines": 3,
        "lines": [1, 3],
        "content": "1\talpha\n2\tbeta\n3\talpha beta",
        "ok": True,
    }
    missing = await box.call("read", {"path": "nope.txt"}, ws)
    assert missing == {"ok": False, "error": "nope.txt does not exist"}


async def test_read_a_range_numbers_its_lines_and_says_how_to_read_on(box, ws):
    (ws.root / "long.txt").write_text("".join(f"line {n}\n" for n in range(1, 31)))
    part = await box.call("read", {"path": "long.txt", "offset": 9, "limit": 3}, ws)
    assert part["content"] == " 9\tline 9\n10\tline 10\n11\tline 11\n[lines 9-11 of 30 shown; read again with offset=12 to continue]"
    assert (part["lines"], part["total_lines"], part["next_offset"]) == ([9, 11], 30, 12)
    end = await box.call("read", {"path": "long.txt", "offset": 29}, ws)
    assert end["content"] == "29\tline 29\n30\tline 30" and "next_offset" not in end
    past = await box.call("read", {"path": "long.txt", "offset": 31}, ws)
    assert past == {"ok": False, "error": "offset 31 is past the end of long.txt, which has 30 lines"}
    (ws.root / "empty.txt").write_text("")
    assert (await box.call("read", {"path": "empty.txt"}, ws))["content"] == "[the file is empty]"
    zero = await box.call("read", {"path": "long.txt", "offset": 0}, ws)
    assert zero["ok"] is False and "offset" in zero["error"]
    none = await box.call("read", {"path": "long.txt", "limit": 0}, ws)
    assert none["ok"] is False and "limit" in none["error"]
    assert (await box.call("read", {"path": "long.txt", "limit": None}, ws))["lines"] == [1, 30]  # null: not given


async def test_a_long_file_is_read_in_pages_that_fit_and_join_up(box, ws):
    text = "".join(f"{n}: " + "words of a long document " * 8 + "\n" for n in range(1, 687))
    (ws.root / "README.md").write_text(text)
    room = result_room.get()
    pages, offset = [], 1
    while offset:
        page = await box.call("read", {"path": "README.md", "offset": offset}, ws)
        assert estimate_tokens(encode(page)) <= room  # the budget never has to cut it
        pages.append(page)
        offset = page.get("next_offset")
    first = pages[0]
    assert 1 < len(pages) and first["lines"][0] == 1 and first["total_lines"] == 686
    last_shown = first["lines"][1]
    assert first["content"].endswith(f"\n[lines 1-{last_shown} of 686 shown; read again with offset={last_shown + 1} to continue]")
    lines = [line.split("\t", 1)[1] for page in pages for line in page["content"].split("\n") if "\t" in line]
    assert "\n".join(lines) + "\n" == text


async def test_read_fits_the_turns_budget_so_it_is_never_cut_blind(ws):
    (ws.root / "big.txt").write_text("".join(f"row {n} " + "x" * 60 + "\n" for n in range(1, 2001)))
    provider = Script(
        [{"type": "doing", "id": "1", "name": "read", "arguments": {"path": "big.txt"}}],
        [{"type": "saying", "text": "read it"}],
    )
    session = Session(provider, ws)
    session.context_setting = 4000
    seen = []
    await session.turn("read big.txt", seen.append)
    result = provider.seen[1][-1]["content"]
    assert "cut to fit the context window" not in result and not [e for e in seen if e["type"] == "context"]
    shown = json.loads(result)["lines"][1]
    assert 10 < shown < 2000 and f"read again with offset={shown + 1} to continue]" in result


async def test_a_very_long_line_is_cut_with_a_marker(box, ws):
    (ws.root / "min.js").write_text("x" * 5000 + "\nshort\n")
    content = (await box.call("read", {"path": "min.js"}, ws))["content"]
    first, second = content.split("\n")
    assert first == "1\t" + "x" * 2000 + " [… line cut: 3,000 more characters]" and second == "2\tshort"


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
    assert missing["ok"] is False and missing["error"].startswith("old text not found in a.txt: it must match")
    numbered = await box.call("edit", {"path": "a.txt", "old": "2\tbeta", "new": "x"}, ws)
    assert numbered["ok"] is False and "starts with a line number and a tab" in numbered["error"]
    repeated = await box.call("edit", {"path": "a.txt", "old": "alpha", "new": "x"}, ws)
    assert repeated["ok"] is False and "appears 2 times" in repeated["error"] and "replace_all" in repeated["error"]
    assert (ws.root / "a.txt").read_text() == "alpha\nbeta\nalpha beta\n"


async def test_edit_with_replace_all_changes_every_occurrence(box, ws):
    (ws.root / "crlf.txt").write_bytes(b"alpha\r\nbeta\r\nalpha beta\r\n")
    arguments = {"path": "crlf.txt", "old": "alpha", "new": "gamma\ndelta", "replace_all": True}
    result = await box.call("edit", arguments, ws)
    assert result == {"path": "crlf.txt", "replacements": 2, "ok": True}
    assert (ws.root / "crlf.txt").read_bytes() == b"gamma\r\ndelta\r\nbeta\r\ngamma\r\ndelta beta\r\n"
    assert box.event("call-1", "edit", arguments, result)["summary"] == "edited 2 places"
    once = await box.call("edit", {"path": "a.txt", "old": "alpha beta", "new": "ALPHA BETA", "replace_all": True}, ws)
    assert once["replacements"] == 1 and (ws.root / "a.txt").read_text() == "alpha\nbeta\nALPHA BETA\n"


async def test_each_description_says_when_to_use_the_tool_and_its_limits(box):
    described = {d["function"]["name"]: d["function"]["description"] for d in box.definitions()}
    assert "offset" in described["read"] and "never copy them" in described["read"] and "2,000 characters" in described["read"]
    assert "without the line numbers" in described["edit"] and "replace_all" in described["edit"]
    assert "glob" in described["grep"] and "context" in described["grep"] and "200" in described["grep"]
    assert "edit instead" in described["write"] and "approve" in described["execute"] and "1000" in described["list"]
    assert all(len(text) > 150 for text in described.values())


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
    command = {"command": "seq 1 3000; echo the-last-line"}
    result = await box.call("execute", command, ws)
    event = box.event("call-1", "execute", command, result)
    assert event["summary"] == "exit 0, 3001 lines of output"
    assert event["output"].endswith("2999\n3000\nthe-last-line\n")
    assert len(event["output"]) == 2000 < len(result["output"])  # its last 2,000 characters
    read = box.event("call-2", "read", {"path": "a.txt"}, await box.call("read", {"path": "a.txt"}, ws))
    assert read == {"type": "result", "id": "call-2", "name": "read", "ok": True, "title": "Read a.txt", "summary": "3 lines"}
    arguments = {"path": "a.txt", "offset": 2, "limit": 1}
    part = box.event("call-4", "read", arguments, await box.call("read", arguments, ws))
    assert part["summary"] == "lines 2-2 of 3"
    failed = box.event("call-3", "read", {"path": "missing.txt"}, await box.call("read", {"path": "missing.txt"}, ws))
    assert failed["ok"] is False and failed["error"] and "output" not in failed


async def test_a_result_says_the_call_in_words_after_it_ran_and_as_asked_when_it_failed(box, ws):
    ran = box.event("call-1", "bash", {"command": "echo hi"}, await box.call("bash", {"command": "echo hi"}, ws))
    assert (ran["title"], ran["summary"]) == ("Ran echo hi", "exit 0, 1 line of output")  # an alias reads as its tool
    arguments = {"path": "a.txt", "old": "no such text", "new": "x"}
    failed = box.event("call-2", "edit", arguments, await box.call("edit", arguments, ws))
    assert (failed["ok"], failed["title"]) == (False, "Edit a.txt")
