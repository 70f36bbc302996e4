"""Toolbox: the tools a session offers, their definitions, and running one call.

Beside the built-in tools a toolbox may offer a ``ToolSource``'s (a folder's MCP servers, say):
the agent knows them only through that small interface. Every outcome is a dict with ``ok``;
a bad argument, an unknown tool or an exception becomes ``ok: false`` with an error the model
can read, never a crash: whatever a tool, a source or the steps around them (the checkpoint
before a change, the title and summary a person reads) raise is logged with its traceback and
the turn goes on.
"""

from __future__ import annotations

import copy
import logging
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from pydantic import ValidationError

from .events import result_event
from .messages import ToolDefinition
from .messages import encode as encode  # re-exported: callers know results by the toolbox
from .tools import BUILTIN_TOOLS, Tool, ToolFailure, aliases_of
from .wording import call_title
from .workspace import Workspace, WorkspaceError

log = logging.getLogger(__name__)

#: The most of a command's output (its end) a ``result`` event carries.
EVENT_OUTPUT_CHARS = 2000


class ToolSource(ABC):
    """Tools served from outside the agent, offered beside the built-in ones."""

    changes_files = True  # what its tools do to files is not known: a checkpoint is taken before them

    @abstractmethod
    async def definitions(self) -> list[ToolDefinition]:
        """The tools it offers for this turn, readying whatever serves them."""

    async def counted(self) -> list[ToolDefinition]:
        """The tools to count for the next request: those it would offer, short of starting again
        what failed (a count at a turn's end must not restart a server that crashed in it)."""
        return await self.definitions()

    @abstractmethod
    def serves(self, name: str) -> bool:
        """Whether a call of ``name`` is this source's to answer."""

    @abstractmethod
    async def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """The outcome of one call, a dict with ``ok``."""

    def summary(self, name: str, result: dict[str, Any]) -> str:
        return "done"


class Toolbox:
    def __init__(self, tools: Iterable[Tool] = BUILTIN_TOOLS) -> None:
        self.tools = {tool.name: tool for tool in tools}
        self.aliases = aliases_of(self.tools.values())
        self._derived: dict[bool, list[ToolDefinition]] = {}  # each form once derived (compact or not); views share it
        self.sources: tuple[ToolSource, ...] = ()

    def with_sources(self, *sources: ToolSource) -> Toolbox:
        """This toolbox's tools plus the sources' (a view: the built-in definitions are shared)."""
        view = copy.copy(self)
        view.sources = sources
        return view

    async def offered(self, compact: bool = False) -> list[ToolDefinition]:
        """What a turn offers the provider: the built-in definitions (``compact``: a small window's
        form), then each source's."""
        extra = [definition for source in self.sources for definition in await offered_by(source, source.definitions)]
        return [*self.definitions(compact), *extra] if extra else self.definitions(compact)

    async def counted(self, compact: bool = False) -> list[ToolDefinition]:
        """What counting the next request takes: as ``offered``, by each source's ``counted``."""
        extra = [definition for source in self.sources for definition in await offered_by(source, source.counted)]
        return [*self.definitions(compact), *extra] if extra else self.definitions(compact)

    def _source(self, name: str) -> ToolSource | None:
        return next((source for source in self.sources if source.serves(name)), None)

    def definitions(self, compact: bool = False) -> list[ToolDefinition]:
        """The tools' function definitions, derived once: the same list every turn (do not change it).
        ``compact``: the small window's form (``Tool.definition``)."""
        if compact not in self._derived:
            self._derived[compact] = [tool.definition(compact) for tool in self.tools.values()]  # type: ignore[misc]
        return self._derived[compact]

    def is_core(self, name: str) -> bool:
        """Whether the built-in tool ``name`` is one a compact prompt always offers."""
        tool = self.find(name)
        return tool is not None and tool.core

    def find(self, name: str) -> Tool | None:
        return self.tools.get(self.aliases.get(name, name))

    def summary(self, name: str, result: dict[str, Any]) -> str:
        """One short line on a successful call, for a person: ``132 lines``, ``exit 0, 4 lines of output``
        (``done`` when the line cannot be made: a result of an odd shape is no reason to end the turn)."""
        try:
            source = self._source(name)
            if source is not None:
                return source.summary(name, result)
            tool = self.find(name)
            describe_result = SUMMARIES.get(tool.name if tool else name)
            return describe_result(result) if describe_result else "done"
        except Exception:
            log.exception("could not sum up the result of %s", name)
            return "done"

    def title(self, name: str, arguments: dict[str, Any], done: bool = False) -> str:
        """The call as a person reads it (``wording.call_title``), a built-in tool by its own name
        (the bare name when the title cannot be made)."""
        try:
            tool = self.find(name) if self._source(name) is None else None
            return call_title(tool.name if tool else name, arguments, done)
        except Exception:
            log.exception("could not title the call of %s", name)
            return str(name)

    def event(self, call_id: str, name: str, arguments: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
        """The ``result`` event of one call, for a person: its ``title``, ``summary`` or ``error``, and for
        a command the tail of what it printed as ``output`` (capped: progress reports stay small)."""
        title = self.title(name, arguments, done=result["ok"])
        if not result["ok"]:
            return dict(result_event(call_id, name, title, error=result["error"]))
        tool = self.find(name) if self._source(name) is None else None
        output = result.get("output")
        if tool is None or tool.name != "execute" or not isinstance(output, str):
            output = ""
        return dict(
            result_event(
                call_id,
                name,
                title,
                summary=self.summary(name, result),
                output=output[-EVENT_OUTPUT_CHARS:],
                # the host shows the plan tool's and keeps it with the conversation
                plan=result["plan"] if tool is not None and tool.name == "plan" else None,
            )
        )

    async def call(self, name: str, arguments: dict[str, Any], workspace: Workspace) -> dict[str, Any]:
        """The outcome of one call, a dict with ``ok``: never an exception (a bug's traceback is logged)."""
        try:
            result = await self._outcome(name, arguments, workspace)
        except Exception as error:  # a tool's bug, or one in the handling of its failure: the turn goes on
            log.exception("tool %s failed", name)
            return failure(unexpected(name, error))
        if not isinstance(result, dict) or not isinstance(result.get("ok"), bool):  # a source's odd answer
            log.error("tool %s gave no result with ok: %r", name, result)
            return failure(f"{name} gave no result the agent could read")
        return result

    async def _outcome(self, name: str, arguments: dict[str, Any], workspace: Workspace) -> dict[str, Any]:
        source = self._source(name)
        if source is not None:
            if source.changes_files:
                await checkpointed(workspace)
            return await source.call(name, arguments)
        tool = self.find(name)
        if tool is None:
            return failure(f'unknown tool: "{name}". Available: {", ".join(self.tools)}')
        try:
            args = tool.arguments.model_validate(arguments)
        except ValidationError as error:
            return failure(f"invalid arguments for {tool.name}: {describe(error)}")
        if tool.changes_files:
            await checkpointed(workspace)
        try:
            return {**await tool.run(args, workspace), "ok": True}
        except (ToolFailure, WorkspaceError) as error:
            return failure(str(error))
        except OSError as error:  # the OS refused a path or a process: the model can try another
            return failure(workspace.describe(error))


async def offered_by(source: ToolSource, definitions: Callable[[], Awaitable[list[ToolDefinition]]]) -> list[ToolDefinition]:
    """A source's tools; none when it fails to say them (logged): the turn goes on with the others."""
    try:
        return await definitions()
    except Exception:
        log.exception("the tools of %s could not be had", type(source).__name__)
        return []


async def checkpointed(workspace: Workspace) -> None:
    """Wait for the checkpoint before a change; one that fails is logged and the change goes on
    unprotected, as a checkpoint the store refuses does (a change the model asked for is not lost to it)."""
    try:
        await workspace.before_changes()
    except Exception:
        log.exception("no checkpoint before this change")


def unexpected(name: str, error: Exception) -> str:
    """What the model reads of a tool's unexpected exception: what went wrong, and that it may go on."""
    return f"{type(error).__name__}: {error} ({name} failed unexpectedly; the details are in elelem's log: try another way)"


def failure(error: str) -> dict[str, Any]:
    return {"ok": False, "error": error}


def describe(error: ValidationError) -> str:
    """``field: problem`` for each error, the way a person (or a model) reads it."""
    return "; ".join(f"{'.'.join(str(part) for part in item['loc']) or 'arguments'}: {item['msg']}" for item in error.errors())


def count(number: int, one: str, many: str = "") -> str:
    return f"{number} {one}" if number == 1 else f"{number} {many or one + 's'}"


def line_count(text: str) -> int:
    return len(text.splitlines())


def _cut(result: dict[str, Any]) -> str:
    return " (cut short)" if result.get("truncated") else ""


def read_summary(result: dict[str, Any]) -> str:
    """``120 lines``, or ``lines 1-320 of 686`` for part of a file, or ``image/png, 12,345 bytes``."""
    if result.get("image"):
        return f"{result.get('mimeType')}, {count(result.get('bytes', 0), 'byte')}"
    total, shown = result.get("total_lines", 0), result.get("lines")
    if isinstance(shown, list) and shown != [1, total]:
        return f"lines {shown[0]}-{shown[1]} of {total}"
    return count(total, "line")


SUMMARIES: dict[str, Callable[[dict[str, Any]], str]] = {
    "read": read_summary,
    "write": lambda r: f"wrote {count(r.get('bytes', 0), 'byte')}",
    "edit": lambda r: "edited" if r.get("replacements", 1) == 1 else f"edited {count(r['replacements'], 'place')}",
    "execute": lambda r: f"exit {r.get('exit_code')}, {count(line_count(r.get('output', '')), 'line')} of output{_cut(r)}",
    "list": lambda r: count(len(r.get("files", [])), "file") + _cut(r),
    "plan": lambda r: f"{sum(e['status'] == 'completed' for e in r['plan'])} of {count(len(r['plan']), 'step')} done",
    "grep": lambda r: count(len(r.get("matches", [])), "match", "matches") + _cut(r),
}
