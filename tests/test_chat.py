"""`elelem-lsp chat` driven through a pseudo-terminal, as a person types."""

from __future__ import annotations

import os
import sys

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
    child.expect('the tool said: \\{"content":"# hello\\\\n"')
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
