"""A model that reads a folder, end to end: over LSP (pytest-lsp and the real server) and in the
terminal (``elelem-lsp ask``), the turn ends normally, the model's next fetch holds the plain
words of the result, and the steps before it stay in the answer. (ACP: tests/acp/test_acp_directory_read.py.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from scaffold import add_plugin, run_ask, write_script

FOLDER_ANSWER = "src is a directory: use list to see the files in it"
# The model reads the readme, then the folder, then says the result it was handed.
SCRIPT: list[list[dict[str, Any]]] = [
    [
        {"type": "saying", "text": "Reading the readme first."},
        {"type": "doing", "id": "r1", "name": "read", "arguments": {"path": "README.md"}},
    ],
    [{"type": "doing", "id": "r2", "name": "read", "arguments": {"path": "src"}}],
    [{"type": "say_tool_result"}],
]


def folder_project(project: Path) -> Path:
    (project / "src").mkdir()
    (project / "src" / "app.py").write_text("print('hi')\n")
    add_plugin(project, "scripted")
    write_script(project, SCRIPT)
    return project


async def test_over_lsp_the_turn_goes_on_after_a_folder_is_read(project, start_editor):
    editor = await start_editor(folder_project(project), settings={"provider": "scripted"})

    answer = await editor.ask("what is in src?")

    assert (answer["stopReason"], answer["error"], answer["steps"]) == ("end", None, 3)
    assert json.loads(answer["reply"]) == {"ok": False, "error": FOLDER_ANSWER}  # what the model was handed
    events = editor.events()
    results = {e["id"]: e for e in events if e["type"] == "result"}
    assert results["r1"]["ok"] is True and results["r1"]["summary"] == "1 line"  # the step before it, kept
    assert (results["r2"]["ok"], results["r2"]["error"]) == (False, FOLDER_ANSWER)
    assert "Reading the readme first." in "".join(e["text"] for e in events if e["type"] == "saying")
    assert editor.progress["turn-1"][-1] == {"kind": "end", "message": "done"}


def test_in_the_terminal_the_turn_goes_on_after_a_folder_is_read(project):
    run = run_ask(folder_project(project), "-p", "scripted", "what is in src?")

    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == {"ok": False, "error": FOLDER_ANSWER}  # the reply: what the model was handed
    assert "Reading the readme first." in run.stderr
    assert "Read README.md → 1 line" in run.stderr  # the step before it, kept
    assert FOLDER_ANSWER in run.stderr
    assert "Error:" not in run.stderr
