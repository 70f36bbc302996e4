"""ElelemAgent: the ACP methods, each answered by the host of one session.

``initialize`` negotiates the version and says what we support; ``session/new`` opens a
session on ``cwd`` (a Host with that one folder, its Frontend the ACP client);
``session/prompt`` turns text, resource links and embedded resources into one prompt,
runs the turn (or a slash command) and answers with the stop reason; ``session/cancel``
stops it through the host's cancellation; the provider and model are session config
options and ``/provider``, ``/model`` commands. Bad requests are JSON-RPC errors that name
the field; the connection keeps serving.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from acp import PROTOCOL_VERSION, RequestError, run_agent, stdio_streams, update_agent_message_text
from acp.core import DEFAULT_STDIO_BUFFER_LIMIT_BYTES
from acp.helpers import update_available_commands
from acp.schema import (
    AgentCapabilities,
    AvailableCommand,
    AvailableCommandInput,
    ClientCapabilities,
    ConfigOptionUpdate,
    EmbeddedResourceContentBlock,
    HttpMcpServer,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    McpServerStdio,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    ResourceContentBlock,
    SessionCapabilities,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionInfo,
    SessionListCapabilities,
    SetSessionConfigOptionResponse,
    TextContentBlock,
    TextResourceContents,
    UnstructuredCommandInput,
)

from .. import __version__
from ..agent.workspace import WorkspaceError
from ..host.conversations import Asked
from ..host.frontend import BadRequest, Refused
from ..host.host import Host
from ..host.rewind_report import checkpoint_lines, rewind_lines
from ..providers.remote.presets import PRESETS
from ..stop_signals import StopSignals
from .frontend import AcpFrontend
from .updates import replayed

log = logging.getLogger(__name__)
DEFAULT_MODEL = "default"
COMMANDS = {
    "provider": ("Show the providers, or switch: /provider NAME [MODEL]", "NAME [MODEL]"),
    "model": ("Switch the model of the current provider: /model NAME", "NAME"),
    # The LSP face's /reset moves the folder to a new conversation. Here a session is one stored
    # conversation for good (session/load and session/list name it by the session id), so /reset
    # starts the model's context over inside it: the earlier turns stay stored and shown.
    "reset": ("Start the context over: the model forgets this thread's earlier turns (they stay shown)", None),
    "compact": ("Replace the older turns with a summary, to fit more in the context", None),
    "rewind": ("List the turns that changed files, or put files and context back to before turn N", "[N [force]]"),
    "tools": ("List the tools the agent can use", None),
}
# Models a person may pick from, by provider, besides the provider's own default ("default") and
# the model the settings name; /model NAME takes any other.
KNOWN_MODELS: dict[str, tuple[str, ...]] = {
    "openai": ("gpt-4.1", "gpt-4.1-mini", "gpt-4o", "gpt-4o-mini", "gpt-5", "gpt-5-mini", "o3", "o4-mini"),
    "anthropic": ("claude-sonnet-4-5", "claude-opus-4-1", "claude-haiku-4-5"),
    "vertex": ("claude-sonnet-4-5@20250929", "claude-opus-4-1@20250805", "claude-haiku-4-5@20251001"),
    "ollama": ("gpt-oss:latest",),
    **{name: (preset.model,) for name, preset in PRESETS.items() if preset.model},
}


def invalid(field: str, message: str) -> RequestError:
    """InvalidParams whose message names the field, as the LSP face's errors do."""
    return RequestError(-32602, f"{field}: {message}", {field: message})


class AcpSession:
    """One ACP session: its id, the host of its folder, and the front end that answers it."""

    def __init__(self, root: Path, frontend: AcpFrontend) -> None:
        self.id, self.root, self.frontend = "", root, frontend
        self.host = Host(frontend)
        self.host.sync_folders({root.as_uri(): root})
        self.folder = next(iter(self.host.folders.values()))
        self.prompting: asyncio.Task[PromptResponse] | None = None  # the prompt being answered

    # -- provider and model ---------------------------------------------------------
    async def config_options(self) -> list[SessionConfigOptionSelect]:
        info = await self.host.providers(self.folder)
        names = list(dict.fromkeys([info["provider"], *info["available"]]))
        declared = [d.model for d in self.folder.settings.providers if d.name == info["provider"] and d.model]
        models = list(
            dict.fromkeys(
                [
                    DEFAULT_MODEL,
                    *KNOWN_MODELS.get(info["provider"], ()),
                    *declared,
                    *([info["model"]] if info["model"] else []),
                ]
            )
        )
        return [
            SessionConfigOptionSelect(
                type="select",
                id="provider",
                name="Provider",
                description="Where the model runs",
                current_value=info["provider"],
                options=[SessionConfigSelectOption(value=n, name=n) for n in names],
            ),
            SessionConfigOptionSelect(
                type="select",
                id="model",
                name="Model",
                category="model",
                description="The provider's model (default: the provider's own choice); /model NAME picks any",
                current_value=info["model"] or DEFAULT_MODEL,
                options=[SessionConfigSelectOption(value=m, name=m) for m in models],
            ),
        ]

    async def select(self, provider: str | None, model: str | None) -> None:
        """Switch provider and/or model, keeping the conversation; Refused says why not."""
        choice = self.folder.choice()
        name = provider or choice.name
        await self.host.select_provider(self.folder, name, model if model != DEFAULT_MODEL else None)

    async def options_changed(self) -> None:
        options = await self.config_options()
        self.frontend.outbox.put(ConfigOptionUpdate(session_update="config_option_update", config_options=options))

    # -- prompts ----------------------------------------------------------------------
    async def prompt_text(self, blocks: list[Any]) -> Asked:
        """The person's words (text, links kept as links) and, as the context, the files attached."""
        words, files = [], []
        for index, block in enumerate(blocks):
            if isinstance(block, TextContentBlock):
                words.append(block.text)
            elif isinstance(block, ResourceContentBlock):
                file = await self.linked(block)
                if file is None:
                    words.append(f"[{block.name}]({block.uri})")
                else:
                    files.append(file)
            elif isinstance(block, EmbeddedResourceContentBlock):
                resource = block.resource
                if not isinstance(resource, TextResourceContents):
                    raise invalid(f"prompt[{index}]", "a binary embedded resource cannot be read as text")
                files.append(attached(self.label(resource.uri), resource.text))
            else:
                raise invalid(f"prompt[{index}]", f"{block.type} content is not supported (see promptCapabilities)")
        return Asked("\n\n".join(part for part in words if part), "\n\n".join(part for part in files if part))

    async def linked(self, block: ResourceContentBlock) -> str | None:
        """A linked file inside the workspace, attached with its text; None for anything else
        (it stays a link among the person's words)."""
        path = file_path(block.uri)
        workspace = self.folder.workspace
        if path is not None:
            try:
                resolved = workspace.resolve(str(path))
                return attached(workspace.relative(resolved), await workspace.read_text(resolved))
            except (WorkspaceError, OSError) as error:
                log.info("not attaching %s: %s", block.uri, error)
        return None

    def label(self, uri: str) -> str:
        path = file_path(uri)
        if path is not None and path.is_relative_to(self.root):
            return path.relative_to(self.root).as_posix()
        return uri

    async def turn(self, asked: Asked) -> str:
        """Run one turn; its stop reason."""
        before = self.frontend.turn
        try:
            result = await self.host.turn(self.folder, asked.prompt, context=asked.context, request=self.id)
        except Refused as error:
            raise RequestError(-32600, str(error)) from None
        if result["error"] and not result["cancelled"]:
            turn = self.frontend.turn
            said = turn is not before and turn is not None and turn.said  # None: it failed before it began
            self.frontend.outbox.put(update_agent_message_text(("\n\n" if said else "") + result["reply"]))
        await self.frontend.outbox.sent()
        if result["cancelled"]:
            return "cancelled"
        # The host says maxSteps only in its error's words (a turn result has no reason field).
        if result["error"] and "(maxSteps)" in result["error"]:
            return "max_turn_requests"
        return "end_turn"

    def cancel(self) -> None:
        """Stop the prompt: a running turn through the host (it ends cancelled, and is stored so);
        anything before or instead of a turn (the plugins question, reading attached files, a slash
        command such as /compact) where it is."""
        if self.id in self.host.turns_by_request:
            self.host.cancel_request(self.id)
        elif self.prompting is not None:
            self.prompting.cancel()

    # -- slash commands -----------------------------------------------------------------
    async def command(self, name: str, argument: str) -> str:
        """What a slash command answers, in words for the person."""
        if name == "provider":
            if not argument:
                info = await self.host.providers(self.folder)
                listed = "\n".join(f"{'*' if n == info['provider'] else ' '} {n}" for n in info["available"])
                return f"{listed}\n\n* = this session's provider; /provider NAME [MODEL] switches"
            provider, _, model = argument.partition(" ")
            await self.select(provider, model.strip() or None)
            await self.options_changed()
            return f"provider: {provider}" + (f" (model {model.strip()})" if model.strip() else "")
        if name == "model":
            if not argument:
                return f"model: {self.folder.choice().model or DEFAULT_MODEL}; /model NAME switches"
            await self.select(None, argument)
            await self.options_changed()
            return f"model: {argument}"
        if name == "reset":
            await self.host.start_over(self.folder)
            return "the context starts over: the model no longer sees the turns above"
        if name == "compact":
            report = await self.host.compact(self.folder)
            if not report["turns"]:
                return "nothing to compact yet"
            return (
                f"{report['turns']} turns compacted into a summary "
                f"({report['tokensBefore']:,} -> {report['tokensAfter']:,} tokens)"
            )
        if name == "rewind":
            return await self.rewind(argument)
        names = [tool["name"] for tool in self.host.tools()["tools"]]
        return "tools: " + ", ".join(names)

    async def rewind(self, argument: str) -> str:
        """``/rewind``: the checkpoints; ``/rewind N [force]``: the files, and the context when turn N
        is this session's, back to before turn N."""
        listing = await self.host.checkpoints(self.folder)
        wanted, _, force = argument.partition(" ")
        if not wanted:
            return "\n".join(checkpoint_lines(listing))
        if not wanted.isdigit() or int(wanted) < 1 or force.strip() not in ("", "force"):
            return "usage: /rewind [N [force]] (/rewind lists the turns)"
        turn = int(wanted)
        ours = any(c["turn"] == turn and c["conversation"] == self.folder.conversation for c in listing)
        result = await self.host.rewind(self.folder, turn, conversation=ours, force=bool(force.strip()))
        lines = rewind_lines(result, "(/rewind {turn} undoes this)")
        if not result["rewound"]:
            lines.append(f"nothing was rewound; /rewind {turn} force overwrites them")
        return "\n".join(lines)


def attached(label: str, text: str) -> str:
    """A file's text for the prompt, fenced so no backticks inside can end the fence."""
    fence = "`" * max(3, longest_run(text, "`") + 1)
    return f"{label}:\n{fence}\n{text.rstrip(chr(10))}\n{fence}"


def longest_run(text: str, char: str) -> int:
    longest = run = 0
    for c in text:
        run = run + 1 if c == char else 0
        longest = max(longest, run)
    return longest


def file_path(uri: str) -> Path | None:
    parsed = urlparse(uri)
    if parsed.scheme != "file" or parsed.netloc not in ("", "localhost"):
        return None
    return Path(unquote(parsed.path))


def mcp_config(servers: list[Any]) -> dict[str, Any]:
    """ACP's ``mcpServers`` list as the ``mcpServers`` setting's shape: ``{NAME: {command, args,
    env}}`` for stdio, ``{NAME: {url, headers}}`` for streamable HTTP (SSE and ACP-routed servers
    are not supported: refused by name)."""
    config: dict[str, Any] = {}
    for index, server in enumerate(servers):
        if isinstance(server, McpServerStdio):
            config[server.name] = {
                "command": server.command,
                "args": list(server.args),
                "env": {variable.name: variable.value for variable in server.env},
            }
        elif isinstance(server, HttpMcpServer):
            config[server.name] = {"url": server.url, "headers": {h.name: h.value for h in server.headers}}
        else:
            raise invalid(f"mcpServers[{index}]", f"{server.type} MCP servers are not supported; use stdio or http")
    return config


def slash_command(text: str) -> tuple[str, str] | None:
    """``("provider", "openai gpt-4o")`` for ``/provider openai gpt-4o``; None for a prompt."""
    if not text.startswith("/"):
        return None
    name, _, argument = text[1:].strip().partition(" ")
    return (name, argument.strip()) if name in COMMANDS else None


class ElelemAgent:
    """The agent side of the connection: sessions by id, and the client's capabilities."""

    def __init__(self, *, trust: bool = False) -> None:
        self.trust = trust
        self.conn: Any = None
        self.sessions: dict[str, AcpSession] = {}
        self.capabilities = ClientCapabilities()
        self.client = "ACP client"
        self.background: set[asyncio.Task[Any]] = set()

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **_: Any,
    ) -> InitializeResponse:
        self.capabilities = client_capabilities or ClientCapabilities()
        if client_info is not None:
            self.client = f"{client_info.title or client_info.name} {client_info.version}".strip()
        # One version is spoken: the client's if it is ours, else ours, for the client to judge.
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(embedded_context=True),
                mcp_capabilities=McpCapabilities(http=True),
                session_capabilities=SessionCapabilities(list=SessionListCapabilities()),
            ),
            agent_info=Implementation(name="elelem-lsp", title="elelem", version=__version__),
            auth_methods=[],
        )

    def _session(self, session_id: str) -> AcpSession:
        session = self.sessions.get(session_id)
        if session is None:
            raise invalid("sessionId", f"unknown session {session_id!r}")
        return session

    def _root(self, cwd: str) -> Path:
        root = Path(cwd)
        if not root.is_absolute():
            raise invalid("cwd", f"must be an absolute path, got {cwd!r}")
        if not root.is_dir():
            raise invalid("cwd", f"{cwd} is not a folder")
        return root.resolve()

    def _open(self, cwd: str, mcp_servers: list[Any] | None) -> AcpSession:
        root = self._root(cwd)
        frontend = AcpFrontend(self.conn, "", root, self.capabilities, self.client, trust=self.trust)
        session = AcpSession(root, frontend)
        if mcp_servers:
            try:
                session.host.attach_mcp_servers(session.folder, mcp_config(mcp_servers))
            except BadRequest as error:
                raise invalid("mcpServers", str(error).removeprefix("mcpServers: ")) from None
        return session

    def _register(self, session: AcpSession, session_id: str) -> None:
        session.id = session.frontend.session_id = session_id
        replaced = self.sessions.get(session_id)
        if replaced is not None:  # loaded again: the old one's MCP servers stop
            self._after_answer(replaced.host.shutdown())
        self.sessions[session_id] = session

    async def new_session(self, cwd: str, mcp_servers: list[Any] | None = None, **_: Any) -> NewSessionResponse:
        """A session on the folder's current conversation; a new one when a live session has that one
        (one writer per conversation)."""
        session = self._open(cwd, mcp_servers)
        try:
            conversation = (await session.host.transcript(session.folder))["id"]
            if conversation in {live.folder.conversation for live in self.sessions.values()}:
                conversation = (await session.host.new_conversation(session.folder))["id"]
        except BaseException:
            await session.host.shutdown()
            raise
        self._register(session, conversation)
        options = await session.config_options()
        self._after_answer(self._announce(session))
        return NewSessionResponse(session_id=session.id, config_options=options)

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None, **_: Any
    ) -> LoadSessionResponse:
        """The stored conversation ``session_id``, replayed as updates before the answer."""
        live = self.sessions.get(session_id)
        if live is not None and live.prompting is not None and not live.prompting.done():
            raise RequestError(-32600, f"session {session_id!r} is running a turn; cancel it first")
        session = self._open(cwd, mcp_servers)
        try:
            transcript = await session.host.resume(session.folder, session_id)
        except BadRequest:
            await session.host.shutdown()
            raise invalid(
                "sessionId", f"unknown session {session_id!r}: no stored conversation has that id in {session.root}"
            ) from None
        except BaseException:
            await session.host.shutdown()
            raise
        self._register(session, session_id)
        for update in replayed(transcript, session.root, session.frontend.calls):
            session.frontend.outbox.put(update)
        await session.frontend.outbox.sent()
        options = await session.config_options()
        self._after_answer(self._announce(session))
        return LoadSessionResponse(config_options=options)

    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None, **_: Any) -> ListSessionsResponse:
        """The stored conversations of ``cwd`` (else of every folder a session here is on), newest
        first: what ``session/load`` opens. All in one page: no cursor is ever handed out."""
        if cursor is not None:
            raise invalid("cursor", "this agent lists every session in one page and hands out no cursor")
        roots = [self._root(cwd)] if cwd is not None else list(dict.fromkeys(s.root for s in self.sessions.values()))
        listed: list[SessionInfo] = []
        for root in roots:
            listed += [
                SessionInfo(session_id=c["id"], cwd=str(root), title=c["title"], updated_at=c["updated"])
                for c in await self._stored_conversations(root)
            ]
        listed.sort(key=lambda info: info.updated_at or "", reverse=True)
        return ListSessionsResponse(sessions=listed)

    async def _stored_conversations(self, root: Path) -> list[dict[str, Any]]:
        live = next((s for s in self.sessions.values() if s.root == root), None)
        if live is not None:
            return await live.host.conversations(live.folder)
        session = self._open(str(root), None)  # a folder no session is on: its host, for the listing only
        try:
            return await session.host.conversations(session.folder)
        finally:
            await session.host.shutdown()

    def _after_answer(self, coroutine: Any) -> None:
        """Run ``coroutine`` once the answer being prepared is on its way (the client then knows the session)."""
        task = asyncio.ensure_future(coroutine)
        self.background.add(task)
        task.add_done_callback(self.background.discard)

    async def _announce(self, session: AcpSession) -> None:
        session.frontend.outbox.put(
            update_available_commands(
                [
                    AvailableCommand(
                        name=name,
                        description=description,
                        input=AvailableCommandInput(UnstructuredCommandInput(hint=hint)) if hint else None,
                    )
                    for name, (description, hint) in COMMANDS.items()
                ]
            )
        )
        await session.host.prepare()  # the provider is ready before the first prompt

    async def prompt(self, session_id: str, prompt: list[Any], **_: Any) -> PromptResponse:
        """The prompt answered in a task of the session's own, which ``session/cancel`` stops
        wherever it is: ``cancelled`` even before a turn began."""
        session = self._session(session_id)
        if session.prompting is not None and not session.prompting.done():
            raise RequestError(-32600, "a prompt is already running in this session; wait for it or cancel it")
        task = session.prompting = asyncio.ensure_future(self._answer(session, prompt))
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError:  # the connection is closing
            task.cancel()
            raise
        return PromptResponse(stop_reason="cancelled") if task.cancelled() else task.result()

    async def _answer(self, session: AcpSession, prompt: list[Any]) -> PromptResponse:
        asked = await session.prompt_text(prompt)
        if not asked.text.strip():
            raise invalid("prompt", "is empty")
        command = slash_command(asked.prompt)  # the person's words, not the files attached to them
        session.frontend.prompted = True
        trusted = session.frontend.plugins_load
        if command is None:
            stop_reason = await session.turn(asked)
        else:
            try:
                answer = await session.command(*command)
            except (Refused, BadRequest) as error:
                answer = f"/{command[0]}: {error}"
            session.frontend.outbox.put(update_agent_message_text(answer))
            stop_reason = "end_turn"
        if trusted is None and session.frontend.plugins_load:
            await session.options_changed()  # the folder's plugin providers can be picked now
        await session.frontend.outbox.sent()
        return PromptResponse(stop_reason=stop_reason)

    async def cancel(self, session_id: str, **_: Any) -> None:
        session = self.sessions.get(session_id)
        if session is not None:
            session.cancel()

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **_: Any
    ) -> SetSessionConfigOptionResponse:
        session = self._session(session_id)
        if config_id not in ("provider", "model"):
            raise invalid("configId", f"unknown option {config_id!r}; this agent has provider and model")
        if not isinstance(value, str) or not value:
            raise invalid("value", f"{config_id} takes a name")
        try:
            if config_id == "provider":
                await session.select(value, None)
            else:
                await session.select(None, value)
        except Refused as error:
            raise invalid("value", str(error)) from None
        return SetSessionConfigOptionResponse(config_options=await session.config_options())


async def serve(stop_signals: StopSignals, *, trust: bool = False) -> None:
    """Speak ACP on stdin/stdout until the client closes stdin or a stop signal comes."""
    reader, writer = await protocol_streams()
    agent = ElelemAgent(trust=trust)
    try:
        await stop_signals.serve(run_agent(agent, writer, reader))
    finally:  # the MCP servers the sessions started, and their turns' commands, go with them
        await asyncio.gather(*(session.host.shutdown() for session in agent.sessions.values()))


async def protocol_streams() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """stdin/stdout as the protocol's streams, with anything else written to stdout (a plugin's
    print, a child process) sent to stderr instead: only protocol messages reach the client."""
    protocol_out = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout, stdout = protocol_out, sys.stdout  # stdio_streams takes whatever sys.stdout is
    try:
        return await stdio_streams(limit=DEFAULT_STDIO_BUFFER_LIMIT_BYTES)
    finally:
        sys.stdout = stdout
