"""MCP servers from Emacs: `elelem-settings' names one in docs/mcp.md's plist shape, and the
*elelem* transcript shows its tool calls like the built-in ones."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from scaffold import ROOT, add_plugin, write_script

from mcp_servers import TOOL_SERVER, call
from optional_parts import require, require_program

pytestmark = pytest.mark.slow

DRIVE = """
(progn
  (require 'json)
  (add-to-list 'load-path %(client)s)
  (require 'elelem)
  (setq elelem-server-command (list %(python)s "-m" "elelem_lsp" "serve")
        elelem-settings '(:provider "scripted" :workspacePlugins t :mcp "allow"
                          :mcpServers (:t (:command %(python)s :args [%(server)s])))
        eglot-sync-connect t make-backup-files nil create-lockfiles nil)
  (elelem-setup)
  (defvar done nil)
  (add-hook 'elelem-turn-done-hook (lambda (_result) (setq done t)))
  (with-current-buffer (find-file-noselect (expand-file-name "README.md" %(root)s))
    (elelem-ask "call them")
    (let ((deadline (+ (float-time) 90)))
      (while (and (not done) (< (float-time) deadline)) (accept-process-output nil 0.05)))
    (with-temp-file %(out)s
      (insert (with-current-buffer "*elelem*" (buffer-substring-no-properties (point-min) (point-max)))))))
"""


def test_emacs_names_an_mcp_server_in_its_settings_and_shows_its_calls(project: Path, tmp_path: Path) -> None:
    emacs = require_program("emacs", "emacs", "apt-get install -y emacs-nox elpa-eglot (Debian), or Emacs 29+")
    add_plugin(project, "scripted")
    write_script(project, [call("t__echo", text="from emacs"), [{"type": "saying", "text": "called."}]])
    out = tmp_path / "transcript.txt"
    values = {"client": ROOT / "clients" / "emacs", "python": sys.executable, "server": TOOL_SERVER, "root": project, "out": out}
    drive = DRIVE % {key: json.dumps(str(value)) for key, value in values.items()}
    run = subprocess.run([emacs, "--batch", "--eval", drive], capture_output=True, text=True, timeout=150, cwd=project)
    missing = "Cannot open load file" in run.stderr and "eglot" in run.stderr
    require(not missing, "emacs", "eglot", "apt-get install elpa-eglot (Debian), or Emacs 29+")
    assert run.returncode == 0, run.stderr[-3000:]
    assert out.read_text().splitlines() == [
        "> call them",
        '+ t: echo text="from emacs"',
        '  ok: t: echo text="from emacs" — 1 line',
        "called.",
        "-- done — scripted · 2 steps",
    ]
