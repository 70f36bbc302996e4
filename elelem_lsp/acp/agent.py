"""ElelemAgent: the ACP methods, each answered by a session's folder agent.

``initialize`` negotiates the version and says what we support (images only when the provider a
session in our working folder would use takes them); ``authenticate`` accepts the one method,
whose keys are the environment's or the settings file's; ``session/new`` opens a session on
``cwd`` (``session.AcpSession``: a folder agent, its Frontend the ACP client),
``session/load`` one on a stored conversation, replayed, and ``session/resume`` the same without
the replay; ``session/list`` lists the stored ones; ``session/close`` ends one (its turn, its
MCP servers, its terminals); ``session/prompt`` turns the content blocks into one prompt
(``prompts``), runs the turn or a slash command (``slash_commands``) and answers with the stop
reason; ``session/cancel`` stops it; the provider and model are session config options
(``options``). Bad requests are JSON-RPC errors that name the field; the connection keeps
serving. ``stdio`` serves it.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, RequestError, update_agent_message_text
from acp.schema import (
    AgentCapabilities,
    AuthenticateResponse,
    AuthMethodAgent,
    ClientCapabilities,
    CloseSessionResponse,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    ResumeSessionResponse,
    SessionCapabilities,
    SessionCloseCapabilities,
    SessionInfo,
    SessionInfoUpdate,
    SessionListCapabilities,
    SessionResumeCapabilities,
    SetSessionConfigOptionResponse,
)

from .. import __version__
from ..agent.images import takes_images
from ..host import stored
from ..host.frontend import BadRequest, Refused
from .errors import invalid
from .frontend import AcpFrontend
from .mcp_servers import mcp_config
from .options import config_options, select
from .prompts import prompt_text
from .session import AcpSession
from .slash_commands import available_commands, command, slash_command
from .updates import plan_update, replayed

log = logging.getLogger(__name__)

# What authentication means here: elelem holds no account. The provider's key is read from the
# environment (ANTHROPIC_API_KEY, OPENAI_API_KEY...) or a provider declared in the settings
# file; ``authenticate`` has nothing to sign in to, and a missing key is said at the first prompt.
KEYS_METHOD = AuthMethodAgent(
    id="environment",
    name="API keys from the environment",
    description="elelem reads the provider's API key from the environment (such as ANTHROPIC_API_KEY or "
    "OPENAI_API_KEY) or from a provider declared in ~/.config/elelem-lsp/settings.json; there is no "
    "account to sign in to. A missing key is reported at the first prompt.",
)


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
                prompt_capabilities=PromptCapabilities(embedded_context=True, image=await self._images_taken()),
                mcp_capabilities=McpCapabilities(http=True),
                session_capabilities=SessionCapabilities(
                    list=SessionListCapabilities(), resume=SessionResumeCapabilities(), close=SessionCloseCapabilities()
                ),
            ),
            agent_info=Implementation(name="elelem-lsp", title="elelem", version=__version__),
            auth_methods=[KEYS_METHOD],
        )

    async def _images_taken(self) -> bool:
        """Whether the provider a session in our working folder would use takes images (the
        capability is the connection's, given before any session names its folder)."""
        probe = self._open(str(Path.cwd()), None)
        try:
            return takes_images((await probe.agent.ready()).provider)
        except Exception as error:  # no provider to ask (a factory's own failure, e.g. a missing key): none taken
            log.info("no provider to ask about images in %s: %s", Path.cwd(), error)
            return False
        finally:
            await probe.agent.shutdown()

    async def authenticate(self, method_id: str, **_: Any) -> AuthenticateResponse:
        if method_id != KEYS_METHOD.id:
            raise invalid("methodId", f"unknown method {method_id!r}; this agent has {KEYS_METHOD.id!r}")
        return AuthenticateResponse()

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
                session.agent.attach_mcp_servers(mcp_config(mcp_servers))
            except BadRequest as error:
                raise invalid("mcpServers", str(error).removeprefix("mcpServers: ")) from None
        return session

    def _register(self, session: AcpSession, session_id: str) -> None:
        session.id = session.frontend.session_id = session_id
        replaced = self.sessions.get(session_id)
        if replaced is not None:  # loaded again: the old one's MCP servers stop
            self._after_answer(replaced.agent.shutdown())
        self.sessions[session_id] = session

    async def new_session(self, cwd: str, mcp_servers: list[Any] | None = None, **_: Any) -> NewSessionResponse:
        """A session on the folder's current conversation; a new one when a live session has that one
        (one writer per conversation)."""
        session = self._open(cwd, mcp_servers)
        try:
            current = await stored.transcript(session.agent)
            conversation, title = current["id"], current["title"]
            if conversation in {live.agent.current.id for live in self.sessions.values()}:
                conversation, title = (await stored.new_conversation(session.agent))["id"], ""
        except BaseException:
            await session.agent.shutdown()
            raise
        self._register(session, conversation)
        options = await config_options(session.agent)
        self._after_answer(self._announce(session, title))
        return NewSessionResponse(session_id=session.id, config_options=options)

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None, **_: Any
    ) -> LoadSessionResponse:
        """The stored conversation ``session_id``, replayed as updates before the answer."""
        session, transcript = await self._reopen(cwd, session_id, mcp_servers)
        for update in replayed(transcript, session.root, session.frontend.calls):
            session.frontend.outbox.put(update)
        await session.frontend.outbox.sent()
        options = await config_options(session.agent)
        self._after_answer(self._announce(session, transcript["title"]))
        return LoadSessionResponse(config_options=options)

    async def resume_session(
        self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None, **_: Any
    ) -> ResumeSessionResponse:
        """The stored conversation ``session_id``, ready to go on, with nothing replayed (the
        client still shows it) but its title and its plan as it stands."""
        session, transcript = await self._reopen(cwd, session_id, mcp_servers)
        options = await config_options(session.agent)
        self._after_answer(self._announce(session, transcript["title"], session.agent.current.plan))
        return ResumeSessionResponse(config_options=options)

    async def _reopen(self, cwd: str, session_id: str, mcp_servers: list[Any] | None) -> tuple[AcpSession, dict[str, Any]]:
        """A session on the stored conversation ``session_id``, and its transcript."""
        live = self.sessions.get(session_id)
        if live is not None and live.prompting is not None and not live.prompting.done():
            raise RequestError(-32600, f"session {session_id!r} is running a turn; cancel it first")
        session = self._open(cwd, mcp_servers)
        try:
            transcript = await stored.resume(session.agent, session_id)
        except BadRequest:
            await session.agent.shutdown()
            raise invalid(
                "sessionId", f"unknown session {session_id!r}: no stored conversation has that id in {session.root}"
            ) from None
        except BaseException:
            await session.agent.shutdown()
            raise
        self._register(session, session_id)
        return session, transcript

    async def close_session(self, session_id: str, **_: Any) -> CloseSessionResponse:
        """End the session: its turn is cancelled (its terminals killed and released), its MCP
        servers stopped, and it is forgotten: a later request naming it is refused."""
        session = self._session(session_id)
        del self.sessions[session_id]
        session.cancel()
        if session.prompting is not None:
            await asyncio.wait({session.prompting})
        await session.frontend.closed()
        await session.agent.shutdown()
        return CloseSessionResponse()

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
            return await stored.conversations(live.agent)
        session = self._open(str(root), None)  # a folder no session is on: its agent, for the listing only
        try:
            return await stored.conversations(session.agent)
        finally:
            await session.agent.shutdown()

    def _after_answer(self, coroutine: Any) -> None:
        """Run ``coroutine`` once the answer being prepared is on its way (the client then knows the session)."""
        task = asyncio.ensure_future(coroutine)
        self.background.add(task)
        task.add_done_callback(self.background.discard)

    async def _announce(self, session: AcpSession, title: str = "", plan: list[dict[str, Any]] | None = None) -> None:
        session.frontend.outbox.put(available_commands())
        if title:
            session.title = title
            session.frontend.outbox.put(SessionInfoUpdate(session_update="session_info_update", title=title))
        if plan:
            session.frontend.outbox.put(plan_update(plan))
        await session.agent.prepare()  # the provider is ready before the first prompt

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
        await self._refuse_images_untaken(session, prompt)
        asked = await prompt_text(prompt, session.agent.workspace)
        if not asked.text.strip():
            raise invalid("prompt", "is empty")
        slash = slash_command(asked.prompt)  # the person's words, not the files attached to them
        session.frontend.prompted = True
        trusted = session.frontend.plugins_load
        if slash is None:
            stop_reason = await session.turn(asked)
        else:
            try:
                answer = await command(session, *slash)
            except (Refused, BadRequest) as error:
                answer = f"/{slash[0]}: {error}"
            session.frontend.outbox.put(update_agent_message_text(answer))
            stop_reason = "end_turn"
        if trusted is None and session.frontend.plugins_load:
            await session.options_changed()  # the folder's plugin providers can be picked now
        await session.frontend.outbox.sent()
        return PromptResponse(stop_reason=stop_reason)

    async def _refuse_images_untaken(self, session: AcpSession, prompt: list[Any]) -> None:
        """InvalidParams naming the first image block when the session's provider cannot take images."""
        index = next((i for i, block in enumerate(prompt) if getattr(block, "type", None) == "image"), None)
        if index is None:
            return None
        try:
            provider = (await session.agent.ready()).provider
        except Exception as error:  # ProviderError, or a factory's own failure such as a missing key
            raise invalid(f"prompt[{index}]", f"no provider to send the image to: {error}") from None
        if not takes_images(provider):
            name = session.agent.provider_choice.choice().name
            raise invalid(f"prompt[{index}]", f"provider {name!r} cannot take images; pick one that can in the Provider option")

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
                await select(session.agent, value, None)
            else:
                await select(session.agent, None, value)
        except Refused as error:
            raise invalid("value", str(error)) from None
        return SetSessionConfigOptionResponse(config_options=await config_options(session.agent))
