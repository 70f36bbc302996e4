"""What the editor's language servers know, through the host with an in-memory front end and a
small fake of the Insight port: the tools offered only where the front end answers them, the
check after a step that changed files (new problems only, its wait bounded by the setting), and
``checkCommand`` where no editor reports problems."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from optional_parts import require_sandbox
from scaffold import add_plugin, write_script

from elelem_lsp.agent.insight import KINDS, Diagnostics, Insight, Location, Problem, Symbol
from elelem_lsp.host import stored
from elelem_lsp.host.host import Host

from .memory_frontend import MemoryFrontend

SCRIPTED = {"workspacePlugins": True, "provider": "scripted"}


@dataclass
class FakeInsight(Insight):
    """An editor whose language server reports an error for each line holding ``BAD`` (its
    message the line), published ``delay`` seconds after it is asked to wait. (How long the server
    lets a real editor take is tested against one that never answers, in test_editor_insight.)"""

    kinds: frozenset[str] = frozenset(KINDS)
    delay: float = 0.05
    waits: list[int] = field(default_factory=list)
    generation: int = 0

    @property
    def offers(self) -> frozenset[str]:
        return self.kinds

    def _problems(self, path: Path) -> list[Problem]:
        lines = path.read_text().split("\n") if path.exists() else []
        return [Problem(path, n, line.index("BAD"), 1, f"bad: {line.strip()}", "fake") for n, line in enumerate(lines) if "BAD" in line]

    async def diagnostics(self, paths, *, wait_ms=0, since=None) -> Diagnostics:
        if wait_ms:
            self.waits.append(wait_ms)
            await asyncio.sleep(self.delay)
            self.generation += 1
        paths = paths if paths is not None else sorted(p for p in self.root.rglob("*.py"))
        unchecked = frozenset(path for path in paths if path.suffix != ".py")  # it checks Python only
        return Diagnostics([problem for path in paths for problem in self._problems(path)], self.generation, unchecked)

    async def definition(self, path, line, column) -> list[Location]:
        self.asked = (path, line, column)
        return [Location(self.root / "lib.py", 0, 4)]

    async def references(self, path, line, column, *, include_declaration) -> list[Location]:
        return [Location(self.root / "lib.py", 0, 4), Location(path, line, column)][: 2 if include_declaration else 1]

    async def symbols(self, path, query) -> list[Symbol]:
        return [Symbol("add", "function", Location(self.root / "lib.py", 0, 4))]


@dataclass
class EditorFrontend(MemoryFrontend):
    fake: Insight | None = None

    @property
    def insight(self) -> Insight:
        return self.fake if self.fake is not None else super().insight


def host_with(project: Path, fake: FakeInsight | None, **settings: Any) -> tuple[Host, EditorFrontend]:
    add_plugin(project, "scripted")
    if fake is not None:
        fake.root = project
    frontend = EditorFrontend(settings_by_folder={project.as_uri(): {**SCRIPTED, **settings}}, fake=fake, editing=False)
    host = Host(frontend)
    host.sync_folders({project.as_uri(): project})
    return host, frontend


def fetches(project: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (project / ".agents/fetches.jsonl").read_text().splitlines()]


def offered(fetch: dict[str, Any]) -> set[str]:
    return {tool["function"]["name"] for tool in fetch["tools"]}


def write(path: str, content: str, call: str = "c1") -> dict[str, Any]:
    return {"type": "doing", "id": call, "name": "write", "arguments": {"path": path, "content": content}}


async def turn(host: Host, project: Path, script: list[list[dict[str, Any]]]) -> dict[str, Any]:
    write_script(project, script)
    return await host.agents[project.as_uri()].turn("go")


async def test_the_editor_tools_are_offered_only_as_far_as_the_front_end_answers(project):
    host, _ = host_with(project, None)
    await turn(host, project, [[{"type": "record"}]])
    assert not offered(fetches(project)[-1]) & {"diagnostics", "definition", "references", "symbols"}

    host, _ = host_with(project, FakeInsight(kinds=frozenset({"diagnostics", "definition"})))
    await turn(host, project, [[{"type": "record"}]])
    assert offered(fetches(project)[-1]) >= {"read", "write", "diagnostics", "definition"}
    assert not offered(fetches(project)[-1]) & {"references", "symbols"}


async def test_the_model_reads_the_problems_its_change_added_and_not_those_already_there(project):
    (project / "app.py").write_text("x = 1  # BAD old\n")
    fake = FakeInsight()
    host, frontend = host_with(project, fake, checkWaitMs=1000)
    content = "x = 1  # BAD old\ny = 2\nz = 3  # BAD new\n"
    await turn(host, project, [[write("app.py", content)], [{"type": "record"}]])
    tool_message = fetches(project)[-1]["messages"][-1]
    result = json.loads(tool_message["content"])
    assert result["checked"] == "checked app.py: 1 new error\napp.py:3:10 error: bad: z = 3 # BAD new [fake]"
    [checked] = [e for e in frontend.progress[-1].events if e["type"] == "checked"]
    assert checked["text"] == "checked app.py: 1 new error" and checked["files"] == ["app.py"]
    assert checked["newProblems"] == [
        {"path": "app.py", "line": 3, "column": 10, "severity": "error", "message": "bad: z = 3  # BAD new", "source": "fake"}
    ]
    assert fake.waits == [1000]


async def test_a_step_that_changed_nothing_is_not_checked_and_a_clean_change_says_so(project):
    fake = FakeInsight()
    host, frontend = host_with(project, fake)
    await turn(host, project, [[{"type": "doing", "id": "r", "name": "read", "arguments": {"path": "README.md"}}], [write("ok.py", "fine = 1\n")], [{"type": "record"}]])
    assert fake.waits == [1500]  # the read step waited for nothing
    [checked] = [e for e in frontend.progress[-1].events if e["type"] == "checked"]
    assert checked["text"] == "checked ok.py: no new problems" and checked["newProblems"] == []


async def test_check_after_edits_off_leaves_the_result_as_it_was(project):
    fake = FakeInsight()
    host, frontend = host_with(project, fake, checkAfterEdits=False)
    await turn(host, project, [[write("a.py", "a = 1  # BAD\n")], [{"type": "record"}]])
    assert "checked" not in json.loads(fetches(project)[-1]["messages"][-1]["content"])
    assert fake.waits == [] and not [e for e in frontend.progress[-1].events if e["type"] == "checked"]


async def test_without_an_editor_the_check_command_runs_on_the_changed_files_as_execute_would(project):
    host, frontend = host_with(project, None, checkCommand="grep -n BAD {files}", execute="allow")
    await turn(host, project, [[write("my file.py", "ok = 1\nb = 2  # BAD\n")], [{"type": "record"}]])
    checked = json.loads(fetches(project)[-1]["messages"][-1]["content"])["checked"]
    assert checked == "checked my file.py: grep -n BAD 'my file.py' (exit 0)\n2:b = 2  # BAD"
    [event] = [e for e in frontend.progress[-1].events if e["type"] == "checked"]
    assert event["exitCode"] == 0 and event["command"] == "grep -n BAD 'my file.py'"


@pytest.mark.parametrize("sandbox", ["off", "required"])
async def test_the_check_command_is_asked_about_like_any_command(project, sandbox):
    if sandbox == "required":
        require_sandbox()
    host, frontend = host_with(project, None, checkCommand="true {files}", sandbox=sandbox)
    frontend.answers = ["Deny"]
    await turn(host, project, [[write("a.py", "a = 1\n")], [{"type": "record"}]])
    where = "no sandbox" if sandbox == "off" else "in the sandbox"
    assert frontend.questions == [f"elelem wants to run: true a.py ({where})"]
    checked = json.loads(fetches(project)[-1]["messages"][-1]["content"])["checked"]
    assert checked == "checked a.py: not run (the person denied it)"


async def test_an_untrusted_folder_ignores_the_check_command(project):
    host, frontend = host_with(project, None, checkCommand="touch pwned", execute="allow", trusted=False)
    await turn(host, project, [[write("a.py", "a = 1\n")], [{"type": "record"}]])
    assert not (project / "pwned").exists()
    assert any("checkCommand" in text for _, text in frontend.messages)


async def test_the_tools_answer_from_the_editor_in_places_the_model_reads(project):
    (project / "lib.py").write_text("def add(a, b):\n    return a + b  # BAD\n")
    (project / "app.py").write_text("from lib import add\n\nprint(add(1, 2))\n")
    fake = FakeInsight()
    host, _ = host_with(project, fake)
    calls = [
        {"type": "doing", "id": "d", "name": "definition", "arguments": {"path": "app.py", "symbol": "add", "line": 3}},
        {"type": "doing", "id": "r", "name": "references", "arguments": {"path": "app.py", "symbol": "add"}},
        {"type": "doing", "id": "p", "name": "diagnostics", "arguments": {"severity": "error"}},
        {"type": "doing", "id": "s", "name": "symbols", "arguments": {"path": "lib.py", "query": "x"}},
    ]
    await turn(host, project, [calls, [{"type": "record"}]])
    results = [json.loads(m["content"]) for m in fetches(project)[-1]["messages"][-4:]]
    assert fake.asked == (project / "app.py", 2, 6)  # the name on line 3, 0-based
    assert results[0]["definitions"] == ["lib.py:1:5  def add(a, b):"]
    assert results[1]["references"] == ["lib.py:1:5  def add(a, b):", "app.py:1:17  from lib import add"]
    assert results[2]["problems"] == ["lib.py:2:21 error: bad: return a + b # BAD [fake]"]
    assert results[3] == {"ok": False, "error": "invalid arguments for symbols: arguments: Value error, give either path (a file's symbols) or query (the workspace's)"}


async def test_a_file_the_editor_says_nothing_checks_gets_no_check(project):
    fake = FakeInsight()
    host, frontend = host_with(project, fake)
    await turn(host, project, [[write("notes.txt", "BAD but nobody checks text\n")], [{"type": "record"}]])
    assert "checked" not in json.loads(fetches(project)[-1]["messages"][-1]["content"])
    assert not [e for e in frontend.progress[-1].events if e["type"] == "checked"]


def test_the_tools_listing_names_the_editor_tools_the_front_end_answers(project):
    host, _ = host_with(project, FakeInsight(kinds=frozenset({"diagnostics"})))
    names = [tool["name"] for tool in host.tools()["tools"]]
    assert "diagnostics" in names and "definition" not in names
    host, _ = host_with(project, None)
    assert not {"diagnostics", "definition"} & {tool["name"] for tool in host.tools()["tools"]}


async def test_the_check_is_kept_with_the_step_in_the_stored_conversation(project):
    """A redrawn transcript shows the ``checked`` row: the event as it was sent, on the step's last call."""
    fake = FakeInsight()
    host, frontend = host_with(project, fake)
    step = [write("app.py", "x = 1  # BAD\n", "w1"), {"type": "doing", "id": "r", "name": "read", "arguments": {"path": "app.py"}}]
    await turn(host, project, [step, [{"type": "doing", "id": "r2", "name": "read", "arguments": {"path": "app.py"}}], [{"type": "record"}]])
    [live] = [e for e in frontend.progress[-1].events if e["type"] == "checked"]
    assert live["text"] == "checked app.py: 1 new error"

    restarted, _ = host_with(project, FakeInsight())
    [entry] = (await stored.transcript(restarted.agents[project.as_uri()]))["entries"]
    assert [(tool["id"], tool.get("checked")) for tool in entry["tools"]] == [("w1", None), ("r", live), ("r2", None)]
