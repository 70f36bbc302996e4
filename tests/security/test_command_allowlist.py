"""The allowCommands rule, attacked: commands that start like an allowed one but run more.

Each case is what a model might send to slip a second command past a list the person
wrote for one harmless program. The rule is a pure function; one end-to-end test runs
the same attacks through a real server and checks on disk that nothing ran unasked.
"""

from __future__ import annotations

import pytest
from lsprotocol import types as lsp

from elelem_lsp.agent.command_allowlist import allows
from elelem_lsp.agent.sandbox import probe
from scaffold import add_plugin, write_script

SMUGGLED = [
    "ls; touch x",
    "ls ;touch x",
    "ls && touch x",
    "ls || touch x",
    "ls & touch x",
    "ls &",
    "ls | sh",
    '  ls | sh -c "touch x"',
    "ls |& cat",
    "ls\ntouch x",
    "ls\r\ntouch x",
    "ls\rtouch x",
    "ls $(touch x)",
    'ls "$(touch x)"',
    "ls `touch x`",
    'ls "`touch x`"',
    "ls $((1+1))",
    "ls ${HOME}",
    "ls ${x:=$(touch x)}",
    "ls $HOME",
    "ls > x",
    "ls >> x",
    "ls >x",
    "ls 2>&1",
    "ls < /etc/passwd",
    "ls <<< x",
    "ls << EOF",
    "ls <(touch x)",
    "ls >(touch x)",
    "ls \\\ntouch x",
    "ls \\; touch x",
    "ls \\",
    "(ls)",
    "ls (x)",
    "ls 'unbalanced",
    'ls "unbalanced',
    "ls \x00 x",
    "ls \x1b[2J",
    "ls\x0btouch x",
    "ls\x0ctouch x",
    "ls\x7f",
]

SPELLED_DIFFERENTLY = ["lsof", "ls-x", "lss", "l s", "LS", "./ls", "/bin/ls", "x=1 ls", "sudo ls", "env ls", "", "   "]


@pytest.mark.parametrize("command", SMUGGLED)
def test_shell_control_is_never_allowed_by_the_list(command):
    assert not allows(["ls"], command)


@pytest.mark.parametrize("command", SPELLED_DIFFERENTLY)
def test_a_different_first_word_is_not_allowed(command):
    assert not allows(["ls"], command)


@pytest.mark.parametrize(
    "command",
    ["ls", "ls -la", "  ls  -la  ", "ls\t-la", "ls 'my file'", 'ls "my file"', "'ls'", "l's'", "ls src/*.py", "ls ~", "ls #x"],
)
def test_plain_words_after_the_entry_are_allowed(command):
    assert allows(["ls"], command)


@pytest.mark.parametrize(
    ("entries", "command", "allowed"),
    [
        (["git status"], "git status", True),
        (["git status"], "git status -s", True),
        (["git status"], "git   status   --short", True),
        (["git status"], "git 'status' -s", True),
        (["git status"], "git statusx", False),
        (["git status"], "git", False),
        (["git status"], "git stat", False),
        (["git status"], "git -c core.pager=sh status", False),
        (["git status"], "git log", False),
        (["git status"], "git status; git push", False),
        (["git status "], "git status", True),
        (["  git   status  "], "git status -s", True),
        (["pytest", "git status"], "git status", True),
        (["pytest", "git status"], "pytest -x tests", True),
        (["pytest", "git status"], "pytest -x tests && rm -rf .", False),
        (["pytest -q"], "pytest", False),
        (["pytest -q"], "pytest -q tests", True),
        (["touch "], "touch allowed.txt", True),
    ],
)
def test_entries_match_whole_words(entries, command, allowed):
    assert allows(entries, command) is allowed


@pytest.mark.parametrize("entries", [[], [""], ["   "], ["ls; touch x"], ["'unbalanced"], ["ls $(x)"], [None], [5]])
def test_empty_or_malformed_entries_allow_nothing(entries):
    assert not allows(entries, "ls")
    assert not allows(entries, "touch x")


ATTACKS = ["ls; touch x", "ls && touch x", "ls $(touch x)", "ls `touch x`", "ls > x", "ls\ntouch x", "  ls | sh -c 'touch x'"]


async def test_the_server_asks_before_running_a_smuggled_command(project, start_editor):
    """Each attack reaches the permission prompt (denied here), so `x` is never created."""
    add_plugin(project, "scripted")
    calls = [{"type": "doing", "id": f"c{n}", "name": "execute", "arguments": {"command": c}} for n, c in enumerate(ATTACKS)]
    calls.append({"type": "doing", "id": "plain", "name": "execute", "arguments": {"command": "ls -a"}})
    write_script(project, [calls])
    editor = await start_editor(project, settings={"provider": "scripted", "allowCommands": ["ls"]})
    asked: list[str] = []

    @editor.client.feature(lsp.WINDOW_SHOW_MESSAGE_REQUEST)
    def deny(params: lsp.ShowMessageRequestParams) -> lsp.MessageActionItem:
        asked.append(params.message)
        return lsp.MessageActionItem(title="Deny")

    await editor.ask("run")
    ending = " (no sandbox)" if probe().kind is None else " (in the sandbox)"  # bubblewrap or sandbox-exec
    assert asked == [f"elelem wants to run: {command}{ending}" for command in ATTACKS]
    results = {e["id"]: e for e in editor.events() if e["type"] == "result"}
    assert [results[f"c{n}"]["ok"] for n in range(len(ATTACKS))] == [False] * len(ATTACKS)
    assert results["plain"]["ok"] is True  # allowed by the list, without a prompt
    assert not (project / "x").exists()


async def test_under_execute_deny_only_listed_commands_run(project, start_editor):
    """`deny` with a list is "only these": a listed command runs, a smuggled one is refused unasked."""
    add_plugin(project, "scripted")
    write_script(project, [[
        {"type": "doing", "id": "smuggled", "name": "execute", "arguments": {"command": "ls; touch x"}},
        {"type": "doing", "id": "other", "name": "execute", "arguments": {"command": "touch y"}},
        {"type": "doing", "id": "listed", "name": "execute", "arguments": {"command": "ls -a"}},
    ]])
    editor = await start_editor(project, settings={"provider": "scripted", "execute": "deny", "allowCommands": ["ls"]})
    asked = []
    editor.client.feature(lsp.WINDOW_SHOW_MESSAGE_REQUEST)(lambda params: asked.append(params))
    await editor.ask("run")
    results = {e["id"]: e for e in editor.events() if e["type"] == "result"}
    assert results["smuggled"]["ok"] is False and "elelem.execute" in results["smuggled"]["error"]
    assert results["other"]["ok"] is False and "elelem.execute" in results["other"]["error"]
    assert results["listed"]["ok"] is True
    assert asked == []
    assert not (project / "x").exists() and not (project / "y").exists()
