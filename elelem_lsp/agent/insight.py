"""The Insight port: what the editor's language servers know about the workspace.

Problems (diagnostics), where a symbol is defined, where it is used, and the symbols of a file
or of the workspace, asked of whatever front end can answer (our editor clients, through
their own language servers). ``offers`` says which of the four it answers; a front end that
answers none (a plain LSP client, ACP, the terminal) is ``NO_INSIGHT``, and the tools that
need an answer are then not offered. Positions here are 0-based lines and code-point columns,
as the model's text has them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path

DIAGNOSTICS, DEFINITION, REFERENCES, SYMBOLS = "diagnostics", "definition", "references", "symbols"
KINDS = (DIAGNOSTICS, DEFINITION, REFERENCES, SYMBOLS)
SEVERITIES = {1: "error", 2: "warning", 3: "info", 4: "hint"}


class InsightUnavailable(Exception):
    """The front end could not answer (it does not offer this, or its editor failed); the message says why."""


@dataclass(frozen=True)
class Problem:
    """One diagnostic of one file."""

    path: Path
    line: int
    column: int
    severity: int  # 1 error, 2 warning, 3 info, 4 hint (LSP's numbers)
    message: str
    source: str | None = None
    code: str | None = None

    @property
    def kind(self) -> tuple[int, str, str | None, str | None]:
        """What a problem is apart from where: lines move when a file is edited, the problem stays."""
        return (self.severity, self.message, self.source, self.code)


@dataclass(frozen=True)
class Diagnostics:
    """The problems the editor knows of, and its count of changes (``generation``) when it said so:
    asking again with ``since`` that count waits for diagnostics newer than these. ``unchecked``:
    the files the editor knows nothing checks (no language server or checker of its own)."""

    problems: list[Problem] = field(default_factory=list)
    generation: int | None = None
    unchecked: frozenset[Path] = frozenset()


@dataclass(frozen=True)
class Location:
    path: Path
    line: int
    column: int


@dataclass(frozen=True)
class Symbol:
    name: str
    kind: str
    location: Location
    container: str | None = None


class Insight(ABC):
    """What the editor's language servers answer, through a front end."""

    @property
    @abstractmethod
    def offers(self) -> frozenset[str]:
        """Which of ``KINDS`` the front end answers (read when needed: a client announces it at start)."""

    @abstractmethod
    async def diagnostics(self, paths: list[Path] | None, *, wait_ms: int = 0, since: int | None = None) -> Diagnostics:
        """The problems of ``paths`` (every file the editor knows of for None). With ``wait_ms``,
        once they have changed since the generation ``since`` and been quiet a moment, waiting
        at most that long."""

    @abstractmethod
    async def definition(self, path: Path, line: int, column: int) -> list[Location]:
        """Where the symbol at that place is defined."""

    @abstractmethod
    async def references(self, path: Path, line: int, column: int, *, include_declaration: bool) -> list[Location]:
        """Where the symbol at that place is used."""

    @abstractmethod
    async def symbols(self, path: Path | None, query: str) -> list[Symbol]:
        """The symbols of a file (``path``), or those of the workspace matching ``query``."""


class NoInsight(Insight):
    """A front end with no editor behind it: it answers nothing."""

    @property
    def offers(self) -> frozenset[str]:
        return frozenset()

    async def diagnostics(self, paths: list[Path] | None, *, wait_ms: int = 0, since: int | None = None) -> Diagnostics:
        raise InsightUnavailable("no editor here reports problems")

    async def definition(self, path: Path, line: int, column: int) -> list[Location]:
        raise InsightUnavailable("no editor here finds definitions")

    async def references(self, path: Path, line: int, column: int, *, include_declaration: bool) -> list[Location]:
        raise InsightUnavailable("no editor here finds references")

    async def symbols(self, path: Path | None, query: str) -> list[Symbol]:
        raise InsightUnavailable("no editor here lists symbols")


NO_INSIGHT = NoInsight()


def place(root: Path, path: Path, line: int, column: int) -> str:
    """``src/app.ts:3:7``: 1-based, the path relative to the workspace root when it is inside."""
    name = path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)
    return f"{name}:{line + 1}:{column + 1}"


def describe_problem(problem: Problem, root: Path) -> str:
    """``app.ts:3:7 error: Type 'string' is not assignable to type 'number'. [ts 2322]``"""
    origin = " ".join(part for part in (problem.source, problem.code) if part)
    message = " ".join(problem.message.split())  # one line each: a message may hold breaks
    where = place(root, problem.path, problem.line, problem.column)
    return f"{where} {SEVERITIES.get(problem.severity, 'error')}: {message}" + (f" [{origin}]" if origin else "")
