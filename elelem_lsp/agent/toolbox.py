"""Toolbox: the tools a session offers, their definitions, and running one call.

Every outcome is a dict with ``ok``; a bad argument, an unknown tool or an
exception becomes ``ok: false`` with an error the model can read, never a crash.
"""

from __future__ import annotations

import json
import logging
from typing import Any, Iterable

from pydantic import ValidationError

from .messages import ToolDefinition
from .tools import BUILTIN_TOOLS, Tool, ToolFailure
from .workspace import Workspace, WorkspaceError

log = logging.getLogger(__name__)


class Toolbox:
    def __init__(self, tools: Iterable[Tool] = BUILTIN_TOOLS) -> None:
        self.tools = {tool.name: tool for tool in tools}
        self.aliases = {alias: tool.name for tool in self.tools.values() for alias in tool.aliases}

    def definitions(self) -> list[ToolDefinition]:
        return [tool.definition() for tool in self.tools.values()]  # type: ignore[misc]

    def find(self, name: str) -> Tool | None:
        return self.tools.get(self.aliases.get(name, name))

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


def encode(result: dict[str, Any]) -> str:
    return json.dumps(result, ensure_ascii=False, separators=(",", ":"))
