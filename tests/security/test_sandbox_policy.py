"""The command sandbox's rules, in-process: the bubblewrap command line and the macOS profile a
policy turns into, what each mode does when no sandbox works, the settings (and what an
untrusted folder may not loosen), and how the person is asked and told."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from elelem_lsp.agent import sandbox
from elelem_lsp.agent.sandbox import (
    Available,
    SandboxPolicy,
    SandboxRefused,
    bwrap_argv,
    contain,
    seatbelt_profile,
)
from elelem_lsp.agent.toolbox import Toolbox
from elelem_lsp.host.permission import allow_command
from elelem_lsp.host.settings import Settings, parse_settings, within_trust
from host.memory_frontend import MemoryFrontend, memory_workspace

SHELL = ["/bin/sh", "-c", "make test"]


def pairs(argv: list[str], option: str) -> list[str]:
    """The value after each ``option`` in ``argv`` (the first of its arguments)."""
    return [argv[i + 1] for i, word in enumerate(argv) if word == option]


@pytest.fixture
def secrets_home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    for folder in (".ssh", ".gnupg", ".aws", ".config/gcloud"):
        (home / folder).mkdir(parents=True)
    (home / ".netrc").write_text("machine example.com password hunter2\n")
    return home


def test_the_command_runs_last_unchanged_after_the_options(tmp_path):
    argv = bwrap_argv("/bwrap", SHELL, tmp_path, SandboxPolicy(), tmp_path / "home")
    assert argv[0] == "/bwrap"
    assert argv[-4:] == ["--", *SHELL]
    assert pairs(argv, "--chdir") == [str(tmp_path)]


def test_everything_is_read_only_but_the_workspace_a_private_layer_over_tmp_and_the_listed_folders(tmp_path):
    cache = tmp_path / "cache"
    argv = bwrap_argv("/bwrap", SHELL, tmp_path / "ws", SandboxPolicy(writable=(cache,)), tmp_path / "home")
    assert argv[argv.index("--ro-bind") : argv.index("--ro-bind") + 3] == ["--ro-bind", "/", "/"]
    assert pairs(argv, "--bind-try") == [str(tmp_path / "ws"), str(cache)]
    assert pairs(argv, "--overlay-src") == ["/tmp"] and pairs(argv, "--tmp-overlay") == ["/tmp"]
    assert "/tmp" not in pairs(argv, "--tmpfs")  # the machine's /tmp is seen, not replaced by an empty one
    assert pairs(argv, "--dev") == ["/dev"] and pairs(argv, "--proc") == ["/proc"]
    assert setenv(argv) == {"TMPDIR": "/tmp", "TMP": "/tmp", "TEMP": "/tmp", "TEMPDIR": "/tmp"}
    # the order matters: each mount lands on what the ones before it made (a workspace under /tmp
    # is bound over the private layer, so that its writes land in the real folder)
    assert argv.index("--ro-bind") < argv.index("--overlay-src") < argv.index("--tmp-overlay") < argv.index("--bind-try")


def test_without_an_overlay_tmp_stays_read_only_and_the_temporary_folder_is_a_private_one(tmp_path):
    private = tmp_path / "elelem-sandbox-x"
    argv = bwrap_argv("/bwrap", SHELL, tmp_path / "ws", SandboxPolicy(), tmp_path / "home", tmp_folder=private)
    assert "--overlay-src" not in argv and "--tmp-overlay" not in argv and "/tmp" not in pairs(argv, "--tmpfs")
    assert argv[argv.index("--bind") : argv.index("--bind") + 3] == ["--bind", str(private), str(private)]
    assert setenv(argv) == dict.fromkeys(("TMPDIR", "TMP", "TEMP", "TEMPDIR"), str(private))
    assert argv.index("--ro-bind") < argv.index("--bind") < argv.index("--bind-try")


def setenv(argv: list[str]) -> dict[str, str]:
    """The variables bubblewrap sets in the sandbox, and their values."""
    return {argv[i + 1]: argv[i + 2] for i, word in enumerate(argv) if word == "--setenv"}


@pytest.mark.parametrize("network", [False, True])
def test_every_namespace_is_its_own_and_the_network_only_when_allowed(tmp_path, network):
    argv = bwrap_argv("/bwrap", SHELL, tmp_path, SandboxPolicy(network=network), tmp_path / "home")
    assert {"--unshare-all", "--die-with-parent", "--new-session"} <= set(argv)
    assert ("--share-net" in argv) is network


def test_the_secrets_folders_are_emptied_and_files_blanked_after_the_writable_binds(tmp_path, secrets_home):
    argv = bwrap_argv("/bwrap", SHELL, secrets_home, SandboxPolicy(writable=(secrets_home,)), secrets_home)
    hidden = {str(secrets_home / name) for name in (".ssh", ".gnupg", ".aws", ".config/gcloud")}
    assert hidden <= set(pairs(argv, "--tmpfs"))
    blanked = [argv[i + 2] for i, word in enumerate(argv) if word == "--ro-bind" and argv[i + 1] == "/dev/null"]
    assert blanked == [str(secrets_home / ".netrc")]
    last_bind = max(i for i, word in enumerate(argv) if word == "--bind-try")
    assert all(argv.index(path) > last_bind for path in hidden)  # a writable home still hides them
    assert "--unsetenv" in argv and pairs(argv, "--unsetenv") == ["SSH_AUTH_SOCK"]


def test_a_secret_that_does_not_exist_is_not_mounted(tmp_path):
    argv = bwrap_argv("/bwrap", SHELL, tmp_path, SandboxPolicy(), tmp_path / "nobody")
    assert not any(".ssh" in word for word in argv)


def test_the_agents_sockets_folder_is_hidden(tmp_path, monkeypatch):
    runtime = tmp_path / "run-user"
    runtime.mkdir()
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    assert str(runtime) in pairs(bwrap_argv("/bwrap", SHELL, tmp_path, SandboxPolicy(), tmp_path), "--tmpfs")


def test_the_macos_profile_denies_writes_but_to_the_workspace_tmp_and_listed_folders(tmp_path, secrets_home):
    profile = seatbelt_profile(tmp_path / "ws", SandboxPolicy(writable=(tmp_path / "cache",)), secrets_home, tmp_path / "t")
    assert profile.startswith("(version 1)\n(allow default)\n(deny file-write*)\n")
    for folder in ("ws", "cache", "t"):
        assert f'(subpath "{tmp_path.resolve() / folder}")' in profile
    denied = profile[profile.index("(deny file-read*") :]
    assert f'(subpath "{secrets_home.resolve() / ".ssh"}")' in denied
    assert f'(subpath "{secrets_home.resolve() / ".netrc"}")' in denied
    assert "(deny network*)" in profile
    assert "(deny network*)" not in seatbelt_profile(tmp_path, SandboxPolicy(network=True), secrets_home, tmp_path)


def test_the_guarded_files_there_are_bound_read_only_after_the_workspace_and_the_missing_ones_blocked(tmp_path):
    (tmp_path / ".vscode").mkdir()
    (tmp_path / ".git" / "hooks").mkdir(parents=True)
    (tmp_path / ".git" / "config").write_text("")
    placeholders = tuple(tmp_path / name for name in sandbox.missing_guarded(tmp_path))
    argv = bwrap_argv("/bwrap", SHELL, tmp_path, SandboxPolicy(writable=(tmp_path,)), tmp_path / "home", placeholders)
    read_only = [argv[i + 2] for i, word in enumerate(argv) if word == "--ro-bind" and argv[i + 1] != "/dev/null"]
    assert read_only[1:] == [str(tmp_path / name) for name in (".vscode", ".git/hooks", ".git/config")]
    blocked = [argv[i + 2] for i, word in enumerate(argv) if word == "--ro-bind" and argv[i + 1] == "/dev/null"]
    assert blocked == [str(tmp_path / name) for name in (".zed", ".helix", ".agents", ".dir-locals.el", ".dir-locals-2.el",
                                                          ".nvim.lua", ".nvimrc", ".exrc")]
    last_bind = max(i for i, word in enumerate(argv) if word == "--bind-try")
    assert all(argv.index(path) > last_bind for path in read_only[1:] + blocked)  # over the writable binds


def test_git_hooks_are_not_blocked_outside_a_repository(tmp_path):
    """So that ``git init`` still works in a folder that is not a repository yet."""
    assert not {".git/hooks", ".git/config"} & set(sandbox.missing_guarded(tmp_path))
    (tmp_path / ".git").write_text("gitdir: ../elsewhere\n")  # a worktree's .git is a file
    assert not {".git/hooks", ".git/config"} & set(sandbox.missing_guarded(tmp_path))


async def test_a_lasting_process_gets_no_placeholders(tmp_path, monkeypatch):
    """An MCP server runs for hours: a placeholder would stand where the person creates .vscode."""
    monkeypatch.setattr(sandbox, "probe", lambda: Available("bubblewrap", "/usr/bin/bwrap"))
    command = await contain(SHELL, tmp_path, SandboxPolicy())
    server = await contain(SHELL, tmp_path, SandboxPolicy(), lasting=True)
    assert tmp_path / ".vscode" in command.placeholders and "/dev/null" in command.argv
    assert server.placeholders == () and "/dev/null" not in server.argv


def test_placeholders_are_cleared_only_while_empty_files(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "empty").write_text("")
    (root / "written").write_text("the person's own\n")
    (root / "folder").mkdir()
    sandbox.Contained([], "", tuple(root / name for name in ("empty", "written", "folder", "gone"))).clear_placeholders()
    assert sorted(p.name for p in root.iterdir()) == ["folder", "written"]


def test_the_macos_profile_denies_writes_to_the_guarded_files_there_or_not(tmp_path):
    profile = seatbelt_profile(tmp_path, SandboxPolicy(), tmp_path / "home", tmp_path / "t")
    guarded = profile[profile.index("(deny file-write*\n") :]
    for name in (".vscode", ".zed", ".helix", ".agents", ".dir-locals.el", ".dir-locals-2.el", ".nvim.lua", ".nvimrc",
                 ".exrc", ".git/hooks", ".git/config"):
        assert f'(subpath "{tmp_path.resolve()}/{name}")' in guarded
    assert profile.index("(allow file-write*") < profile.index("(deny file-write*\n")  # the later rule wins


def test_a_quote_in_a_path_cannot_end_the_profiles_string(tmp_path):
    odd = tmp_path / 'a"b\\c'
    profile = seatbelt_profile(odd, SandboxPolicy(), tmp_path / "home", tmp_path)
    assert f'(subpath "{tmp_path.resolve()}/a\\"b\\\\c")' in profile  # in the profile: a\"b\\c


# -- what each mode does --------------------------------------------------------------


@pytest.fixture
def no_sandbox(monkeypatch):
    """A machine where no sandbox works (this one has one: the probe's answer is replaced)."""
    monkeypatch.setattr(sandbox, "probe", lambda: Available(None, why_not="bubblewrap does not work here: No permissions"))


async def test_off_leaves_the_command_as_it_is(tmp_path):
    assert (await contain(SHELL, tmp_path, SandboxPolicy(mode="off"))).argv == SHELL


async def test_auto_without_a_sandbox_runs_the_command_as_it_is(tmp_path, no_sandbox):
    contained = await contain(SHELL, tmp_path, SandboxPolicy())
    assert (contained.argv, contained.sandbox) == (SHELL, "")


async def test_required_without_a_sandbox_refuses_saying_why(tmp_path, no_sandbox):
    with pytest.raises(SandboxRefused, match="^no sandbox works here: bubblewrap does not work here"):
        await contain(SHELL, tmp_path, SandboxPolicy(mode="required"))


async def test_with_a_sandbox_the_command_is_wrapped_and_says_how(tmp_path, monkeypatch):
    monkeypatch.setattr(sandbox, "probe", lambda: Available("bubblewrap", "/usr/bin/bwrap", tmp_overlay=True))
    contained = await contain(SHELL, tmp_path, SandboxPolicy(mode="required"))
    assert contained.argv[0] == "/usr/bin/bwrap" and contained.argv[-3:] == SHELL
    assert contained.sandbox == "bubblewrap: writes only to the workspace (not its settings, plugins or git hooks) and a private /tmp, network off"


async def test_without_an_overlay_the_command_is_told_its_temporary_folder_and_that_tmp_is_read_only(tmp_path, monkeypatch):
    private = tmp_path / "elelem-sandbox-x"
    monkeypatch.setattr(sandbox, "probe", lambda: Available("bubblewrap", "/usr/bin/bwrap", tmp_overlay=False))
    monkeypatch.setattr(sandbox, "private_tmp", lambda: private)
    contained = await contain(SHELL, tmp_path, SandboxPolicy(mode="required", network=True))
    assert ["--bind", str(private), str(private)] == contained.argv[contained.argv.index("--bind") :][:3]
    assert contained.sandbox == (
        "bubblewrap: writes only to the workspace (not its settings, plugins or git hooks) and a private TMPDIR "
        f"({tmp_path}/elelem-sandbox-x; /tmp read-only), network on"
    )


FAKE_BWRAP = """#!/bin/sh
# bubblewrap on a kernel that refuses an overlay in a user namespace
for word in "$@"; do
    if [ "$word" = --tmp-overlay ]; then echo "bwrap: Can't make overlay mount on /newroot/tmp: Operation not permitted" >&2; exit 1; fi
done
exit 0
"""


def fake_bwrap(folder: Path, script: str, monkeypatch) -> str:
    """A program standing in for bubblewrap on Linux (the real one works here), running ``script``."""
    fake = folder / "bwrap"
    fake.write_text(script)
    fake.chmod(0o755)
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setattr(sandbox, "bwrap_program", lambda: str(fake))
    return str(fake)


def test_where_the_kernel_refuses_the_overlay_the_probe_chooses_a_read_only_tmp(tmp_path, monkeypatch):
    fake = fake_bwrap(tmp_path, FAKE_BWRAP, monkeypatch)
    assert sandbox.probe.__wrapped__() == Available("bubblewrap", fake, tmp_overlay=False)


def test_where_bubblewrap_fails_altogether_the_probe_says_why(tmp_path, monkeypatch):
    fake_bwrap(tmp_path, "#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2; exit 1\n", monkeypatch)
    assert sandbox.probe.__wrapped__() == Available(None, why_not="bubblewrap does not work here: bwrap: No permissions to create new namespace")


# -- what a command that failed on a hidden path is told ----------------------------------


@pytest.mark.parametrize(
    "output",
    [
        "cat: {home}/.ssh/id_rsa: No such file or directory",
        "/bin/sh: 1: {home}/.aws/bin/tool: not found",
        "cat: .ssh/id_rsa: No such file or directory",  # run in the home folder
        "ls: cannot access '~/.ssh/config': No such file or directory",
    ],
)
def test_a_failure_naming_a_hidden_secret_is_told_the_sandbox_hid_it(secrets_home, monkeypatch, output):
    monkeypatch.setenv("HOME", str(secrets_home))
    note = sandbox.hidden_note(output.format(home=secrets_home))
    folder = ".aws" if ".aws" in output else ".ssh"
    assert note.startswith(f"the sandbox hides {secrets_home}/{folder} from commands")
    assert "elelem.sandbox 'off'" in note


@pytest.mark.parametrize(
    "output",
    [
        "cat: {home}/.kube/config: No such file or directory",  # no ~/.kube here: nothing was hidden
        "cat: project/my.ssh/id: No such file or directory",
        "/bin/sh: 1: ruff: not found",
    ],
)
def test_a_failure_naming_nothing_hidden_is_told_nothing(secrets_home, monkeypatch, output):
    monkeypatch.setenv("HOME", str(secrets_home))
    assert sandbox.hidden_note(output.format(home=secrets_home)) == ""


# -- settings -----------------------------------------------------------------------------


def test_the_sandbox_settings_and_their_defaults():
    assert (Settings().sandbox, Settings().sandbox_network, Settings().sandbox_writable) == ("auto", False, [])
    settings, problems = parse_settings({"sandbox": "required", "sandboxNetwork": True, "sandboxWritable": ["~/.cache/pip"]})
    assert (settings.sandbox, settings.sandbox_network, settings.sandbox_writable, problems) == (
        "required", True, ["~/.cache/pip"], [])


def test_a_bad_sandbox_value_is_named_and_the_default_used():
    settings, problems = parse_settings({"sandbox": "sometimes"})
    assert settings.sandbox == "auto"
    assert problems == ["invalid value for elelem.sandbox: 'sometimes'; using 'auto'"]


def test_an_untrusted_folder_can_neither_turn_the_sandbox_off_nor_widen_it():
    loose = Settings(trusted=False, sandbox="off", sandboxNetwork=True, sandboxWritable=["/"])
    limited, ignored = within_trust(loose)
    assert (limited.sandbox, limited.sandbox_network, limited.sandbox_writable) == ("auto", False, [])
    assert {"sandbox 'off' (using 'auto')", "sandboxNetwork", "sandboxWritable"} <= set(ignored)
    strict, ignored = within_trust(Settings(trusted=False, sandbox="required"))
    assert strict.sandbox == "required" and ignored == []


def test_writable_folders_are_resolved_from_the_folder_and_home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    ws = memory_workspace(tmp_path, lambda: Settings(sandboxWritable=["~/.cache", "build", "/opt/x"]))
    assert ws.sandbox_policy().writable == ((tmp_path / "home/.cache").resolve(), (tmp_path / "build").resolve(), Path("/opt/x"))


# -- the person ---------------------------------------------------------------------------


@pytest.mark.parametrize(("sandboxed", "said"), [(True, "(in the sandbox)"), (False, "(no sandbox)")])
async def test_the_question_says_whether_the_command_runs_in_the_sandbox(sandboxed, said):
    frontend = MemoryFrontend(answers=["Deny"])
    await allow_command("make", Settings(), set(), frontend, sandboxed=sandboxed)
    assert frontend.questions == [f"elelem wants to run: make {said}"]


async def test_required_without_a_sandbox_is_refused_without_asking(tmp_path, no_sandbox):
    frontend = MemoryFrontend(answers=["Allow once"])
    ws = memory_workspace(tmp_path, lambda: Settings(sandbox="required"), frontend)
    result = await Toolbox().call("execute", {"command": "touch ran"}, ws)
    assert result["ok"] is False
    assert "elelem.sandbox is 'required' and no sandbox works here: bubblewrap does not work here" in result["error"]
    assert frontend.questions == [] and not (tmp_path / "ran").exists()


async def test_auto_without_a_sandbox_tells_the_person_once_and_runs(tmp_path, no_sandbox):
    frontend = MemoryFrontend()
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir(), second.mkdir()
    for root in (first, first, second):  # two commands in one folder, one in another: one message
        ws = memory_workspace(root, lambda: Settings(execute="allow"), frontend)
        result = await Toolbox().call("execute", {"command": "touch ran"}, ws)
        assert result["ok"] is True and "sandbox" not in result
    assert (first / "ran").exists() and (second / "ran").exists()
    assert frontend.messages == [
        ("warning", "elelem: commands run without a sandbox (bubblewrap does not work here: No permissions); "
                    "set elelem.sandbox to 'required' to refuse them")
    ]


async def test_off_neither_tells_nor_wraps(tmp_path, no_sandbox):
    frontend = MemoryFrontend(answers=["Allow once"])
    ws = memory_workspace(tmp_path, lambda: Settings(sandbox="off"), frontend)
    assert (await Toolbox().call("execute", {"command": "true"}, ws))["ok"] is True
    assert frontend.messages == [] and frontend.questions == ["elelem wants to run: true (no sandbox)"]
