"""What a tool is: a name, a description, an argument model and a coroutine."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from ..lean_schema import lean_schema, without_descriptions
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
    summary: str = ""  # one line: its description in a small window's compact prompt
    core: bool = True  # offered in a compact prompt; one that is not only while there is room

    def definition(self, compact: bool = False) -> dict[str, Any]:
        """The OpenAI function definition, its parameters derived from the argument model (a lean
        schema); ``compact``: the one-line summary and the schema's limits without its words."""
        schema = lean_schema(self.arguments.model_json_schema())
        schema.setdefault("required", [])
        description = self.description
        if compact:
            schema, description = without_descriptions(schema), self.summary or self.description
            if not schema["required"]:
                del schema["required"]
        return {"type": "function", "function": {"name": self.name, "description": description, "parameters": schema}}
