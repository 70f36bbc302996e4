"""The built-in tools. Each is a pydantic argument model plus an async ``run``
that asks the Workspace port for everything it touches."""

from .base import Tool, ToolFailure
from .edit import EDIT
from .execute import EXECUTE
from .grep import GREP
from .listing import LIST
from .read import READ
from .write import WRITE

BUILTIN_TOOLS: tuple[Tool, ...] = (READ, WRITE, EDIT, EXECUTE, LIST, GREP)

__all__ = ["BUILTIN_TOOLS", "Tool", "ToolFailure"]
