"""The built-in tools. Each is a pydantic argument model plus an async ``run``
that asks the Workspace port for everything it touches."""

from collections.abc import Iterable

from .base import Tool, ToolFailure
from .edit import EDIT
from .execute import EXECUTE
from .grep import GREP
from .listing import LIST
from .plan import PLAN
from .read import READ
from .write import WRITE

BUILTIN_TOOLS: tuple[Tool, ...] = (READ, WRITE, EDIT, EXECUTE, LIST, GREP, PLAN)


def aliases_of(tools: Iterable[Tool]) -> dict[str, str]:
    """Each other name a tool answers to (``bash`` for ``execute``) -> the tool's own name."""
    return {alias: tool.name for tool in tools for alias in tool.aliases}


BUILTIN_ALIASES = aliases_of(BUILTIN_TOOLS)

__all__ = ["BUILTIN_ALIASES", "BUILTIN_TOOLS", "Tool", "ToolFailure", "aliases_of"]
