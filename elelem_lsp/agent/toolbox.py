"""Toolbox: the tools a session offers, their definitions, and running one call.

Every outcome is a dict with ``ok``; a bad argument, an unknown tool or an
exception becomes ``ok: false`` with an error the model can read, never a crash.
"""

from __future__ import annotations

import json
import logging
from typing import Any, Callable, Iterable

from pydantic import ValidationError

from .messages import ToolDefinition
from .tools import BUILTIN_TOOLS, Tool, ToolFailure
from .workspace import Workspace, WorkspaceError

log = logging.getLogger(__name__)


class Toolbox:
    def __init__(self, tools: Iterable[Tool] = BUILTIN_TOOLS) -> None:
        self.tools = {tool.name: tool for tool in tools}
        self.aliases = {alias: tool.name for tool in self.tools.values() for alias in tool.aliases}
        self._definitions: list[ToolDefinition] | None = None

    def definitions(self) -> list[ToolDefinition]:
        """The tools' function definitions, derived once: the same list every turn (do not change it)."""
        if self._definitions is None:
            self._definitions = [tool.definition() for tool in self.tools.values()]  # type: ignore[misc]
        return self._definitions

    def find(self, name: str) -> Tool | None:
        return self.tools.get(self.aliases.get(name, name))

    def summary(self, name: str, result: dict[str, Any]) -> str:
        """One short line on a successful call, for a person: ``132 lines``, ``exit 0, 4 lines of output``."""
        tool = self.find(name)
        describe_result = SUMMARIES.get(tool.name if tool else name)
        return describe_result(result) if describe_result else "done"

    async def call(self, name: str, arguments: dict[str, Any], workspace: Workspace) -> dict[str, Any]:
        tool = self.find(name)
        if tool is None:
            return failure(f'unknown tool: "{name}". Available: {", ".join(self.tools)}')
        try:
            args = tool.arguments.model_validate(arguments)
        except ValidationError as error:
            return failure(f"invalid arguments for {tool.name}: {describe(error)}")
        try:
            return {**await tool.run(args, workspace), "ok": True}
        except (ToolFailure, WorkspaceError) as error:
            return failure(str(error))
        except OSError as error:  # the OS refused a path or a process: the model can try another
            return failure(workspace.describe(error))
        except Exception as error:  # a tool bug must not end the turn
            log.exception("tool %s failed", tool.name)
            return failure(f"{type(error).__name__}: {error}")


def failure(error: str) -> dict[str, Any]:
    return {"ok": False, "error": error}


def describe(error: ValidationError) -> str:
    """``field: problem`` for each error, the way a person (or a model) reads it."""
    return "; ".join(
        f"{'.'.join(str(part) for part in item['loc']) or 'arguments'}: {item['msg']}" for item in error.errors()
    )


def count(number: int, one: str, many: str = "") -> str:
    return f"{number} {one}" if number == 1 else f"{number} {many or one + 's'}"


def line_count(text: str) -> int:
    return len(text.splitlines())


def _cut(result: dict[str, Any]) -> str:
    return " (cut short)" if result.get("truncated") else ""


SUMMARIES: dict[str, Callable[[dict[str, Any]], str]] = {
    "read": lambda r: count(line_count(r.get("content", "")), "line"),
    "write": lambda r: f"wrote {count(r.get('bytes', 0), 'byte')}",
    "edit": lambda r: "edited",
    "execute": lambda r: f"exit {r.get('exit_code')}, {count(line_count(r.get('output', '')), 'line')} of output{_cut(r)}",
    "list": lambda r: count(len(r.get("files", [])), "file") + _cut(r),
    "grep": lambda r: count(len(r.get("matches", [])), "match", "matches") + _cut(r),
}


MAIN_ARGUMENTS = ("path", "command", "pattern")


def brief(name: str, arguments: dict[str, Any]) -> str:
    """``read README.md``: a call as a person reads it, its main argument only (never a file's content)."""
    main = next((arguments[key] for key in MAIN_ARGUMENTS if isinstance(arguments.get(key), str)), None)
    shown = main if main is not None else json.dumps(arguments, ensure_ascii=False) if arguments else ""
    return f"{name} {shown}".rstrip()


def encode(result: dict[str, Any]) -> str:
    return json.dumps(result, ensure_ascii=False, separators=(",", ":"))
