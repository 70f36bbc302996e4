"""Fixtures for what the command sandbox does with /tmp: a folder in the machine's /tmp outside the
workspace, each way /tmp can be kept private, and a venv under /tmp as a person's may be."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from optional_parts import require

from elelem_lsp.agent import sandbox


@pytest.fixture
def under_tmp():
    """A folder in the machine's /tmp, outside the workspace."""
    folder = Path(tempfile.mkdtemp(prefix="elelem-under-tmp-", dir="/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(params=["overlay", "read-only"])
def tmp_kind(request, monkeypatch):
    """Each way /tmp is kept private: a layer over it (this kernel allows one, as most do), or
    read-only with a private TMPDIR (as where the kernel refuses the layer)."""
    works = sandbox.probe()
    if request.param == "read-only":
        monkeypatch.setattr(sandbox, "probe", lambda: dataclasses.replace(works, tmp_overlay=False))
    else:
        why = f"bubblewrap's overlay of /tmp (overlays in a user namespace: Linux 5.11 or later; here {works})"
        require(works.tmp_overlay, "tmp_overlay", why, "a kernel that allows them")
    return request.param


def venv_in(folder: Path) -> Path:
    """The interpreter of a venv made in ``folder`` (a link to this one, as a venv's is), which
    sees this one's packages."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(folder / "venv")], check=True)
    return folder / "venv" / "bin" / "python"
