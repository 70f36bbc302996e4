"""The check after a step that changed files: what the model reads of its own changes.

Before the step's tool calls run, the editor's problems of the files they name are taken;
after, once the editor's diagnostics of the changed files have settled (at most ``wait_ms``),
the problems that are new (counted by what they say, not where: an edit moves lines) are
added to the last changing call's result as ``checked``, and observers get a ``checked``
event. Where no editor reports problems, ``command`` (the ``checkCommand`` setting, ``{files}``
replaced by the changed files) runs instead, asked about and run as ``execute`` runs a command,
its output bounded. The check never ends a turn: whatever fails in it (the editor, the command,
a path it cannot name) is logged and the step goes on unchecked.
"""

from __future__ import annotations

import logging
import shlex
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from .events import Checked, NewProblem, Severity, checked_event
from .insight import DIAGNOSTICS, SEVERITIES, Diagnostics, Problem, describe_problem
from .messages import ToolCall
from .toolbox import Toolbox
from .workspace import Workspace, WorkspaceError

log = logging.getLogger(__name__)

CHANGING_TOOLS = ("write", "edit")
CHECKED_SEVERITY = 2  # errors and warnings: hints and notes are not what a change broke
PROBLEMS_SHOWN = 50
COMMAND_OUTPUT_CAP = 8 * 1024
COMMAND_TIMEOUT = 120.0


@dataclass(frozen=True)
class CheckSettings:
    after_edits: bool = True
    wait_ms: int = 1500
    command: str | None = None


def counted(problems: list[Problem]) -> str:
    """``2 new errors, 1 new warning`` or ``no new problems``."""
    by_severity = Counter(problem.severity for problem in problems)
    parts = [f"{n} new {SEVERITIES[s]}{'s' if n != 1 else ''}" for s, n in sorted(by_severity.items())]
    return ", ".join(parts) or "no new problems"


def new_problems(before: list[Problem], after: list[Problem]) -> list[Problem]:
    """The problems of ``after`` beyond those ``before`` had of the same file and kind."""
    seen = Counter((p.path, p.kind) for p in before)
    new = []
    for problem in after:
        if seen[(problem.path, problem.kind)]:
            seen[(problem.path, problem.kind)] -= 1
        else:
            new.append(problem)
    return new


class StepCheck:
    """One step's check: ``start`` before its calls run, ``finish`` with their results."""

    def __init__(self, settings: CheckSettings, workspace: Workspace, toolbox: Toolbox) -> None:
        self.settings = settings
        self.workspace = workspace
        self.toolbox = toolbox
        self.before: Diagnostics | None = None

    @classmethod
    async def start(cls, settings: CheckSettings, workspace: Workspace, toolbox: Toolbox, calls: list[ToolCall]) -> StepCheck:
        check = cls(settings, workspace, toolbox)
        try:
            named = [path for call in calls if (path := check._named(call)) is not None]
            if named and settings.after_edits and DIAGNOSTICS in workspace.insight.offers:
                check.before = await workspace.insight.diagnostics(named)
        except Exception:  # the editor's failure, or a path that cannot be named: the step runs unchecked
            log.warning("could not take the problems before the step", exc_info=True)
        return check

    def _named(self, call: ToolCall) -> Path | None:
        tool = self.toolbox.find(call["name"])
        path = call["arguments"].get("path") if tool is not None and tool.name in CHANGING_TOOLS else None
        try:
            return self.workspace.resolve(path) if isinstance(path, str) else None
        except WorkspaceError:
            return None

    async def finish(
        self, calls: list[ToolCall], results: list[dict[str, Any]], observer: Callable[[dict[str, Any]], None]
    ) -> None:
        try:
            event = await self._finish(calls, results)
        except Exception:  # the editor's or the command's failure: the step stays unchecked
            log.warning("could not check the step's changes", exc_info=True)
            return
        if event is not None:
            observer(dict(event))

    async def _finish(self, calls: list[ToolCall], results: list[dict[str, Any]]) -> Checked | None:
        """The ``checked`` event of the step's changes (its text added to the last changing call's
        result), None when nothing was changed or nothing checks them."""
        changed = [(path, result) for call, result in zip(calls, results) if result["ok"] and (path := self._named(call))]
        if not changed or not self.settings.after_edits:
            return None
        paths = list(dict.fromkeys(path for path, _ in changed))
        if self.before is not None:
            outcome = await self._diagnostics(paths)
        elif self.settings.command and DIAGNOSTICS not in self.workspace.insight.offers:
            outcome = await self._command(paths, self.settings.command)
        else:
            return None
        if outcome is None:
            return None
        changed[-1][1]["checked"], event = outcome
        return event

    def _names(self, paths: list[Path]) -> list[str]:
        return [self.workspace.relative(path) for path in paths]

    async def _diagnostics(self, paths: list[Path]) -> tuple[str, Checked] | None:
        """What is new after the change; None when the editor says nothing checks these files."""
        assert self.before is not None
        after = await self.workspace.insight.diagnostics(paths, wait_ms=self.settings.wait_ms, since=self.before.generation)
        if after.unchecked.issuperset(paths):
            return None
        new = [p for p in new_problems(self.before.problems, after.problems) if p.severity <= CHECKED_SEVERITY]
        new.sort(key=lambda p: (p.severity, str(p.path), p.line, p.column))
        text = f"checked {', '.join(self._names(paths))}: {counted(new)}"
        lines = [describe_problem(problem, self.workspace.root) for problem in new[:PROBLEMS_SHOWN]]
        if len(new) > PROBLEMS_SHOWN:
            lines.append(f"... and {len(new) - PROBLEMS_SHOWN} more")
        event = checked_event(self._names(paths), text, [self._new_problem(p) for p in new[:PROBLEMS_SHOWN]])
        return "\n".join([text, *lines]), event

    def _new_problem(self, problem: Problem) -> NewProblem:
        """A problem as the ``checked`` event carries it: 1-based, its path relative to the folder."""
        severity = cast(Severity, SEVERITIES.get(problem.severity, "error"))
        shown: NewProblem = {
            "path": self.workspace.relative(problem.path),
            "line": problem.line + 1,
            "column": problem.column + 1,
            "severity": severity,
            "message": problem.message,
        }
        if problem.source:
            shown["source"] = problem.source
        return shown

    async def _command(self, paths: list[Path], template: str) -> tuple[str, Checked]:
        files = " ".join(shlex.quote(name) for name in self._names(paths))
        command = template.replace("{files}", files)
        allowed, why = await self.workspace.allow_command(command)
        if not allowed:
            text = f"checked {', '.join(self._names(paths))}: not run ({why})"
            return text, checked_event(self._names(paths), text, command=command)
        result = await self.workspace.run(command, timeout=COMMAND_TIMEOUT, output_cap=COMMAND_OUTPUT_CAP)
        outcome = "timed out" if result.timed_out else f"exit {result.exit_code}"
        text = f"checked {', '.join(self._names(paths))}: {command} ({outcome})"
        output = result.output + ("\n[output cut short]" if result.truncated else "")
        event = checked_event(self._names(paths), text, command=command, exit_code=result.exit_code, output=output)
        return f"{text}\n{output}".rstrip(), event
