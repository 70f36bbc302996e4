"""`elelem-lsp ask` as a person runs it: a subprocess in a folder, the real server behind it."""

from __future__ import annotations

import subprocess
import sys

from scaffold import add_plugin, write_script
from scaffold import run_ask as ask


def test_parrot_reads_the_readme(project):
    add_plugin(project, "parrot")
    run = ask(project, "-p", "parrot", "what is in the readme?")
    assert run.returncode == 0, run.stderr
    assert run.stdout == 'the tool said: {"content":"# hello\\n","path":"README.md","ok":true}\n'
    assert 'I should read README.md first.' in run.stderr
    assert '+ read({"path": "README.md"})' in run.stderr


def test_echo_with_model_and_piped_stdin(project):
    add_plugin(project, "echo")
    run = ask(project, "-p", "echo", "--model", "parrot", "hello", "there", stdin="piped text\n")
    assert run.returncode == 0, run.stderr
    assert run.stdout == "parrot: hello there\n\n```\npiped text\n```\n"


def test_write_from_a_plugin_provider_creates_the_file(project):
    add_plugin(project, "scripted")
    write_script(project, [[{"type": "saying", "text": "writing"},
                            {"type": "doing", "id": "w", "name": "write",
                             "arguments": {"path": "notes/todo.md", "content": "- ünïcode 😀\n"}}],
                           [{"type": "saying", "text": "wrote it"}]])
    run = ask(project, "-p", "scripted", "make a todo")
    assert run.returncode == 0, run.stderr
    assert run.stdout == "wrote it\n"
    assert (project / "notes/todo.md").read_text() == "- ünïcode 😀\n"


def test_edit_from_a_plugin_provider_changes_the_file(project):
    add_plugin(project, "scripted")
    (project / "code.py").write_text("x = 'héllo'\ny = 2\n")
    write_script(project, [[{"type": "doing", "id": "e", "name": "edit",
                             "arguments": {"path": "code.py", "old": "y = 2", "new": "y = 3  # ☃"}}]])
    run = ask(project, "-p", "scripted", "fix y")
    assert run.returncode == 0, run.stderr
    assert (project / "code.py").read_text() == "x = 'héllo'\ny = 3  # ☃\n"


def test_execute_is_refused_without_yes_and_runs_with_it(project):
    add_plugin(project, "scripted")
    call = [{"type": "doing", "id": "x", "name": "execute", "arguments": {"command": "touch ran.txt"}}]
    write_script(project, [call])
    refused = ask(project, "-p", "scripted", "run it")
    assert refused.returncode == 0 and not (project / "ran.txt").exists()
    assert "not allowed" in refused.stderr
    allowed = ask(project, "-p", "scripted", "--yes", "run it")
    assert allowed.returncode == 0, allowed.stderr
    assert (project / "ran.txt").exists()


def test_error_reply_gives_a_non_zero_exit(project):
    run = ask(project, "-p", "nosuch", "hi")
    assert run.returncode == 1
    assert run.stdout.startswith('Error: unknown provider: "nosuch". Available: stub')


def test_without_p_the_environment_picks_and_says_so(project):
    run = ask(project, "hi")
    assert run.returncode == 0, run.stderr
    assert run.stdout == "done.\n"
    assert "using provider 'stub'" in run.stderr


def test_ctrl_c_stops_the_turn_and_the_server(project):
    import signal
    import time

    add_plugin(project, "scripted")
    write_script(project, [[{"type": "saying", "text": "started"}, {"type": "sleep", "seconds": 30}]])
    process = subprocess.Popen(
        [sys.executable, "-m", "elelem_lsp", "ask", "--trust", "-p", "scripted", "slow"],
        cwd=project, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    deadline = time.time() + 20
    line = ""
    while "started" not in line and time.time() < deadline:
        line += process.stderr.read(1)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=15)
    assert process.returncode == 130
    assert "cancelled" in stderr
