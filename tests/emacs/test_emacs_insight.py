"""clients/emacs/elelem.el answering `elelem/diagnostics` from Flymake, in a real batch Emacs: the
agent's edit makes the buffer's Flymake backend report an error, and the model's next fetch holds
it, as the transcript's `checked` row does."""

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
DRIVER = Path(__file__).resolve().parent / "drive.el"
SERVER_COMMAND = [sys.executable, "-m", "elelem_lsp", "serve"]


def test_the_model_reads_the_error_flymake_reports_after_its_edit(emacs: str, tmp_path: Path, home: Path) -> None:
    root = tmp_path / "work"
    root.mkdir()
    add_plugin(root, "scripted")
    (root / "a.txt").write_text("x\n")
    edit = {"type": "doing", "id": "e", "name": "edit", "arguments": {"path": "a.txt", "old": "x", "new": "BAD x"}}
    write_script(root, [[edit], [{"type": "record"}]])
    out = tmp_path / "seen.json"
    setup = (
        f"(setq drive-root {json.dumps(str(root))} drive-out {json.dumps(str(out))}"
        f" drive-client {json.dumps(str(ROOT / 'clients' / 'emacs'))} drive-scenario \"checked\""
        f" drive-server (list {' '.join(json.dumps(part) for part in SERVER_COMMAND)}))"
    )
    run = subprocess.run([emacs, "--batch", "--eval", setup, "-l", str(DRIVER)], capture_output=True, text=True, timeout=120, cwd=root)
    assert run.returncode == 0, run.stderr[-3000:]
    seen = json.loads(out.read_text())["checked"]

    [fetch] = [json.loads(line) for line in (root / ".agents/fetches.jsonl").read_text().splitlines()]
    assert {"diagnostics"} <= {tool["function"]["name"] for tool in fetch["tools"]}
    assert not {"definition", "references", "symbols"} & {tool["function"]["name"] for tool in fetch["tools"]}
    checked = json.loads(fetch["messages"][-1]["content"])["checked"]
    assert checked == "checked a.txt: 1 new error\na.txt:1:1 error: bad line [drive-bad-lint]"
    assert seen["text"] == "BAD x\n"
    assert "✓ checked a.txt: 1 new error" in seen["transcript"].splitlines()
    assert "    a.txt:1:1 error: bad line" in seen["transcript"].splitlines()
