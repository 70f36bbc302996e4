"""What a tool is: a name, a description, an argument model and a coroutine."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from ..workspace import Workspace


class ToolFailure(Exception):
    """An expected failure (file missing, ambiguous edit...) reported to the model as ``ok: false``."""


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    arguments: type[BaseModel]
    run: Callable[[Any, Workspace], Awaitable[dict[str, Any]]]
    aliases: tuple[str, ...] = field(default=())
    changes_files: bool = True  # a checkpoint of the folder is taken before it runs

    def definition(self) -> dict[str, Any]:
        """The OpenAI function definition, its parameters derived from the argument model."""
        schema = self.arguments.model_json_schema()
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            prop.pop("title", None)
        schema.setdefault("required", [])
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": schema},
        }
