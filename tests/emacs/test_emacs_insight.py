"""clients/emacs/elelem.el answering `elelem/diagnostics` from Flymake, in a real batch Emacs: the
agent's edit makes the buffer's Flymake backend report an error, and the model's next fetch holds
it, as the transcript's `checked` row does, and as it does again when `*elelem*` is redrawn
from the stored conversation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from test_emacs_client import drive

pytestmark = pytest.mark.slow


def test_the_model_reads_the_error_flymake_reports_after_its_edit(emacs: str, tmp_path: Path, home: Path) -> None:
    edit = {"type": "doing", "id": "e", "name": "edit", "arguments": {"path": "a.txt", "old": "x", "new": "BAD x"}}
    root, seen = drive(emacs, tmp_path, "checked", script=[[edit], [{"type": "record"}]])
    seen, redrawn = seen["checked"], seen["redrawn"]

    [fetch] = [json.loads(line) for line in (root / ".agents/fetches.jsonl").read_text().splitlines()]
    assert {"diagnostics"} <= {tool["function"]["name"] for tool in fetch["tools"]}
    assert not {"definition", "references", "symbols"} & {tool["function"]["name"] for tool in fetch["tools"]}
    checked = json.loads(fetch["messages"][-1]["content"])["checked"]
    assert checked == "checked a.txt: 1 new error\na.txt:1:1 error: bad line [drive-bad-lint]"
    assert seen["text"] == "BAD x\n"
    assert "✓ checked a.txt: 1 new error" in seen["transcript"].splitlines()
    assert "    a.txt:1:1 error: bad line" in seen["transcript"].splitlines()

    # drawn again from the stored conversation, the edit's rows read as they did live
    live, lines = seen["transcript"].splitlines(), redrawn["transcript"].splitlines()
    at, live_at = lines.index("✓ checked a.txt: 1 new error"), live.index("✓ checked a.txt: 1 new error")
    assert lines[at - 2] == live[live_at - 2] == "+ Edit a.txt"
    assert lines[at - 2 : at + 2] == live[live_at - 2 : live_at + 2]
    assert lines[at + 1] == "    a.txt:1:1 error: bad line" and lines[-1].startswith("-- done — scripted · ")
