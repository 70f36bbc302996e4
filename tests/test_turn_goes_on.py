"""No exception from a tool, or from the steps around one, ends a turn: it is logged with its
traceback (never printed), the model reads a result in plain words, and the steps before it
stay in the turn. In-process, through the session and a scripted provider."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from scaffold import add_plugin, write_script
from security.attacks_cmds import without_root_powers
from test_session import Script

from elelem_lsp.agent.check import CheckSettings
from elelem_lsp.agent.insight import DIAGNOSTICS, Diagnostics, Insight, NoInsight
from elelem_lsp.agent.messages import ToolDefinition
from elelem_lsp.agent.session import Session
from elelem_lsp.agent.toolbox import Toolbox, ToolSource
from elelem_lsp.agent.tools import BUILTIN_TOOLS, Tool
from elelem_lsp.agent.tools.read import ReadArguments
from elelem_lsp.agent.workspace import Workspace

FIRST_STEP = [
    {"type": "saying", "text": "Looking at the readme first."},
    {"type": "doing", "id": "call_1", "name": "read", "arguments": {"path": "README.md"}},
]
LAST_STEP = [{"type": "saying", "text": "Done despite that."}]


def scripted(*calls: dict[str, Any]) -> Script:
    """A model that reads README.md, then makes ``calls`` in one step, then answers."""
    return Script(FIRST_STEP, [{"type": "doing", "id": f"call_{n}", **call} for n, call in enumerate(calls, 2)], LAST_STEP)


def tool_results(provider: Script) -> dict[str, dict[str, Any]]:
    """The results the model read in its last fetch, by call id."""
    return {m["tool_call_id"]: json.loads(m["content"]) for m in provider.seen[-1] if m["role"] == "tool"}


def assert_turn_went_on(result: Any, provider: Script, events: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The turn ended normally after its three fetches, the first step's result kept; the results read last."""
    assert (result.stop_reason, result.reply, result.steps) == ("end", "Done despite that.", 3)
    results = tool_results(provider)
    assert results["call_1"]["ok"] is True and results["call_1"]["content"] == "1\t# readme"
    assert [e["id"] for e in events if e["type"] == "result"][0] == "call_1"
    return results


def logged_with_traceback(caplog: pytest.LogCaptureFixture, words: str) -> bool:
    return any(words in record.getMessage() and record.exc_info for record in caplog.records)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "README.md").write_text("# readme\n")
    (tmp_path / "src").mkdir()
    return tmp_path


async def test_reading_a_folder_is_answered_and_the_turn_goes_on(root, capsys):
    provider = scripted({"name": "read", "arguments": {"path": "src"}})
    events: list[dict[str, Any]] = []
    result = await Session(provider, Workspace(root)).turn("what is in src?", events.append)
    results = assert_turn_went_on(result, provider, events)
    assert results["call_2"] == {"ok": False, "error": "src is a directory: use list to see the files in it"}
    assert capsys.readouterr().out == ""


async def broken_read(args: ReadArguments, workspace: Workspace) -> dict[str, Any]:
    raise RuntimeError("the tool broke")


async def test_a_tool_that_raises_gives_its_result_and_logs_the_traceback(root, caplog, capsys):
    tools = [*BUILTIN_TOOLS, Tool("broken", "A tool with a bug", ReadArguments, broken_read, changes_files=False)]
    provider = scripted({"name": "broken", "arguments": {"path": "x"}})
    with caplog.at_level(logging.ERROR):
        result = await Session(provider, Workspace(root), toolbox=Toolbox(tools)).turn("go", (events := []).append)
    results = assert_turn_went_on(result, provider, events)
    assert results["call_2"]["ok"] is False and results["call_2"]["error"].startswith("RuntimeError: the tool broke")
    assert logged_with_traceback(caplog, "tool broken failed")
    assert capsys.readouterr().out == ""


class FailingSteps(Workspace):
    """A workspace whose steps around a tool fail: the checkpoint, the notice that a tool starts, the editor's problems."""

    def __init__(self, root: Path, *, checkpoint: bool = False, starting: bool = False, editor: bool = False) -> None:
        super().__init__(root)
        self.fail_checkpoint, self.fail_starting, self.fail_editor = checkpoint, starting, editor

    async def before_changes(self) -> None:
        if self.fail_checkpoint:
            raise RuntimeError("the checkpoint store broke")

    def tool_starting(self, call_id: str, name: str) -> None:
        if self.fail_starting:
            raise RuntimeError("the face could not show it")

    @property
    def insight(self) -> Insight:
        return BrokenEditor() if self.fail_editor else super().insight


class BrokenEditor(NoInsight):
    """An editor that offers diagnostics and fails with a bug of its own (not InsightUnavailable)."""

    @property
    def offers(self) -> frozenset[str]:
        return frozenset({DIAGNOSTICS})

    async def diagnostics(self, paths: list[Path] | None, *, wait_ms: int = 0, since: int | None = None) -> Diagnostics:
        raise KeyError("the editor's bug")


@pytest.mark.parametrize(
    ("failing", "logged"),
    [
        ({"checkpoint": True}, "no checkpoint before this change"),
        ({"starting": True}, "could not tell the face that write starts"),
        ({"editor": True}, "could not take the problems before the step"),
    ],
)
async def test_a_step_around_a_write_that_fails_is_logged_and_the_write_goes_on(root, caplog, failing, logged):
    provider = scripted({"name": "write", "arguments": {"path": "notes.txt", "content": "kept\n"}})
    with caplog.at_level(logging.WARNING):
        result = await Session(provider, FailingSteps(root, **failing)).turn("note it", (events := []).append)
    results = assert_turn_went_on(result, provider, events)
    assert results["call_2"] == {"ok": True, "path": "notes.txt", "bytes": 5}
    assert (root / "notes.txt").read_text() == "kept\n"
    assert logged_with_traceback(caplog, logged)


async def test_a_check_command_that_cannot_run_leaves_the_step_unchecked(root, caplog):
    class NoShell(Workspace):
        async def run(self, command: str, *, timeout: float, output_cap: int) -> Any:
            raise RuntimeError("no shell to run it")

        async def allow_command(self, command: str) -> tuple[bool, str]:
            return True, ""

    provider = scripted({"name": "write", "arguments": {"path": "notes.txt", "content": "kept\n"}})
    session = Session(provider, NoShell(root))
    session.check = CheckSettings(command="ruff check {files}")
    with caplog.at_level(logging.WARNING):
        result = await session.turn("note it", (events := []).append)
    results = assert_turn_went_on(result, provider, events)
    assert results["call_2"] == {"ok": True, "path": "notes.txt", "bytes": 5}  # no ``checked``: it could not run
    assert logged_with_traceback(caplog, "could not check the step's changes")


class OddSource(ToolSource):
    """Outside tools with bugs: a result that is not JSON, one that is no result, a summary that fails,
    and a name it cannot say whether it serves."""

    changes_files = False

    async def definitions(self) -> list[ToolDefinition]:
        names = ("odd__path", "odd__nothing", "odd__summary")
        return [{"type": "function", "function": {"name": n, "description": n, "parameters": {"type": "object"}}} for n in names]

    def serves(self, name: str) -> bool:
        if name == "odd__unsure":
            raise LookupError("cannot tell")
        return name.startswith("odd__")

    async def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return {"odd__path": {"ok": True, "where": Path("/")}, "odd__nothing": None, "odd__summary": {"ok": True}}[name]  # type: ignore[return-value]

    def summary(self, name: str, result: dict[str, Any]) -> str:
        raise ValueError("no summary")


async def test_odd_results_of_outside_tools_are_told_to_the_model(root, caplog):
    calls = [{"name": name, "arguments": {}} for name in ("odd__path", "odd__nothing", "odd__summary", "odd__unsure")]
    provider = scripted(*calls)
    with caplog.at_level(logging.ERROR):
        result = await Session(provider, Workspace(root), toolbox=Toolbox().with_sources(OddSource())).turn(
            "go", (events := []).append
        )
    results = assert_turn_went_on(result, provider, events)
    assert results["call_2"]["ok"] is False and "could not be read" in results["call_2"]["error"]
    assert results["call_3"] == {"ok": False, "error": "odd__nothing gave no result the agent could read"}
    assert results["call_4"] == {"ok": True}
    assert results["call_5"]["ok"] is False and results["call_5"]["error"].startswith("LookupError: cannot tell")
    shown = {e["id"]: e for e in events if e["type"] == "result"}
    assert shown["call_4"]["summary"] == "done" and shown["call_5"]["title"].startswith("odd__unsure")
    assert logged_with_traceback(caplog, "could not sum up the result of odd__summary")


async def test_a_source_that_cannot_say_its_tools_leaves_the_others_offered(root, caplog):
    class Silent(OddSource):
        async def definitions(self) -> list[ToolDefinition]:
            raise ConnectionError("its server is gone")

    provider = scripted({"name": "list", "arguments": {}})
    with caplog.at_level(logging.ERROR):
        result = await Session(provider, Workspace(root), toolbox=Toolbox().with_sources(Silent())).turn(
            "go", (events := []).append
        )
    assert tool_results(provider)["call_2"]["ok"] is True
    assert_turn_went_on(result, provider, events)
    assert logged_with_traceback(caplog, "the tools of Silent could not be had")


def test_an_ask_in_a_folder_whose_git_it_may_not_enter_is_answered(project):
    """The editor's context of an ask (git's branch and changes) is a nicety: a ``.git`` the person may
    not enter leaves it out, and the ask is answered (with file permissions binding, as for a normal user)."""
    add_plugin(project, "scripted")
    write_script(project, [FIRST_STEP, LAST_STEP])
    (project / ".git").mkdir()
    (project / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (project / ".git").chmod(0)
    try:
        run = subprocess.run(
            [*without_root_powers(), sys.executable, "-m", "elelem_lsp", "ask", "--trust", "-p", "scripted", "go"],
            cwd=project,
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        (project / ".git").chmod(0o755)
    assert run.returncode == 0, run.stderr
    assert run.stdout == "Done despite that.\n"
    assert "Read README.md → 1 line" in run.stderr
