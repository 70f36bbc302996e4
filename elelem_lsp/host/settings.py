"""Per-folder settings, as the front end supplies them (an editor's ``elelem`` settings, the
user's settings file), as a pydantic model.

An invalid value never stops the server: it is replaced by its default and
reported by name, with the value used instead.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Discriminator, Field, StringConstraints, Tag, ValidationError

from ..agent.sandbox import SandboxPolicy
from ..completion.settings import CompletionSettings
from ..nextedit.settings import NextEditSettings


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


class ModelPrice(BaseModel):
    """A model's price in USD per million tokens, over the table of providers/prices.py."""

    model_config = ConfigDict(populate_by_name=True)

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cache_read: float | None = Field(default=None, alias="cacheRead", ge=0)  # else the input price
    cache_write: float | None = Field(default=None, alias="cacheWrite", ge=0)


SERVER_NAME = r"^[A-Za-z0-9_-]+$"


def tool_name_prefix(name: str) -> str:
    """A server's name as the part before ``__`` in ``NAME__tool``, which is where a call is routed."""
    if "__" in name or name.endswith("_"):
        raise ValueError("a server's name may not hold '__' nor end in '_': its tools are called NAME__tool")
    return name


ServerName = Annotated[str, StringConstraints(pattern=SERVER_NAME), AfterValidator(tool_name_prefix)]


class StdioServer(BaseModel):
    """An MCP server run as a process, spoken to over its stdin and stdout."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    command: str = Field(min_length=1)
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    start_timeout: float = Field(default=30, alias="startTimeout", gt=0, le=600)
    call_timeout: float = Field(default=120, alias="callTimeout", gt=0, le=3600)
    sandbox: bool = False  # run it in the command sandbox, with the folder's sandboxNetwork and sandboxWritable


class HttpServer(BaseModel):
    """An MCP server reached over streamable HTTP."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    url: str = Field(pattern=r"^https?://")
    headers: dict[str, str] = Field(default_factory=dict)
    start_timeout: float = Field(default=30, alias="startTimeout", gt=0, le=600)
    call_timeout: float = Field(default=120, alias="callTimeout", gt=0, le=3600)


def _transport(config: Any) -> str:
    return "http" if isinstance(config, dict) and "url" in config else "stdio"


# A server with a ``url`` is an HTTP one, any other a process: errors then name one shape's fields.
McpServerConfig = Annotated[Annotated[StdioServer, Tag("stdio")] | Annotated[HttpServer, Tag("http")], Discriminator(_transport)]


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
    checkpoints: bool = True  # keep each turn's files to rewind it (host/checkpoints.py)
    checkpoint_turns: int = Field(default=50, alias="checkpointTurns", ge=1, le=10000)
    checkpoint_days: float = Field(default=30, alias="checkpointDays", gt=0, le=3650)
    context_tokens: int | None = Field(default=None, alias="contextTokens", ge=1000)
    prompt: Literal["auto", "full", "compact"] = "auto"  # the fixed part's size (agent/prompt_size.py)
    compaction: Literal["drop", "summarize"] = "drop"
    mcp_servers: dict[ServerName, McpServerConfig] = Field(default_factory=dict, alias="mcpServers")
    allow_mcp_tools: list[str] = Field(default_factory=list, alias="allowMcpTools")
    mcp: Literal["ask", "allow", "deny"] = "ask"
    prices: dict[str, ModelPrice] = Field(default_factory=dict)
    check_after_edits: bool = Field(default=True, alias="checkAfterEdits")
    check_wait_ms: int = Field(default=1500, alias="checkWaitMs", ge=0, le=10000)
    check_command: str | None = Field(default=None, alias="checkCommand", min_length=1)
    sandbox: Literal["auto", "required", "off"] = "auto"  # commands in the OS sandbox (agent/sandbox.py)
    sandbox_network: bool = Field(default=False, alias="sandboxNetwork")
    sandbox_writable: list[str] = Field(default_factory=list, alias="sandboxWritable")
    completion: CompletionSettings = Field(default_factory=CompletionSettings)  # ghost text (elelem_lsp/completion)
    next_edit: NextEditSettings = Field(default_factory=NextEditSettings, alias="nextEdit")  # elelem_lsp/nextedit

    def sandbox_policy(self, root: Path) -> SandboxPolicy:
        """The command sandbox these settings ask for in the folder ``root`` (writable folders from it or ``~``)."""
        writable = tuple((root / Path(folder).expanduser()).resolve() for folder in self.sandbox_writable)
        return SandboxPolicy(self.sandbox, self.sandbox_network, writable)

    def provider_options(self) -> dict[str, Any]:
        return {"model": self.model, "temperature": self.temperature, "max_tokens": self.max_tokens}


def settings_secrets(settings: Settings) -> set[str]:
    """The secrets the settings bring, for ``agent/redaction.py``: the keys their declared providers
    read from the environment, and the MCP servers' headers (with and without a scheme such as
    ``Bearer``) and environment values."""
    found = {os.environ.get(declared.api_key_env, "") for declared in settings.providers if declared.api_key_env}
    for server in settings.mcp_servers.values():
        values = server.headers.values() if isinstance(server, HttpServer) else server.env.values()
        found |= {part for value in values for part in (value, value.partition(" ")[2])}
    return {value.strip() for value in found if value.strip()}


def parse_settings(raw: Any) -> tuple[Settings, list[str]]:
    """Settings from a client's answer, and one line per invalid value naming what was used instead."""
    if raw is None:
        return Settings(), []
    if not isinstance(raw, dict):
        return Settings(), [f"elelem settings must be an object, got {type(raw).__name__}; using defaults"]
    values = {key: value for key, value in raw.items() if value is not None}
    problems: list[str] = _drop_bad_servers(values)
    while True:
        try:
            return Settings.model_validate(values), problems
        except ValidationError as error:
            bad = {str(item["loc"][0]) for item in error.errors() if item["loc"]}
            if not bad or not bad & values.keys():
                return Settings(), problems + [f"invalid elelem settings ({error.error_count()} errors); using defaults"]
            for key in sorted(bad & values.keys()):
                default = Settings.model_fields[_field_name(key)].get_default(call_default_factory=True)
                value = values.pop(key)
                if key in UNSHOWN:  # the problem only: the value may hold secrets
                    value = next(item["msg"] for item in error.errors() if item["loc"] and str(item["loc"][0]) == key)
                    problems.append(f"invalid value for elelem.{key}: {value}; using {default!r}")
                else:
                    problems.append(f"invalid value for elelem.{key}: {value!r}; using {default!r}")


UNSHOWN = {"mcpServers"}  # settings whose values are never echoed: a server's headers and env hold keys


def _drop_bad_servers(values: dict[str, Any]) -> list[str]:
    """Leave out each MCP server that is not right, one line each, so one typo stops no other server."""
    servers = values.get("mcpServers")
    if not isinstance(servers, dict):
        return []  # not an object at all: reported as any invalid value is
    problems = []
    for name, config in list(servers.items()):
        try:
            Settings.model_validate({"mcpServers": {name: config}})
        except ValidationError as error:
            details = "; ".join(f"{_server_field(item['loc'][2:])}: {item['msg']}" for item in error.errors())
            problems.append(f"elelem.mcpServers.{name} is left out: {details}")
            servers = {key: value for key, value in servers.items() if key != name}
    values["mcpServers"] = servers
    return problems


def _server_field(where: tuple[Any, ...]) -> str:
    """The part of one server an error is about: ``name``, a field (``env.A``) or the whole ``server``."""
    if where == ("[key]",):
        return "name"
    return ".".join(str(part) for part in where[1:]) or "server"  # where[0] is the shape's tag


def within_trust(settings: Settings) -> tuple[Settings, list[str]]:
    """What an untrusted folder's settings may do, and what was ignored.

    Settings can come from files in the project, so in a folder the editor does not trust
    nothing in them may loosen anything: no workspace plugins, commands asked about at
    least (``allow`` becomes ``ask``, ``allowCommands`` and ``checkCommand`` are ignored), and no declared
    providers (one could send the key its ``apiKeyEnv`` names to any endpoint), no MCP servers
    (each is a command to run or an address to send headers to) and MCP tools asked about at
    least, as commands are; the command sandbox neither off nor widened (no network, no writable
    folders beyond the workspace); inline completion not turned on for a paid API. ``provider``
    stays: without those it can only name a built-in, a user plugin or an installed package.
    """
    if settings.trusted:
        return settings, []
    ignored = [
        key
        for key, value in (
            ("workspacePlugins", settings.workspace_plugins),
            ("allowCommands", settings.allow_commands),
            ("providers", settings.providers),
            ("mcpServers", settings.mcp_servers),
            ("allowMcpTools", settings.allow_mcp_tools),
            ("checkCommand", settings.check_command),
            ("sandboxNetwork", settings.sandbox_network),
            ("sandboxWritable", settings.sandbox_writable),
        )
        if value
    ]
    if settings.execute == "allow":
        ignored.insert(0, "execute 'allow' (using 'ask')")
    if settings.mcp == "allow":
        ignored.append("mcp 'allow' (using 'ask')")
    if settings.sandbox == "off":
        ignored.append("sandbox 'off' (using 'auto')")
    if settings.completion.enabled:  # a paid API asked at every pause in typing costs the person money
        ignored.append("completion.enabled (a local provider still completes)")
    limited = settings.model_copy(
        update={
            "workspace_plugins": False,
            "execute": "ask" if settings.execute == "allow" else settings.execute,
            "allow_commands": [],
            "providers": [],
            "mcp_servers": {},
            "allow_mcp_tools": [],
            "check_command": None,
            "mcp": "ask" if settings.mcp == "allow" else settings.mcp,
            "sandbox": "auto" if settings.sandbox == "off" else settings.sandbox,
            "sandbox_network": False,
            "sandbox_writable": [],
            "completion": settings.completion.model_copy(
                update={"enabled": False if settings.completion.enabled is False else None}
            ),
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
