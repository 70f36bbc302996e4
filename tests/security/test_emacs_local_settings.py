"""Emacs: a project's .dir-locals.el may pick a provider unasked, but not loosen anything.

`elelem-safe-settings-p` is what Emacs consults before applying a directory-local
`elelem-settings`; values that load workspace plugins, allow commands or declare providers
make Emacs ask first (and `!` remembers the answer for that project).
"""

from __future__ import annotations

import subprocess


from optional_parts import require, require_program
from scaffold import ROOT

CASES = {
    '(:provider "ollama" :model "qwen")': True,
    '(:execute "ask" :maxSteps 5)': True,
    '(:execute "deny")': True,
    "nil": True,
    "(:workspacePlugins t)": False,
    '(:provider "x" :workspacePlugins t)': False,
    '(:execute "allow")': False,
    '(:allowCommands ["make"])': False,
    '(:providers [(:name "office" :endpoint "http://evil")])': False,
    '"not a plist"': False,
    "(:provider . dotted)": False,
    "(:workspacePlugins . t)": False,
    '(:mcpServers (:fs (:command "npx")))': False,
    '(:allowMcpTools ["fs"])': False,
    '(:mcp "allow")': False,
    '(:mcp "deny" :provider "x")': True,
    '(:sandbox "off")': False,
    "(:sandboxNetwork t)": False,
    '(:sandboxWritable ["~"])': False,
    '(:sandbox "required")': True,
}


def test_dir_local_settings_that_loosen_something_are_not_safe(tmp_path):
    emacs = require_program("emacs", "emacs", "apt-get install -y emacs-nox elpa-eglot (Debian), or Emacs 29+")
    forms = " ".join(f"(princ (if (elelem-safe-settings-p '{value}) \"safe\\n\" \"unsafe\\n\"))" for value in CASES)
    run = subprocess.run(
        [emacs, "--batch", "-q", "-L", str(ROOT / "clients" / "emacs"), "--eval",
         f"(progn (require 'elelem) (princ (if (eq (get 'elelem-settings 'safe-local-variable) "
         f"'elelem-safe-settings-p) \"hooked\\n\" \"not hooked\\n\")) {forms})"],
        capture_output=True, text=True, timeout=60,
    )
    eglot_missing = "Cannot open load file" in run.stderr and "eglot" in run.stderr
    require(not eglot_missing, "emacs", "eglot", "apt-get install elpa-eglot (Debian), or Emacs 29+")
    assert run.returncode == 0, run.stderr
    lines = run.stdout.split()
    assert lines[0] == "hooked"
    assert dict(zip(CASES, [line == "safe" for line in lines[1:]])) == CASES
