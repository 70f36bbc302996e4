"""`elelem-lsp chat` driven through a pseudo-terminal, as a person types."""

from __future__ import annotations

import os
import re
import stat
import sys
from pathlib import Path

import pexpect

from scaffold import add_plugin, run_ask, write_script, write_user_settings
from stored_transcripts import plan_call

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
    assert "full prompt: fixed part " in child.before and "2 earlier turns" in child.before and "room left" in child.before

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
    # the line ask ends with (tests/test_cli.py::test_error_reply_gives_a_non_zero_exit)
    assert 'Error: unknown provider: "nosuch". Available: stub' in child.before


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
    # The banner of a provider picked from the environment: the spinner's test below.


def test_a_spinner_shows_at_once_on_a_terminal_and_leaves_no_trace(project):
    child = pexpect.spawn(
        sys.executable, ["-m", "elelem_lsp", "chat"], cwd=str(project), timeout=20,
        env={**os.environ, "TERM": "xterm-256color"},
    )
    child.expect("starting elelem-lsp")
    # At once: before the server is started (its imports and start take the chat a second or more,
    # longer on a busy machine), not after a time that a busy machine stretches.
    server_started = [task.read_text().split() for task in Path(f"/proc/{child.pid}/task").glob("*/children")]
    child.expect(PROMPT.encode())
    # Each frame is drawn over the last, and the line is cleared before the banner.
    assert child.before.rstrip().split(b"\r\n")[0].endswith(b"\r\x1b[Kelelem: chat with stub (its default model; picked from the environment; -p NAME picks another)")
    assert not any(server_started), "the spinner came only once the server was started"
    child.sendeof()
    child.expect(pexpect.EOF)


def context_shown(child) -> str:
    """What ``/context`` prints in a running chat."""
    child.sendline("/context")
    child.expect(PROMPT)
    return child.before


def leave(child) -> None:
    child.sendeof()
    child.expect(pexpect.EOF)


def test_chat_continues_lists_and_resumes_conversations(project):
    add_plugin(project, "echo")
    child = spawn(project, "-p", "echo")
    child.sendline("/conversations")
    child.expect("no stored conversations in this folder yet")
    child.expect(PROMPT)
    child.sendline("apples are red")
    child.expect("apples are red")
    child.expect(PROMPT)
    child.sendline("/reset")
    child.expect("new conversation")
    child.expect(PROMPT)
    child.sendline("bananas are yellow")
    child.expect(PROMPT)
    child.sendline("/conversations")
    child.expect(PROMPT)
    rows = [line for line in child.before.splitlines() if "turn" in line]
    assert len(rows) == 2, child.before
    assert rows[0].startswith("* ") and rows[0].endswith("bananas are yellow")
    assert rows[1].startswith("  ") and rows[1].endswith("1 turn  apples are red")
    apples = rows[1].split()[0]
    bananas = rows[0].split()[1]
    # The start of an id is enough when only one has it; both may start in the same second.
    unique = next(n for n in range(1, len(apples) + 1) if not bananas.startswith(apples[:n]))
    child.sendline("/resume " + apples[:unique])
    child.expect("resumed: apples are red \\(1 turn\\)")
    child.expect(PROMPT)
    child.sendline("/resume 1999")
    child.expect("no conversation here starts with '1999'")
    child.expect(PROMPT)
    shown = context_shown(child)
    assert "[user] apples are red" in shown and "bananas" not in shown
    leave(child)

    again = spawn(project, "-p", "echo", "--continue")  # the resumed one is the folder's current one
    assert "continuing: apples are red (1 turn)" in again.before and "> apples are red" in again.before
    assert "[user] apples are red" in context_shown(again)
    leave(again)

    fresh = spawn(project, "-p", "echo")  # no flag: a new conversation
    assert "[user]" not in context_shown(fresh)
    leave(fresh)

    named = spawn(project, "-p", "echo", "--resume", bananas)
    assert "continuing: bananas are yellow (1 turn)" in named.before
    leave(named)


def test_a_new_chat_becomes_the_folders_conversation_only_once_something_is_asked(project, home):
    add_plugin(project, "echo")
    child = spawn(project, "-p", "echo")
    child.sendline("apples are red")
    child.expect(PROMPT)
    leave(child)
    leave(spawn(project, "-p", "echo"))  # a new conversation, left without asking
    again = spawn(project, "-p", "echo", "--continue")
    assert "continuing: apples are red (1 turn)" in again.before
    leave(again)
    # That a new conversation asked in becomes the current one: test_chat_continues_lists_and_resumes_conversations
    # here, and tests/host/test_host_conversations.py::test_resume_transcript_and_delete_and_what_they_refuse.
    prompts = home / ".local" / "state" / "elelem-lsp" / "history"  # readline's, kept private
    assert "apples are red" in prompts.read_text() and stat.S_IMODE(prompts.stat().st_mode) == 0o600


def test_chat_compacts_the_older_turns_on_request(project):
    add_plugin(project, "echo")
    child = spawn(project, "-p", "echo")
    child.sendline("/compact")
    child.expect("nothing to compact: the last turns are always kept as they are")
    child.expect(PROMPT)
    for n in range(3):
        child.sendline(f"fact {n}: " + "words " * 100)
        child.expect(PROMPT)
    child.sendline("/compact")
    child.expect(r"1 turn compacted into a summary \(([\d,]+) → ([\d,]+) tokens\)")
    before, after = (int(n.replace(",", "")) for n in child.match.groups())
    assert after < before
    child.expect(PROMPT)
    shown = context_shown(child)
    assert "[user] [A summary of the earlier turns" in shown and "fact 0" not in shown
    leave(child)


def test_chat_resume_of_an_unknown_id_fails_before_the_first_prompt(project):
    child = pexpect.spawn(
        sys.executable, ["-m", "elelem_lsp", "chat", "--resume", "20990101T000000-00000000"], cwd=str(project),
        encoding="utf-8", timeout=20, env={**os.environ, "TERM": "dumb"},
    )
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 1 and PROMPT not in child.before
    assert "Error: id: no conversation '20990101T000000-00000000'" in child.before


def test_chat_shows_the_plan_as_a_checklist_and_usage_prints_the_conversations_tokens(project):
    add_plugin(project, "scripted")
    entries = [{"content": "read the readme", "status": "completed"}, {"content": "answer", "status": "in_progress"},
               {"content": "tidy up", "status": "pending"}]
    write_script(project, [
        [{"type": "doing", "id": "p1", "name": "plan", "arguments": {"entries": entries}},
         {"type": "usage", "inputTokens": 1000, "outputTokens": 40}],
        [{"type": "saying", "text": "answered"}, {"type": "usage", "inputTokens": 1100, "outputTokens": 25}],
    ])
    child = spawn(project, "-p", "scripted")
    child.sendline("plan it")
    child.expect("answered")
    assert "  [x] read the readme\r\n  [~] answer\r\n  [ ] tidy up" in child.before
    child.expect(PROMPT)
    rows = child.before.replace("\x1b[2m", "").replace("\x1b[0m", "")  # both dimmed
    assert rows.endswith("2,100 in · 65 out\r\ndone — scripted · 2 steps\r\n")  # the usage row, the server's footer
    child.sendline("/usage")
    child.expect(PROMPT)
    # the server's conversationText as it is (no price known for this model: no cost)
    assert re.search(r"this conversation: 2,100 in · 65 out · context [1-9][\d,]* of 32,000\r\n", child.before)
    assert "inline completion" not in child.before and "next edit" not in child.before  # none asked of this server
    leave(child)


def test_continuing_shows_the_last_turns_checks_and_plan_as_the_turn_did(project, home):
    add_plugin(project, "scripted")
    write_user_settings(home, {"provider": "scripted", "checkCommand": "wc -l {files}", "allowCommands": ["wc -l"]})
    write = {"type": "doing", "id": "w", "name": "write", "arguments": {"path": "a.txt", "content": "one\ntwo\n"}}
    write_script(project, [[plan_call("p", "completed", "in_progress")], [write],
                           [{"type": "saying", "text": "Wrote it."}, {"type": "usage", "inputTokens": 1000, "outputTokens": 40}]])
    asked = run_ask(project, "write a.txt")
    assert asked.returncode == 0, asked.stderr
    row = "✓ checked a.txt: wc -l a.txt (exit 0)\n    2 a.txt\n"
    assert row in asked.stderr and "1,000 in · 40 out" in asked.stderr

    again = spawn(project, "--continue")
    shown = again.before.replace("\r\n", "\n")
    assert f"> write a.txt\n{row}Plan:\n  [x] step 1\n  [~] step 2\nWrote it.\n1,000 in · 40 out\n" in shown, shown
    leave(again)
