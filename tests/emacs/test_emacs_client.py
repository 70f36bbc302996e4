"""clients/emacs/elelem.el in a real batch Emacs (28, Debian's elpa-eglot) against a real
elelem-lsp: asking streams into the *elelem* transcript and edits the visited buffer (undoably);
switching the provider takes effect; a new file is created; a flymake diagnostic is fixed."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from scaffold import add_plugin, write_script

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "clients" / "emacs"
DRIVER = Path(__file__).resolve().parent / "drive.el"
EDITING_PLUGIN = ROOT / "tests" / "nvim" / "editing_plugin.py"
SERVER_COMMAND = [sys.executable, "-m", "elelem_lsp", "serve"]


def elisp_string(value: str) -> str:
    return json.dumps(value)  # a JSON string literal is a valid elisp string literal here


def drive(emacs: str, tmp_path: Path, scenario: str, script: list | None = None) -> tuple[Path, dict]:
    """Plays `scenario` of drive.el in a batch Emacs on a fresh workspace (a.txt is "x", the
    editing plugin installed, or with `script` the scripted provider of tests/plugins playing it);
    returns the workspace and what the driver recorded."""
    root = tmp_path / "work"
    (root / ".agents" / "plugins").mkdir(parents=True)
    if script is None:
        shutil.copy(EDITING_PLUGIN, root / ".agents" / "plugins" / EDITING_PLUGIN.name)
    else:
        add_plugin(root, "scripted")
        write_script(root, script)
    (root / "a.txt").write_text("x\n")
    out = tmp_path / "seen.json"
    setup = (
        f"(setq drive-root {elisp_string(str(root))} drive-out {elisp_string(str(out))}"
        f" drive-client {elisp_string(str(CLIENT))} drive-scenario {elisp_string(scenario)}"
        f" drive-server (list {' '.join(elisp_string(part) for part in SERVER_COMMAND)}))"
    )
    run = subprocess.run(
        [emacs, "--batch", "--eval", setup, "-l", str(DRIVER)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=root,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return root, json.loads(out.read_text())


def test_emacs_asks_edits_switches_creates_and_fixes(emacs: str, tmp_path: Path, home: Path) -> None:
    root, seen = drive(emacs, tmp_path, "edits")

    asked = seen["asked"]
    assert asked["text"] == "y\n"
    assert asked["modified"] is True
    assert (root / "a.txt").read_text() == "x\n"
    assert asked["transcript"].splitlines() == [
        "> change x to y",
        "planning",
        "I will edit.",
        "+ Edit a.txt",
        "  ok: Edited a.txt — edited",
        "edited.",
        "-- done — scripted · 2 steps",  # the server's footer
    ]
    assert asked["thinking"] == ["planning"]
    assert seen["managed"]["managed"] is True

    switched = seen["switched"]
    assert switched["text"] == "y\n"
    assert switched["transcript"].splitlines()[-4:] == ["", "> who is there", "second here.", "-- done — second · 1 step"]

    assert seen["created"] == {"exists": True, "text": "new\n"}
    assert seen["undone"]["text"] == "x\n"

    fixed = seen["fixed"]
    assert fixed["text"] == "y\n"
    assert fixed["transcript"].splitlines()[-8:] == [
        "> Fix: x should be y",
        "planning",
        "I will edit.",
        "+ Edit a.txt",
        "  ok: Edited a.txt — edited",
        "✓ checked a.txt: no new problems",  # the buffer's Flymake checked the change
        "edited.",
        "-- done — scripted · 2 steps",  # the server's footer
    ]
