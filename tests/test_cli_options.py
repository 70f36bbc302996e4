"""What `elelem-lsp`'s command line decides before any server starts, run in-process: a bad
argument, a broken user settings file, the flags over the file's settings. tests/test_cli.py runs
the command as a person does (a subprocess and the real server) for each of these once."""

from __future__ import annotations

import io
import json

import pytest

from elelem_lsp.cli import build_parser, server_options
from elelem_lsp.client.trust_prompt import TrustDecision
from elelem_lsp.host.trust import PluginSet


@pytest.fixture
def in_project(project, monkeypatch):
    monkeypatch.chdir(project)
    monkeypatch.setattr("sys.stdin", io.StringIO(""))  # ask reads what is piped to it
    return project


def run(*argv: str) -> int:
    """The command as `elelem-lsp ARGV` runs it; argparse's errors end in SystemExit."""
    args = build_parser().parse_args(argv)
    return args.run(args)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["serve", "--tcp", "localhost:99999"], "got 'localhost:99999'"),
        (["serve", "--log-level", "bogus"], "'bogus' is not one of DEBUG, INFO, WARNING, ERROR, CRITICAL"),
        (["ask", "-C", "missing", "hi"], "missing: no such folder"),
        (["ask", "-C", "README.md", "hi"], "README.md is a file, not a folder"),
        (["chat", "-C", "missing"], "missing: no such folder"),
        (["providers", "-C", "README.md"], "README.md is a file, not a folder"),
        (["ask"], "the following arguments are required: prompt"),
        (["ask", "--resume", "X", "--continue", "x"], "argument -c/--continue: not allowed with argument -r/--resume"),
    ],
)
def test_a_bad_argument_is_one_line_and_exit_2(in_project, capsys, args, said):
    with pytest.raises(SystemExit) as exit:
        run(*args)
    assert exit.value.code == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and said in err, err
    assert err.startswith(f"elelem-lsp {args[0]}: ")


def test_c_is_short_for_continue(in_project):
    assert build_parser().parse_args(["ask", "-c", "x"]).keep is True
    assert build_parser().parse_args(["ask", "x"]).keep is False


def user_settings(home, settings):
    path = home / ".config" / "elelem-lsp" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(settings if isinstance(settings, str) else json.dumps(settings))
    return path


@pytest.mark.parametrize(
    ("content", "said"),
    [("{not json", "not valid JSON (line 1"), ("[1, 2]", "expected a JSON object of settings, got list")],
)
def test_a_broken_user_settings_file_is_one_line_and_nothing_runs(in_project, home, capsys, content, said):
    path = user_settings(home, content)
    for args in (["ask", "hi"], ["providers"], ["chat"]):
        assert run(*args) == 2
        out, err = capsys.readouterr()
        assert out == ""
        assert err == f"elelem: {path}: {said}" + err.split(said, 1)[1] and err.count("\n") == 1


def test_the_flags_win_over_the_user_settings_file(in_project, home):
    user_settings(home, {"provider": "echo", "model": "bird", "maxSteps": 1})
    trusted = TrustDecision(PluginSet.scan(in_project), load=True)
    assert server_options(build_parser().parse_args(["ask", "hello"]), trusted) == {
        "provider": "echo", "model": "bird", "maxSteps": 1, "workspacePlugins": True}
    flagged = build_parser().parse_args(["ask", "-p", "scripted", "--model", "cat", "--yes", "hello"])
    assert server_options(flagged, TrustDecision(PluginSet.scan(in_project), load=False)) == {
        "provider": "scripted", "model": "cat", "maxSteps": 1, "execute": "allow", "workspacePlugins": False}
