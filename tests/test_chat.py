"""`elelem-lsp chat` driven through a pseudo-terminal, as a person types."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pexpect

from scaffold import add_plugin, write_script

PROMPT = "elelem> "


def spawn(project, *args):
    child = pexpect.spawn(
        sys.executable, ["-m", "elelem_lsp", "chat", "--trust", *args], cwd=str(project), encoding="utf-8", timeout=20,
        env={**os.environ, "TERM": "dumb"}, dimensions=(40, 200),
    )
    child.expect(PROMPT)
    return child


def test_chat_turns_and_slash_commands(project):
    add_plugin(project, "parrot")
    add_plugin(project, "echo")
    child = spawn(project, "-p", "parrot")
    child.sendline("what is in the readme?")
    child.expect("README.md has 1 line; it starts: # hello")
    child.expect(PROMPT)

    child.sendline("/provider")
    child.expect(PROMPT)
    assert "* parrot" in child.before and "  echo" in child.before and "  openai" in child.before

    child.sendline("/provider echo")
    child.expect("provider: echo")
    child.sendline("/model bird")
    child.expect("provider: echo, model: bird")
    child.sendline("hello")
    child.expect("bird: hello")
    child.expect(PROMPT)

    child.sendline("/context")
    child.expect(PROMPT)
    assert "[user] what is in the readme?" in child.before and "[assistant] bird: hello" in child.before

    child.sendline("/tools")
    child.expect(PROMPT)
    assert "execute" in child.before and "grep" in child.before

    child.sendline("/reset")
    child.expect("new conversation")
    child.sendline("/context")
    child.expect(PROMPT)
    assert "[user]" not in child.before

    child.sendline("/provider nosuch")
    child.expect('unknown provider: "nosuch"')
    child.expect(PROMPT)
    child.sendeof()
    child.expect(pexpect.EOF)
    assert child.wait() == 0
    history = (project.parent / "home/.local/state/elelem-lsp/history").read_text()
    assert "what is in the readme?" in history and "/provider echo" in history


def test_ctrl_c_cancels_a_turn_and_exits_only_at_the_prompt(project):
    add_plugin(project, "scripted")
    write_script(project, [[{"type": "saying", "text": "thinking about it"}, {"type": "sleep", "seconds": 30}],
                           [{"type": "saying", "text": "second answer"}]])
    child = spawn(project, "-p", "scripted")
    child.sendline("slow question")
    child.expect("thinking about it")
    child.sendintr()
    child.expect("cancelled")
    child.expect(PROMPT)
    child.sendline("again")
    child.expect("second answer")
    child.expect(PROMPT)
    child.sendintr()
    child.expect(pexpect.EOF)
    assert child.wait() == 0


def test_chat_with_an_unknown_provider_fails_before_the_first_prompt_as_ask_does(project):
    child = pexpect.spawn(
        sys.executable, ["-m", "elelem_lsp", "chat", "-p", "nosuch"], cwd=str(project), encoding="utf-8",
        timeout=20, env={**os.environ, "TERM": "dumb"},
    )
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 1
    assert PROMPT not in child.before
    assert 'Error: unknown provider: "nosuch". Available: stub' in child.before
    asked = subprocess.run(
        [sys.executable, "-m", "elelem_lsp", "ask", "-p", "nosuch", "hi"], cwd=project, capture_output=True, text=True,
        timeout=60,
    )
    assert asked.stderr.strip().splitlines()[-1] in child.before.replace("\r\n", "\n")


def test_the_banner_names_the_provider_and_the_model(project):
    add_plugin(project, "echo")
    child = pexpect.spawn(
        sys.executable, ["-m", "elelem_lsp", "chat", "--trust", "-p", "echo", "--model", "bird"], cwd=str(project),
        encoding="utf-8", timeout=20, env={**os.environ, "TERM": "dumb"},
    )
    child.expect(PROMPT)
    assert "elelem: chat with echo (bird)" in child.before
    child.sendeof()
    child.expect(pexpect.EOF)
    plain = spawn(project)
    assert "elelem: chat with stub (its default model; picked from the environment; -p NAME picks another)" in plain.before
    plain.sendeof()


def test_a_spinner_shows_at_once_on_a_terminal_and_leaves_no_trace(project):
    started = time.monotonic()
    child = pexpect.spawn(
        sys.executable, ["-m", "elelem_lsp", "chat"], cwd=str(project), timeout=20,
        env={**os.environ, "TERM": "xterm-256color"},
    )
    child.expect("starting elelem-lsp")
    first = time.monotonic() - started
    child.expect(PROMPT.encode())
    # Each frame is drawn over the last, and the line is cleared before the banner.
    assert child.before.rstrip().split(b"\r\n")[0].endswith(b"\r\x1b[Kelelem: chat with stub (its default model; picked from the environment; -p NAME picks another)")
    assert first < 2, f"first output after {first:.2f}s"
    child.sendeof()
    child.expect(pexpect.EOF)
