"""What the terminal client prints: one line per tool call, and nothing the model says drives the terminal."""

from __future__ import annotations

import io
import os
import random
import re
import subprocess
import sys

import pexpect
import pytest

from scaffold import add_plugin, write_script

from elelem_lsp.agent.events import compaction, context_event
from elelem_lsp.agent.toolbox import Toolbox
from elelem_lsp.client.terminal import DIM, RESET, Terminal, printable, usage_lines

# ESC sequences and single control bytes a model could emit to take over a terminal.
HOSTILE = (
    "\x1b[31mred\x1b[0m"  # CSI colour
    "\x1b]52;c;ZWNobyBwd25lZA==\x07"  # OSC 52: write the clipboard, ended by BEL
    "\x1b]0;title\x1b\\"  # OSC window title, ended by ST
    "\x9b2J"  # C1 CSI: clear the screen
    "\x1bc"  # RIS: reset the terminal
    "\x07\x08\r\x00\x7f\x85"  # BEL, BS, CR, NUL, DEL, NEL
)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("\x1b[1;31mred\x1b[0m text", "red text"),
        ("copy \x1b]52;c;aGk=\x07me", "copy me"),
        ("title \x1b]0;owned\x1b\\done", "title done"),
        ("clear \x9b2J\x9dx\x9c", "clear 2Jx"),
        ("bell\x07 back\x08 cr\r nul\x00 del\x7f", "bell back cr nul del"),
        ("lines\nand\ttabs stay", "lines\nand\ttabs stay"),
        ("ünïcode 😀 → fine", "ünïcode 😀 → fine"),
        ("reset\x1bc \x1b(Bcharset \x1bPdcs\x1b\\done", "reset charset done"),
        ("cut \x1b[31", "cut 31"),  # an unfinished sequence loses its start; the rest is harmless text
    ],
)
def test_printable_removes_every_control_character_but_newline_and_tab(text, shown):
    assert printable(text) == shown


def call_line(name, arguments):
    """What the terminal prints for a call, given the ``doing`` event the server sends (with its title)."""
    out = io.StringIO()
    out.isatty = lambda: True
    event = {"type": "doing", "id": "1", "name": name, "arguments": arguments, "title": Toolbox().title(name, arguments)}
    Terminal(out=out, err=io.StringIO(), interactive=False).show({"kind": "report", "events": [event]})
    return out.getvalue()


@pytest.mark.parametrize(
    ("name", "arguments", "line"),
    [
        ("read", {"path": "README.md"}, "+ Read README.md"),
        ("write", {"path": "notes.md", "content": "x" * 5000}, "+ Write notes.md"),
        ("edit", {"path": "a.py", "old": "x", "new": "y"}, "+ Edit a.py"),
        ("execute", {"command": "make test\n  && echo ok"}, "+ Run make test && echo ok"),
        ("grep", {"pattern": "TODO", "path": "src"}, '+ Search for "TODO" in src'),
        ("list", {}, "+ List ."),
        ("lookup", {"q": 1}, "+ lookup q=1"),
        ("read", {"path": "\x1b]52;c;aGk=\x07evil\x1b[2J.txt"}, "+ Read evil.txt"),
    ],
)
def test_a_tool_call_is_one_short_line_of_its_title(name, arguments, line):
    assert call_line(name, arguments) == line


def test_a_long_argument_is_cut_to_one_line():
    line = call_line("execute", {"command": "echo " + "word " * 100})
    assert len(line) == 100 and line.endswith("…") and "\n" not in line


@pytest.mark.parametrize(
    ("name", "result", "summary"),
    [
        ("read", {"content": "1\ta\n2\tb\n3\tc", "path": "x", "total_lines": 3, "lines": [1, 3]}, "3 lines"),
        ("read", {"content": "1\tone", "path": "x", "total_lines": 1, "lines": [1, 1]}, "1 line"),
        ("read", {"content": "[the file is empty]", "path": "x", "total_lines": 0}, "0 lines"),
        ("read", {"content": "...", "path": "x", "total_lines": 686, "lines": [1, 320], "next_offset": 321}, "lines 1-320 of 686"),
        ("write", {"path": "x", "bytes": 12}, "wrote 12 bytes"),
        ("edit", {"path": "x", "replacements": 1}, "edited"),
        ("edit", {"path": "x", "replacements": 3}, "edited 3 places"),
        ("execute", {"exit_code": 2, "output": "oops\n", "truncated": False}, "exit 2, 1 line of output"),
        ("bash", {"exit_code": 0, "output": "a\nb", "truncated": True}, "exit 0, 2 lines of output (cut short)"),
        ("list", {"files": ["a", "b"], "truncated": False}, "2 files"),
        ("grep", {"matches": [{}], "truncated": False}, "1 match"),
        ("grep", {"matches": [], "truncated": False}, "0 matches"),
        ("plugin-tool", {"anything": 1}, "done"),
    ],
)
def test_a_tool_result_is_summed_up_in_a_few_words(name, result, summary):
    assert Toolbox().summary(name, {**result, "ok": True}) == summary


def ask(cwd, *args):
    return subprocess.run(
        [sys.executable, "-m", "elelem_lsp", "ask", "--trust", *args],
        cwd=cwd, capture_output=True, timeout=60, stdin=subprocess.DEVNULL,
    )


def hostile_script(project):
    add_plugin(project, "scripted")
    (project / "notes.txt").write_text("one\ntwo\n")
    write_script(project, [
        [{"type": "thinking", "text": f"thinking {HOSTILE}"},
         {"type": "saying", "text": f"saying {HOSTILE}"},
         {"type": "doing", "id": "r", "name": "read", "arguments": {"path": f"notes.txt{HOSTILE}"}},
         {"type": "doing", "id": "s", "name": "read", "arguments": {"path": "notes.txt"}}],
        [{"type": "saying", "text": f"reply {HOSTILE} end"}],
    ])


def control_bytes(data: bytes, allowed: tuple[bytes, ...] = ()) -> list[str]:
    """Every control character in ``data`` (decoded), apart from newline, tab and ``allowed`` sequences."""
    text = data.decode("utf-8")
    for sequence in allowed:
        text = text.replace(sequence.decode(), "")
    return [hex(ord(c)) for c in text if (ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F]


def test_model_text_reaches_stdout_and_stderr_without_control_characters(project):
    hostile_script(project)
    run = ask(project, "-p", "scripted", "go")
    assert run.returncode == 0, run.stderr
    assert control_bytes(run.stdout) == [] and control_bytes(run.stderr) == []
    assert run.stdout.decode() == "reply red2J end\n"
    stderr = run.stderr.decode()
    assert "thinking red2J" in stderr and "saying red2J" in stderr
    assert "+ Read notes.txtred2J\n" in stderr  # the second call came before the first result
    assert "  Read notes.txtred2J → failed: " in stderr
    assert "  Read notes.txt → 2 lines\n" in stderr
    # the clipboard payload went with its sequence, except where an error quotes the bad path
    # escaped, as inert text
    assert "ZWNobyBwd25lZA" not in stderr.replace("\\x1b]52;c;ZWNobyBwd25lZA==", "")


def test_an_error_message_with_control_characters_goes_to_stderr_clean(project):
    add_plugin(project, "scripted")
    write_script(project, [[{"type": "raise", "message": f"bad {HOSTILE} thing"}]])
    run = ask(project, "-p", "scripted", "go")
    assert run.returncode == 1
    assert run.stdout == b""
    assert run.stderr.decode().endswith("Error: bad red2J thing\n")
    assert control_bytes(run.stderr) == []


def test_on_a_terminal_only_our_own_dimming_is_sent(project):
    hostile_script(project)
    child = pexpect.spawn(
        sys.executable, ["-m", "elelem_lsp", "ask", "--trust", "-p", "scripted", "go"], cwd=str(project),
        env={**os.environ, "TERM": "xterm-256color"}, timeout=30,
    )
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    output = child.before.replace(b"\r\n", b"\n")  # the pty's own line discipline adds the CR
    ours = (b"\x1b[2m", b"\x1b[0m", b"\r\x1b[K")  # dimming, and the start-up spinner clearing its line
    assert control_bytes(output, allowed=ours) == []
    assert b"reply red2J end" in output
    assert re.search(rb"\+ Read notes\.txt\x1b\[2m \xe2\x86\x92 2 lines", output) is None  # success is not dimmed
    assert b"+ Read notes.txt \xe2\x86\x92 2 lines\n" in output or b"  Read notes.txt \xe2\x86\x92 2 lines\n" in output


def streamed_and_printed(pieces: list[str]) -> tuple[str, str]:
    """What a non-terminal run shows while ``pieces`` stream (stderr) and the reply it prints (stdout)."""
    out, err = io.StringIO(), io.StringIO()
    terminal = Terminal(out=out, err=err, interactive=False)
    terminal.show({"kind": "begin"})
    for piece in pieces:
        terminal.show({"kind": "report", "events": [{"type": "saying", "text": piece}]})
    terminal.finish("".join(pieces))
    return err.getvalue(), out.getvalue()


def test_an_escape_sequence_split_across_streamed_pieces_is_cleaned_whole():
    streamed, printed = streamed_and_printed(["red\x1b[3", "1mX and \x1b]52;c;ZWNo", "bw==\x07 end"])
    assert streamed == printed == "redX and  end\n"


def test_streamed_text_always_shows_the_printed_reply_however_it_is_cut():
    """A small model's random bytes, cut anywhere: what streamed contains what is printed at the end."""
    rng = random.Random(7)
    alphabet = ["\x1b", "[", "]", "P", "X", "^", "_", "3", "m", "\x07", "\\", "{", "(", " ", "a", "\x9b"]
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 30)))
        cuts = sorted(set(rng.randint(1, len(text)) for _ in range(rng.randint(0, 6))) | {len(text)})
        pieces = [text[start:end] for start, end in zip([0, *cuts], cuts) if end > start]
        streamed, printed = streamed_and_printed(pieces)
        assert printed.rstrip("\n") in streamed, pieces


@pytest.mark.parametrize("event, line", [
    (context_event(31000, 32000, 3, 0), "3 earlier turns left out to fit 32,000 tokens"),
    (context_event(7000, 8000, 1, 2), "1 earlier turn left out and 2 tool results shortened to fit 8,000 tokens"),
    (context_event(7000, 8000, 0, 1), "1 tool result shortened to fit 8,000 tokens"),
    ({"type": "compacted", **compaction(12, 30000, 4000)}, "12 turns compacted into a summary (30,000 → 4,000 tokens)"),
])
def test_a_budget_event_is_one_dim_line(event, line):
    out = io.StringIO()
    out.isatty = lambda: True  # a person watches: dim is shown
    terminal = Terminal(out=out, err=io.StringIO(), interactive=False)
    terminal.show({"kind": "report", "events": [{"type": "saying", "text": "partial"}, event,
                                                {"type": "mystery", "x": 1}]})
    assert out.getvalue() == f"partial\n{DIM}{line}\n{RESET}"


def test_each_plan_event_is_shown_as_the_whole_checklist():
    out = io.StringIO()
    terminal = Terminal(out=io.StringIO(), err=out, interactive=False)
    entries = [{"content": "Read the parser", "status": "completed"},
               {"content": "Fix\x1b[31m the bug", "status": "in_progress", "priority": "high"},
               {"content": "Run the tests", "status": "pending"}]
    terminal.show({"kind": "report", "events": [{"type": "saying", "text": "On it"}, {"type": "plan", "entries": entries}]})
    assert out.getvalue() == "On it\nPlan:\n  [x] Read the parser\n  [~] Fix the bug\n  [ ] Run the tests\n"
    out.truncate(0), out.seek(0)
    terminal.show({"kind": "report", "events": [{"type": "plan", "entries": [{**e, "status": "completed"} for e in entries]}]})
    assert out.getvalue() == "Plan:\n  [x] Read the parser\n  [x] Fix the bug\n  [x] Run the tests\n"


def test_the_hosts_usage_is_a_dim_row_and_a_providers_usage_is_not_shown():
    out = io.StringIO()
    out.isatty = lambda: True
    terminal = Terminal(out=out, err=io.StringIO(), interactive=False)
    host_usage = {"type": "usage", "inputTokens": 1234, "outputTokens": 567, "conversationInputTokens": 1234,
                  "conversationOutputTokens": 567, "contextTokens": 1800, "text": "1,234 in · 567 out · $0.01"}
    terminal.show({"kind": "report", "events": [{"type": "saying", "text": "done"},
                                                {"type": "usage", "inputTokens": 10, "outputTokens": 2}, host_usage]})
    assert out.getvalue() == f"done\n{DIM}1,234 in · 567 out · $0.01\n{RESET}"


def test_a_turn_no_provider_counted_shows_no_usage_row():
    out = io.StringIO()
    out.isatty = lambda: True
    terminal = Terminal(out=out, err=io.StringIO(), interactive=False)
    nothing = {"type": "usage", "inputTokens": 0, "outputTokens": 0, "conversationInputTokens": 0,
               "conversationOutputTokens": 0, "contextTokens": 40, "text": "0 in · 0 out"}
    terminal.show({"kind": "report", "events": [{"type": "saying", "text": "done."}, nothing]})
    assert out.getvalue() == "done."  # the newline comes with the end of the turn, not with a row


def test_a_turns_footer_is_the_servers_words_dimmed_and_an_unanswered_cancel_says_cancelled():
    out, err = io.StringIO(), io.StringIO()
    out.isatty = lambda: True
    terminal = Terminal(out=out, err=err, interactive=False)
    terminal.footer({"reply": "ok", "provider": "scripted", "steps": 3, "text": "done — scripted · from the server"})
    assert out.getvalue() == f"{DIM}done — scripted · from the server\n{RESET}"  # as said, not worded from steps
    terminal.footer({"reply": "", "cancelled": True, "error": None})  # $/cancelRequest: no answer from the server
    assert err.getvalue() == "elelem: cancelled\n"


def test_usage_prints_the_servers_figures_and_suggestions_only_when_there_were_any():
    context = {
        "usage": {"conversationInputTokens": 1, "conversationText": "12,345 in · 2,345 out · context 3,000 of 32,000 · $0.12"},
        "completion": {"shown": 12, "accepted": 3, "requests": 9, "text": "3 of 12 suggestions accepted · 141 chars"},
        "nextEdit": {"shown": 0, "accepted": 0, "requests": 0, "text": "0 of 0 suggestions accepted · 0 chars"},
    }
    assert usage_lines(context) == [
        "this conversation: 12,345 in · 2,345 out · context 3,000 of 32,000 · $0.12",
        "inline completion: 3 of 12 suggestions accepted · 141 chars",
    ]
    context["nextEdit"] = {"shown": 2, "accepted": 1, "requests": 2, "text": "1 of 2 suggestions accepted · 40 chars"}
    assert usage_lines(context)[2:] == ["next edit: 1 of 2 suggestions accepted · 40 chars"]


async def test_a_question_takes_a_number_or_a_title_and_asks_again_until_it_gets_one():
    typed = iter(["9", "maybe", " allow FOR this session ", "1"])
    prompts: list[str] = []

    async def person(prompt: str) -> str | None:
        prompts.append(prompt)
        return next(typed)

    out = io.StringIO()
    terminal = Terminal(out=out, err=io.StringIO(), interactive=True, reader=person)
    titles = ["Allow once", "Allow for this session", "Deny"]
    assert await terminal.choose("elelem wants to change .vscode/settings.json", titles) == "Allow for this session"
    assert len(prompts) == 3 and prompts[0].endswith("[1] Allow once  [2] Allow for this session  [3] Deny? ")
    assert await terminal.choose("elelem wants to run: rm -rf build (in the sandbox)", titles) == "Allow once"


async def test_nobody_at_the_terminal_answers_no_question_and_yes_answers_only_for_commands():
    async def nobody(prompt: str) -> str | None:
        return None

    asked = Terminal(out=io.StringIO(), err=io.StringIO(), interactive=True, reader=nobody, assume_yes=True)
    assert await asked.choose("elelem wants to run: make (in the sandbox)", ["Allow once", "Deny"]) == "Allow once"
    assert await asked.choose("elelem wants to change .vscode/settings.json", ["Allow once", "Deny"]) is None
    assert await Terminal(out=io.StringIO(), err=io.StringIO(), interactive=False).choose("q", ["Allow once"]) is None
