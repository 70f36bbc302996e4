"""Per-folder settings: the ``elelem`` section of ``workspace/configuration`` as a pydantic model.

An invalid value never stops the server: it is replaced by its default and
reported by name, with the value used instead.
"""

from __future__ import annotations

import os
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError


class DeclaredProvider(BaseModel):
    """Eklesia's provider by type, declared in settings instead of code."""

    model_config = ConfigDict(populate_by_name=True, extra="ignore")

    name: str = Field(min_length=1)
    type: str = "openai-chat"
    model: str | None = None
    endpoint: str | None = None
    api_key_env: str | None = Field(default=None, alias="apiKeyEnv")
    temperature: float | None = None
    max_tokens: int | None = Field(default=None, alias="maxTokens", gt=0)


class Settings(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="ignore")

    provider: str | None = None
    model: str | None = None
    providers: list[DeclaredProvider] = Field(default_factory=list)
    execute: Literal["ask", "allow", "deny"] = "ask"
    allow_commands: list[str] = Field(default_factory=list, alias="allowCommands")
    confirm_edits: bool = Field(default=False, alias="confirmEdits")
    workspace_plugins: bool = Field(default=False, alias="workspacePlugins")
    trusted: bool = True  # False from an editor whose workspace is untrusted (VS Code's workspace trust)
    max_steps: int = Field(default=50, alias="maxSteps", ge=1, le=1000)
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int | None = Field(default=None, alias="maxTokens", gt=0)
    history: bool = True  # store the folder's conversations on disk (host/conversations.py)
    context_tokens: int | None = Field(default=None, alias="contextTokens", ge=1000)
    compaction: Literal["drop", "summarize"] = "drop"

    def provider_options(self) -> dict[str, Any]:
        return {"model": self.model, "temperature": self.temperature, "max_tokens": self.max_tokens}


def parse_settings(raw: Any) -> tuple[Settings, list[str]]:
    """Settings from a client's answer, and one line per invalid value naming what was used instead."""
    if raw is None:
        return Settings(), []
    if not isinstance(raw, dict):
        return Settings(), [f"elelem settings must be an object, got {type(raw).__name__}; using defaults"]
    values = {key: value for key, value in raw.items() if value is not None}
    problems: list[str] = []
    while True:
        try:
            return Settings.model_validate(values), problems
        except ValidationError as error:
            bad = {str(item["loc"][0]) for item in error.errors() if item["loc"]}
            if not bad or not bad & values.keys():
                return Settings(), problems + [f"invalid elelem settings ({error.error_count()} errors); using defaults"]
            for key in sorted(bad & values.keys()):
                default = Settings.model_fields[_field_name(key)].get_default(call_default_factory=True)
                problems.append(f"invalid value for elelem.{key}: {values.pop(key)!r}; using {default!r}")


def within_trust(settings: Settings) -> tuple[Settings, list[str]]:
    """What an untrusted folder's settings may do, and what was ignored.

    Settings can come from files in the project, so in a folder the editor does not trust
    nothing in them may loosen anything: no workspace plugins, commands asked about at
    least (``allow`` becomes ``ask``, ``allowCommands`` is ignored), and no declared
    providers (one could send the key its ``apiKeyEnv`` names to any endpoint). ``provider``
    stays: without those it can only name a built-in, a user plugin or an installed package.
    """
    if settings.trusted:
        return settings, []
    ignored = [key for key, value in (("workspacePlugins", settings.workspace_plugins),
                                      ("allowCommands", settings.allow_commands),
                                      ("providers", settings.providers)) if value]
    if settings.execute == "allow":
        ignored.insert(0, "execute 'allow' (using 'ask')")
    limited = settings.model_copy(
        update={
            "workspace_plugins": False,
            "execute": "ask" if settings.execute == "allow" else settings.execute,
            "allow_commands": [],
            "providers": [],
        }
    )
    return limited, ignored


def _field_name(key: str) -> str:
    for name, info in Settings.model_fields.items():
        if key in (name, info.alias):
            return name
    return key


def provider_from_environment() -> str:
    """The provider to use when none is set: the first whose key is in the environment."""
    if os.environ.get("ANTHROPIC_API_KEY"):
        return "anthropic"
    if os.environ.get("OPENAI_API_KEY"):
        return "openai"
    return "stub"
