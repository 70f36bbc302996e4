"""Every folder elelem makes is 0700 and every file 0600, whatever the umask.

What is made: the state folder (and the parents of it that did not exist), the stored
conversations with their locks and ``current`` files, the transcripts shown to plain LSP
clients, the plugin trust store, the chat's prompt history. Each is made by the real program
(``elelem-lsp ask``, ``chat``, ``serve``) started under each umask, then every path under the
isolated HOME's state folder is checked. With ``history: false`` nothing of the turn is written.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest

from elelem_lsp.agent.private_files import config_dir, state_dir
from elelem_lsp.host.conversations import conversations_dir
from elelem_lsp.host.transcript import transcript_dir
from elelem_lsp.host.trust import default_trust_file
from elelem_lsp.host.user_settings import settings_path
from scaffold import add_plugin, wait_until, write_script
from test_plain_clients import SCRIPT, reply_messages

UMASKS = [0o000, 0o002, 0o022, 0o077, 0o277]  # none, group-writable, usual, strict, and one denying the owner write


def made_under(home: Path) -> dict[str, int]:
    """Every path elelem made under HOME (the state folder's parents included), with its mode."""
    top = home / ".local"
    return {str(p.relative_to(home)): stat.S_IMODE(p.lstat().st_mode) for p in [top, *top.rglob("*")]}


def private(path: Path, mode: int) -> bool:
    """A folder 0700; a file 0600, or read-only to its owner alone (git's objects in the checkpoints)."""
    return mode == 0o700 if path.is_dir() else mode in (0o600, 0o400)


def assert_private(made: dict[str, int], home: Path) -> None:
    wrong = {path: oct(mode) for path, mode in made.items() if not private(home / path, mode)}
    assert wrong == {}, "not private"


def test_one_function_names_the_state_folder_and_one_the_config_folder(home):
    state, config = home / ".local" / "state" / "elelem-lsp", home / ".config" / "elelem-lsp"
    assert state_dir() == state and config_dir() == config
    assert conversations_dir().parent == transcript_dir().parent == default_trust_file().parent == state
    assert settings_path().parent == config


@pytest.mark.parametrize("umask", UMASKS, ids=oct)
def test_ask_with_always_trusted_plugins_stores_everything_privately(project, home, umask):
    add_plugin(project, "evil")
    add_plugin(project, "echo")
    child = pexpect.spawn(
        sys.executable, ["-m", "elelem_lsp", "ask", "-p", "echo", "hello there"], cwd=str(project), encoding="utf-8",
        timeout=60, env={**os.environ, "TERM": "dumb"}, preexec_fn=lambda: os.umask(umask),
    )
    child.expect(r"\[y/N/always\] ")
    child.sendline("always")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before
    made = made_under(home)
    assert ".local/state/elelem-lsp/trusted-plugins.json" in made
    assert any(path.endswith(".jsonl") for path in made) and any(path.endswith("/current") for path in made)
    assert any(path.endswith(".jsonl.lock") for path in made)
    assert_private(made, home)


@pytest.mark.parametrize("umask", [0o000, 0o022], ids=oct)
def test_the_chat_history_is_private(project, home, umask):
    add_plugin(project, "echo")
    child = pexpect.spawn(
        sys.executable, ["-m", "elelem_lsp", "chat", "--trust", "-p", "echo"], cwd=str(project), encoding="utf-8",
        timeout=30, env={**os.environ, "TERM": "dumb"}, dimensions=(40, 200), preexec_fn=lambda: os.umask(umask),
    )
    child.expect("elelem> ")
    child.sendline("a private thought")
    child.expect("elelem> ")
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    made = made_under(home)
    assert "a private thought" in (home / ".local/state/elelem-lsp/history").read_text()
    assert_private(made, home)


@pytest.fixture
def umask_of_server():
    """The umask the test's server subprocess inherits (set in this process, and put back)."""
    masks = []

    def set_to(mask: int) -> None:
        masks.append(os.umask(mask))

    yield set_to
    for mask in masks[:1]:
        os.umask(mask)


@pytest.mark.parametrize("umask", [0o000, 0o022], ids=oct)
async def test_a_plain_clients_transcript_is_private(project, home, start_editor, umask_of_server, umask):
    add_plugin(project, "scripted")
    write_script(project, SCRIPT)
    umask_of_server(umask)
    editor = await start_editor(project, settings={"provider": "scripted"})
    await editor.ask("what is in the readme?")
    await wait_until(lambda: editor.client.shown_documents, "window/showDocument")
    made = made_under(home)
    assert any(path.startswith(".local/state/elelem-lsp/transcripts/") for path in made)
    assert_private(made, home)


async def test_with_history_off_a_plain_client_gets_no_transcript_and_nothing_is_stored(project, home, start_editor):
    add_plugin(project, "scripted")
    write_script(project, SCRIPT)
    editor = await start_editor(project, settings={"provider": "scripted", "history": False})
    result = await editor.ask("what is in the readme?")
    assert result["reply"].startswith("The readme is a heading")
    await wait_until(lambda: reply_messages(editor), "the reply message")  # shown with the transcript, if any
    assert editor.client.shown_documents == []
    state = home / ".local" / "state" / "elelem-lsp"  # checkpoints have a setting of their own
    assert not (state / "conversations").exists() and not (state / "transcripts").exists()


def test_state_folder_made_by_an_older_run_is_used_as_it_is(project, home):
    """A folder that is there already is the person's to set: elelem does not change its mode."""
    state = home / ".local" / "state" / "elelem-lsp"
    state.mkdir(parents=True)
    state.chmod(0o750)
    add_plugin(project, "echo")
    done = subprocess.run(
        [sys.executable, "-m", "elelem_lsp", "ask", "--trust", "-p", "echo", "hi"], cwd=project,
        capture_output=True, text=True, timeout=60, preexec_fn=lambda: os.umask(0),
    )
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE(state.stat().st_mode) == 0o750
    made = {path: mode for path, mode in made_under(home).items() if path.startswith(".local/state/elelem-lsp/")}
    assert made and all(private(home / p, mode) for p, mode in made.items())
