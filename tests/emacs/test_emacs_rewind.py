"""`M-x elelem-rewind` in a batch Emacs (eglot) against a real elelem-lsp: the turn's edit, unsaved
in the buffer, is picked from the server's list, a line typed since is asked about; answered no,
nothing changes; answered yes, the buffer goes back to before the turn (unsaved), and undo takes
that back."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_emacs_client import drive

pytestmark = pytest.mark.slow


def test_emacs_refuses_then_rewinds_the_turn_in_the_buffer_after_asking_about_a_change_typed_since(
    emacs: str, tmp_path: Path, home: Path
) -> None:
    root, seen = drive(emacs, tmp_path, "rewind")
    assert seen["asked"]["text"] == "y\n" and (root / "a.txt").read_text() == "x\n"
    [label] = seen["offered"]["labels"]
    assert label.startswith("turn 1 · ") and label.endswith(" · change x to y · 1 file")
    assert seen["conflict"]["prompt"] == (
        "elelem: changed since turn 1:\na.txt: has unsaved changes in the editor\nOverwrite them? "
    )
    assert seen["refused"]["message"] == "elelem: nothing rewound"
    assert seen["kept"]["text"] == "y\ntyped since\n" and (root / "a.txt").read_text() == "x\n"
    assert seen["rewound"]["text"] == "x\n" and seen["rewound"]["modified"] is True
    assert "elelem: rewound turn 1 and the conversation" in seen["said"]["messages"]  # the server's words on it
    assert seen["undone"]["text"] == "y\ntyped since\n"  # undo takes the rewind back, as any edit
