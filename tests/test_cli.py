"""`elelem-lsp ask` as a person runs it: a subprocess in a folder, the real server behind it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from elelem_lsp.host.conversations import ConversationStore
from scaffold import add_plugin, write_script
from scaffold import run_ask as ask


def test_parrot_reads_the_readme(project):
    add_plugin(project, "parrot")
    run = ask(project, "-p", "parrot", "what is in the readme?")
    assert run.returncode == 0, run.stderr
    assert run.stdout == "README.md has 1 line; it starts: # hello\n"
    assert 'I should read README.md first.' in run.stderr
    assert "+ Read README.md → 1 line\n" in run.stderr


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


def test_yes_runs_commands_but_does_not_answer_for_a_change_to_the_folders_settings(project):
    add_plugin(project, "scripted")
    (project / ".vscode").mkdir()
    (project / ".vscode" / "settings.json").write_text("{}\n")
    loosen = {"path": ".vscode/settings.json", "content": '{"elelem.execute": "allow"}'}
    write_script(project, [[{"type": "doing", "id": "x", "name": "execute", "arguments": {"command": "touch ran.txt"}},
                            {"type": "doing", "id": "w", "name": "write", "arguments": loosen}]])
    run = ask(project, "-p", "scripted", "--yes", "loosen up")
    assert run.returncode == 0, run.stderr
    assert (project / "ran.txt").exists() and (project / ".vscode" / "settings.json").read_text() == "{}\n"
    assert "changed only with the person's leave" in run.stderr


def test_error_reply_gives_a_non_zero_exit(project):
    run = ask(project, "-p", "nosuch", "hi")
    assert run.returncode == 1
    assert run.stdout == ""
    assert 'Error: unknown provider: "nosuch". Available: stub' in run.stderr


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


def run_cli(cwd, *args, env=None):
    return subprocess.run(
        [sys.executable, "-m", "elelem_lsp", *args],
        cwd=cwd, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
    )


def test_a_bad_argument_is_one_line_and_exit_2(project):
    """The rest of the bad arguments are in tests/test_cli_options.py, in-process."""
    run = run_cli(project, "serve", "--tcp", "nonsense")
    assert run.returncode == 2
    assert run.stdout == ""
    assert run.stderr.count("\n") == 1, run.stderr
    assert run.stderr.startswith("elelem-lsp serve: ")
    assert "expected HOST:PORT such as 127.0.0.1:2087, got 'nonsense'" in run.stderr


def test_serve_on_a_port_in_use_is_one_line(project):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        run = run_cli(project, "serve", "--tcp", f"127.0.0.1:{port}")
    assert run.returncode == 1
    assert run.stderr.startswith(f"elelem-lsp serve: cannot listen on 127.0.0.1:{port}: ") and run.stderr.count("\n") == 1


def test_providers_explains_its_mark(project):
    add_plugin(project, "echo")
    run = run_cli(project, "providers", "--trust")
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0] == "* stub" and "  echo" in lines and "  openai" in lines
    assert lines[-1].startswith("* = what ask and chat use here without -p (picked from the environment: ")
    assert "-p NAME picks another" in lines[-1]
    # What a key in the environment picks: tests/host/test_host.py, in-process.


def test_the_stub_demo_reads_as_a_demo_and_names_p(project):
    run = run_cli(project, "ask", "--trust", "hi")
    assert run.returncode == 0, run.stderr
    assert "invalid arguments" not in run.stderr and "!" not in run.stderr
    assert "+ List . → 1 file\n" in run.stderr
    assert "using provider 'stub' (a demo that needs no model)" in run.stderr
    assert "choose one with -p NAME" in run.stderr and "elelem.provider" not in run.stderr


def user_settings(home, settings):
    path = home / ".config" / "elelem-lsp" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(settings if isinstance(settings, str) else json.dumps(settings))
    return path


def test_the_user_settings_file_reaches_the_server(project, home):
    add_plugin(project, "echo")
    add_plugin(project, "scripted")
    user_settings(home, {"provider": "echo", "model": "bird", "maxSteps": 1})
    assert run_cli(project, "ask", "--trust", "hello").stdout == "bird: hello\n"  # the flags over it: test_cli_options.py
    write_script(project, [[{"type": "doing", "id": "a", "name": "list", "arguments": {}}]] * 3)
    limited = run_cli(project, "ask", "--trust", "-p", "scripted", "loop")
    assert limited.returncode == 1 and "stopped after 1 steps" in limited.stderr
    listing = run_cli(project, "providers", "--trust")
    assert "* echo" in listing.stdout.splitlines() and "settings file" in listing.stdout


def test_a_broken_user_settings_file_is_one_line_and_nothing_runs(project, home):
    """The other commands and contents: tests/test_cli_options.py, in-process."""
    path = user_settings(home, "{not json")
    run = run_cli(project, "ask", "hi")
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.startswith(f"elelem: {path}: not valid JSON (line 1") and run.stderr.count("\n") == 1


def test_an_invalid_value_in_the_user_settings_file_is_named(project, home):
    user_settings(home, {"maxSteps": "many"})
    run = run_cli(project, "ask", "--trust", "hi")
    assert run.returncode == 0
    assert "invalid value for elelem.maxSteps: 'many'; using 50" in run.stderr


def test_p_names_the_plugin_that_failed_to_load(project):
    plugins = project / ".agents" / "plugins"
    plugins.mkdir(parents=True)
    (plugins / "broken.py").write_text("import elelem_lsp\ndef setup(:\n")
    run = ask(project, "-p", "mine", "hi")
    assert run.returncode == 1 and run.stdout == ""
    assert 'Error: unknown provider: "mine" (a plugin failed to load: .agents/plugins/broken.py line 2: SyntaxError: ' in run.stderr
    listing = run_cli(project, "providers", "--trust")
    assert "elelem: a plugin failed to load: .agents/plugins/broken.py line 2: SyntaxError: " in listing.stderr


def sent_contents(project) -> list[str]:
    """What the scripted provider's last recorded fetch was sent, past the system prompt."""
    last = (project / ".agents/fetches.jsonl").read_text().splitlines()[-1]
    return [m["content"] for m in json.loads(last)["messages"][1:]]


def test_ask_starts_a_new_conversation_unless_told_to_continue_or_to_resume_one(project):
    add_plugin(project, "scripted")
    write_script(project, [[{"type": "record"}, {"type": "saying", "text": "noted"}]])
    assert ask(project, "-p", "scripted", "remember 42").returncode == 0
    [first] = [c["id"] for c in ConversationStore(project.resolve()).list()]
    write_script(project, [[{"type": "record"}, {"type": "saying", "text": "fresh"}]])
    assert ask(project, "-p", "scripted", "what number?").stdout == "fresh\n"
    assert sent_contents(project) == ["what number?"]  # a new conversation: nothing before it
    write_script(project, [[{"type": "record"}, {"type": "saying", "text": "42"}]])
    run = ask(project, "-p", "scripted", "--continue", "what number now?")
    assert run.returncode == 0, run.stderr
    assert sent_contents(project) == ["what number?", "fresh", "what number now?"]

    write_script(project, [[{"type": "record"}, {"type": "saying", "text": "back"}]])
    run = ask(project, "-p", "scripted", "--resume", first, "are we back?")  # not the current one
    assert run.returncode == 0, run.stderr
    assert sent_contents(project) == ["remember 42", "noted", "are we back?"]
    # An id that is no safe file name is refused alike (tests/host/test_conversations.py), and
    # --resume with --continue by argparse (tests/test_cli_options.py).
    run = ask(project, "-p", "scripted", "--resume", "20990101T000000-00000000", "hello")
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.strip().splitlines()[-1].startswith("Error: ")
    assert "id: no conversation '20990101T000000-00000000'" in run.stderr


def test_ask_says_on_stderr_when_earlier_turns_were_left_out(project, home):
    add_plugin(project, "scripted")
    settings = home / ".config" / "elelem-lsp" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"contextTokens": 2000}))
    ask(project, "-p", "scripted", "first " + "x" * 4000)  # 1,300 tokens; with the tools, over 2,000
    run = ask(project, "-p", "scripted", "-c", "second")
    assert run.returncode == 0, run.stderr
    assert "1 earlier turn left out to fit 2,000 tokens\n" in run.stderr and run.stdout == "done.\n"
