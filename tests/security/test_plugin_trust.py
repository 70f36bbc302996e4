"""The terminal client never runs a workspace's `.agents/plugins` without the person's say.

Plain-function tests of the trust file and the decision, then `elelem-lsp ask` and `chat`
through a pseudo-terminal (answering n, y and always), without a terminal, and with `--trust`.
The plugin `evil` leaves `.agents/evil-imported` behind when the server imports it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest

from elelem_lsp.client.trust_prompt import decide
from elelem_lsp.host.trust import PluginSet, TrustStore
from scaffold import ROOT, TEST_PLUGINS, add_plugin

QUESTION = "Load the plugins in ./.agents/plugins (evil.py)? [y/N/always] "


@pytest.fixture
def trust_file(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    return home / ".local" / "state" / "elelem-lsp" / "trusted-plugins.json"


@pytest.fixture
def evil_project(project: Path) -> Path:
    add_plugin(project, "evil")
    return project


def imported(root: Path) -> bool:
    return (root / ".agents" / "evil-imported").exists()


def spawn_ask(root: Path, *args: str) -> pexpect.spawn:
    return pexpect.spawn(
        sys.executable, ["-m", "elelem_lsp", "ask", *args], cwd=str(root), encoding="utf-8", timeout=30,
        env={**os.environ, "TERM": "dumb"}, dimensions=(40, 200),
    )


def finish(child: pexpect.spawn) -> tuple[int, str]:
    child.expect(pexpect.EOF)
    child.close()
    return child.exitstatus, child.before


def ask_piped(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "elelem_lsp", "ask", *args],
        cwd=root, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
    )


# -- the trust file and the decision, as plain functions ------------------------------------------


def test_trust_covers_the_resolved_folder_and_the_exact_files(tmp_path, evil_project):
    store = TrustStore(tmp_path / "state" / "trusted.json")
    plugins = PluginSet.scan(evil_project)
    assert not store.trusts(plugins)
    store.remember(plugins)
    assert store.trusts(PluginSet.scan(evil_project))

    link = tmp_path / "link-to-project"
    link.symlink_to(evil_project)
    assert PluginSet.scan(link).root == evil_project.resolve()
    assert store.trusts(PluginSet.scan(link)), "a folder reached through a symlink is its resolved path"

    folder = evil_project / ".agents" / "plugins"
    shutil.copy(TEST_PLUGINS / "scripted.py", folder / "new.py")
    assert not store.trusts(PluginSet.scan(evil_project)), "a new file asks again"
    assert PluginSet.scan(evil_project).changed_since(store.trusted_files(plugins)) == ["new.py"]
    (folder / "new.py").unlink()
    (folder / "evil.py").write_text((folder / "evil.py").read_text() + "\n# one more line\n")
    assert not store.trusts(PluginSet.scan(evil_project)), "an edited file asks again"
    (folder / "evil.py").unlink()
    assert store.trusts(PluginSet.scan(evil_project)), "with a file removed, no new code runs"


def test_trust_file_is_private_and_holds_resolved_paths(tmp_path, evil_project):
    path = tmp_path / "state" / "trusted.json"
    store = TrustStore(path)
    path.parent.mkdir()
    path.write_text("{}")
    path.chmod(0o644)
    link = tmp_path / "via-link"
    link.symlink_to(evil_project)
    store.remember(PluginSet.scan(link))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    saved = json.loads(path.read_text())["folders"]
    digest = PluginSet.scan(evil_project).files["evil.py"]
    assert saved == {str(evil_project.resolve()): {"evil.py": digest}}
    assert [p.name for p in path.parent.iterdir()] == ["trusted.json"], "no temporary file is left behind"


@pytest.mark.parametrize("content", ["not json at all", '{"folders": ["oops"]}', '["x"]', '{"folders": {"/p": 3}}'])
def test_a_damaged_trust_file_trusts_nothing_and_is_rewritten(tmp_path, evil_project, content):
    path = tmp_path / "trusted.json"
    path.write_text(content)
    store = TrustStore(path)
    plugins = PluginSet.scan(evil_project)
    assert not store.trusts(plugins)
    store.remember(plugins)
    assert store.trusts(plugins)


def test_decide_without_a_terminal_refuses_and_says_how_to_trust(tmp_path, evil_project, monkeypatch):
    monkeypatch.chdir(evil_project)
    notices: list[str] = []
    asked: list[str] = []
    store = TrustStore(tmp_path / "t.json")
    decision = decide(PluginSet.scan(evil_project), interactive=False, store=store, ask=asked.append, notice=notices.append)
    assert not decision.load and not asked
    assert notices == ["not loading the plugins in ./.agents/plugins (evil.py): no terminal to ask; run with --trust to load them"]
    assert decide(PluginSet.scan(evil_project), interactive=False, trust_flag=True, store=store).load
    assert not store.path.exists(), "--trust is for this run only"


@pytest.mark.parametrize(
    ("answer", "loads", "remembered"),
    [("y", True, False), ("yes", True, False), ("always", True, True), ("n", False, False), ("", False, False),
     (None, False, False), ("sure", False, False)],
)
def test_decide_on_a_terminal_follows_the_answer(tmp_path, evil_project, monkeypatch, answer, loads, remembered):
    monkeypatch.chdir(evil_project)
    store = TrustStore(tmp_path / "t.json")
    questions: list[str] = []
    decision = decide(PluginSet.scan(evil_project), interactive=True, store=store,
                      ask=lambda q: questions.append(q) or answer)
    assert questions == [QUESTION]
    assert decision.load is loads
    assert store.trusts(PluginSet.scan(evil_project)) is remembered


def test_no_plugin_files_means_no_question(tmp_path, project):
    (project / ".agents" / "plugins").mkdir(parents=True)
    (project / ".agents" / "plugins" / "notes.txt").write_text("not a plugin")
    decision = decide(PluginSet.scan(project), interactive=True, store=TrustStore(tmp_path / "t.json"),
                      ask=lambda q: pytest.fail(f"asked {q!r}"))
    assert not decision.load


def test_the_question_names_other_folders_and_what_changed(tmp_path, evil_project, monkeypatch):
    monkeypatch.chdir(tmp_path)
    store = TrustStore(tmp_path / "t.json")
    store.remember(PluginSet.scan(evil_project))
    shutil.copy(TEST_PLUGINS / "scripted.py", evil_project / ".agents" / "plugins" / "added.py")
    questions: list[str] = []
    decide(PluginSet.scan(evil_project), interactive=True, store=store, ask=lambda q: questions.append(q) or "n")
    assert questions == ["Load the plugins in project/.agents/plugins (added.py, evil.py; changed since you trusted "
                         "them: added.py)? [y/N/always] "]


# -- elelem-lsp ask on a terminal ----------------------------------------------------------------------


def test_answer_n_loads_nothing_and_names_why_the_provider_is_missing(evil_project, trust_file):
    child = spawn_ask(evil_project, "-p", "evil", "hi")
    child.expect_exact(QUESTION)
    child.sendline("n")
    status, output = finish(child)
    assert status == 1
    assert 'unknown provider: "evil". The workspace plugins in .agents/plugins (evil.py) were not loaded: ' \
           "this folder is not trusted." in output
    assert "pip install" not in output
    assert not imported(evil_project) and not trust_file.exists()


def test_answer_y_loads_once_and_asks_again_next_time(evil_project, trust_file):
    child = spawn_ask(evil_project, "-p", "evil", "hi")
    child.expect_exact(QUESTION)
    child.sendline("y")
    status, output = finish(child)
    assert status == 0 and "evil ran" in output
    assert imported(evil_project) and not trust_file.exists()

    again = spawn_ask(evil_project, "-p", "evil", "hi")
    again.expect_exact(QUESTION)
    again.sendline("")  # Enter is No
    status, _ = finish(again)
    assert status == 1


def test_answer_always_is_remembered_until_the_plugins_change(evil_project, trust_file):
    child = spawn_ask(evil_project, "-p", "evil", "hi")
    child.expect_exact(QUESTION)
    child.sendline("always")
    status, output = finish(child)
    assert status == 0 and "evil ran" in output
    assert stat.S_IMODE(trust_file.stat().st_mode) == 0o600
    assert str(evil_project.resolve()) in json.loads(trust_file.read_text())["folders"]

    second = spawn_ask(evil_project, "-p", "evil", "hi")
    status, output = finish(second)
    assert status == 0 and "evil ran" in output
    assert "Load the plugins" not in output, "the second run does not ask"

    add_plugin(evil_project, "echo")
    third = spawn_ask(evil_project, "-p", "evil", "hi")
    third.expect_exact("Load the plugins in ./.agents/plugins (echo.py, evil.py; changed since you trusted them: "
                       "echo.py)? [y/N/always] ")
    third.sendline("n")
    assert finish(third)[0] == 1


def test_a_symlinked_folder_shares_the_trust_of_its_resolved_path(evil_project, trust_file, tmp_path):
    child = spawn_ask(evil_project, "-p", "evil", "hi")
    child.expect_exact(QUESTION)
    child.sendline("always")
    assert finish(child)[0] == 0
    link = tmp_path / "elsewhere"
    link.symlink_to(evil_project)
    status, output = finish(spawn_ask(link, "-p", "evil", "hi"))
    assert status == 0 and "evil ran" in output and "Load the plugins" not in output


# -- without a terminal, --trust, user plugins --------------------------------------------------------


def test_without_a_terminal_workspace_plugins_are_refused_with_one_line(evil_project, trust_file):
    run = ask_piped(evil_project, "-p", "evil", "hi")
    assert run.returncode == 1
    assert run.stdout == ""  # the error is on stderr, the reply's place stays empty
    errors = [line for line in run.stderr.splitlines() if line.startswith("Error:")]
    assert errors and errors[0].startswith('Error: unknown provider: "evil". The workspace plugins in .agents/plugins '
                                           "(evil.py) were not loaded")
    assert "pip install" not in run.stderr
    refusals = [line for line in run.stderr.splitlines() if "not loading" in line]
    assert refusals == ["elelem: not loading the plugins in ./.agents/plugins (evil.py): no terminal to ask; "
                        "run with --trust to load them"]
    assert not imported(evil_project)


def test_without_a_terminal_other_providers_still_work(evil_project, trust_file):
    run = ask_piped(evil_project, "-p", "stub", "hi")
    assert run.returncode == 0 and run.stdout == "done.\n"
    assert not imported(evil_project)


def test_trust_flag_loads_them_without_asking_or_remembering(evil_project, trust_file):
    run = ask_piped(evil_project, "--trust", "-p", "evil", "hi")
    assert run.returncode == 0, run.stderr
    assert run.stdout == "evil ran\n" and "not loading" not in run.stderr
    assert imported(evil_project) and not trust_file.exists()
    child = spawn_ask(evil_project, "--trust", "-p", "evil", "hi")
    status, output = finish(child)
    assert status == 0 and "Load the plugins" not in output


def test_user_plugins_stay_trusted_without_a_terminal(project, home, trust_file):
    (home / ".agents" / "plugins").mkdir(parents=True)
    shutil.copy(ROOT / "plugins" / "parrot.py", home / ".agents" / "plugins")
    run = ask_piped(project, "-p", "parrot", "what is in the readme?")
    assert run.returncode == 0, run.stderr
    assert run.stdout == "README.md has 1 line; it starts: # hello\n"
    assert "not loading" not in run.stderr


def test_providers_lists_workspace_plugins_only_when_trusted(evil_project, trust_file):
    listing = [sys.executable, "-m", "elelem_lsp", "providers"]
    refused = subprocess.run(listing, cwd=evil_project, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert refused.returncode == 0 and "evil" not in refused.stdout and "--trust" in refused.stderr
    trusted = subprocess.run([*listing, "--trust"], cwd=evil_project, capture_output=True, text=True, timeout=60)
    assert "  evil" in trusted.stdout.splitlines()


def test_the_readme_first_command_works_in_a_fresh_home(tmp_path):
    """The README's first line, minus the install this environment already did, in a new HOME."""
    readme = (ROOT / "README.md").read_text()
    line = re.search(r"```sh\n(python3 -m pip install \. && (.+))\n```", readme).group(2)
    assert "~/.agents/plugins" in line and "./.agents/plugins" not in line
    home = tmp_path / "fresh-home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env.pop("XDG_STATE_HOME", None)
    run = subprocess.run(["sh", "-c", line], cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("README.md has ") and "; it starts: # elelem-lsp" in run.stdout


# -- chat ----------------------------------------------------------------------------------------------


def test_chat_asks_once_and_reload_refuses_files_added_since(evil_project, trust_file):
    child = pexpect.spawn(
        sys.executable, ["-m", "elelem_lsp", "chat", "-p", "evil"], cwd=str(evil_project), encoding="utf-8",
        timeout=30, env={**os.environ, "TERM": "dumb"}, dimensions=(40, 200),
    )
    child.expect_exact(QUESTION)
    child.sendline("y")
    child.expect_exact("elelem> ")
    child.sendline("hi")
    child.expect_exact("evil ran")
    child.expect_exact("elelem> ")
    child.sendline("/reload")
    child.expect_exact("plugins reloaded")
    add_plugin(evil_project, "echo")
    child.sendline("/reload")
    child.expect_exact("not reloading: ./.agents/plugins changed since you allowed it (echo.py)")
    child.expect_exact("elelem> ")
    child.sendline("/provider")
    child.expect_exact("elelem> ")
    assert "* evil" in child.before and "echo" not in child.before, "the file that appeared was not loaded"
    child.sendeof()
    child.expect(pexpect.EOF)
