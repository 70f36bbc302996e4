"""clients/emacs/elelem-suggest.el in a real batch Emacs against a real elelem-lsp and the fake
model server (tests/completion/fim_server.py, real HTTP): typing shows ghost text as an overlay,
typing along it keeps the rest, M-f takes a word of it and TAB the rest, C-g dismisses the next; a renamed parameter brings its
other uses as overlays, M-n jumps to them, M-RET accepts them as one undoable change."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from elelem_lsp.nextedit.zeta import EDITABLE_END, EDITABLE_START

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "clients" / "emacs"
DRIVER = Path(__file__).resolve().parent / "drive_suggest.el"
SERVER_COMMAND = [sys.executable, "-m", "elelem_lsp", "serve"]


def drive(emacs: str, root: Path, out: Path, scenario: str, file: str, settings: dict[str, Any]) -> dict[str, Any]:
    setup = (
        f"(setq drive-root {json.dumps(str(root))} drive-out {json.dumps(str(out))}"
        f" drive-client {json.dumps(str(CLIENT))} drive-scenario {json.dumps(scenario)} drive-file {json.dumps(file)}"
        f" drive-settings {json.dumps(json.dumps(settings))}"
        f" drive-server (list {' '.join(json.dumps(part) for part in SERVER_COMMAND)}))"
    )
    command = [emacs, "--batch", "--eval", setup, "-l", str(DRIVER)]
    run = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=root)
    assert run.returncode == 0, run.stderr[run.stderr.find("Debugger entered") :][:4000] or run.stderr[-4000:]
    return json.loads(out.read_text())  # {step: {what: value}}


def test_ghost_text_overlay_accepted_a_word_then_whole_and_dismissed(emacs: str, tmp_path: Path, home: Path, fim) -> None:
    root = tmp_path / "work"
    root.mkdir()
    (root / ".git").mkdir()  # the project's root
    (root / "calc.py").write_text("def add(a, b):\n    return \n")
    fim.answer = [" + b * 2"]
    settings = {"provider": "llamacpp", "completion": {"api": "completions"}, "nextEdit": {"enabled": False}}

    seen = drive(emacs, root, tmp_path / "seen.json", "ghost", "calc.py", settings)

    assert seen["shown"] == {"ghost": " + b * 2", "text": "def add(a, b):\n    return a\n"}
    assert fim.bodies("/v1/completions")[0]["prompt"].endswith("def add(a, b):\n    return a")
    # typing its first character keeps the rest shown, asking nothing
    assert seen["typed-along"] == {"ghost": "+ b * 2", "text": "def add(a, b):\n    return a \n"}
    assert len(fim.bodies("/v1/completions")) == 2  # the first suggestion and the next one dismissed below
    assert seen["word"] == {"ghost": " b * 2", "text": "def add(a, b):\n    return a +\n"}
    assert seen["accepted"] == {"ghost": None, "text": "def add(a, b):\n    return a + b * 2\n"}
    assert seen["figures"] == {"accepted": 1, "chars": len("+ b * 2")}  # what the keys put in, not what was typed
    assert seen["dismissed"] == {"ghost": None, "text": "def add(a, b):\n    return a + b * 2 \n"}


SOURCE = (
    "def total(values, scale):\n    result = 0\n    for value in values:\n"
    "        result += value * scale\n    return result * scale\n"
)
RENAMED = SOURCE.replace("scale", "factor")


def test_next_edit_overlays_jumped_to_and_accepted_in_one_undo(emacs: str, tmp_path: Path, home: Path, fim) -> None:
    root = tmp_path / "work"
    root.mkdir()
    (root / ".git").mkdir()
    (root / "calc.py").write_text(SOURCE)
    region = RENAMED.rstrip("\n")
    fim.answer = ["```calc.py\n", EDITABLE_START + "\n", region[:30], region[30:], "\n" + EDITABLE_END, "\n```"]
    settings = {"provider": "llamacpp", "completion": {"enabled": False}, "nextEdit": {"enabled": True, "api": "chat"}}

    seen = drive(emacs, root, tmp_path / "seen.json", "next-edit", "calc.py", settings)

    typed = SOURCE.replace("scale", "factor", 1)
    assert seen["typed"]["text"] == typed
    assert seen["shown"] == {"edits": [[4, "scale", "factor"], [5, "scale", "factor"]], "text": typed}
    assert seen["jumped"] == {"line": 4}
    assert seen["accepted"] == {"text": RENAMED, "edits": []}
    assert seen["undone"] == {"text": typed}
