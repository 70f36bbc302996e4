"""The language server: pygls wiring of the commands, code actions, settings and cancellation.

Each feature is done elsewhere: messages are checked by ``protocol``, framed by ``framing``,
commands parsed by ``commands`` into calls to the folder agents, reached through
``router.LspRouter``; the agents reach the editor through ``editor.LspFrontend``; code actions
are ``actions``. This file connects them.

Start-up imports only pygls and this face: the agent (pydantic models, tools, providers) is
imported after ``initialize`` has been answered, on a worker thread, together with everything
the first turn's provider needs, so neither start-up nor the first turn pays for it.
"""

from __future__ import annotations

import asyncio
import io
import logging
import sys
import threading
from typing import Any, cast

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer

from .. import __version__
from ..agent.editor_context import known_changes
from ..stop_signals import StopSignals
from . import actions, framing, next_edit
from .completion import InlineCompletions
from .editor import LspFrontend
from .next_edit import NextEditBridge
from .protocol import AnsweredErrors, ElelemProtocol
from .router import LspRouter

# The commands, named before the agent is imported: commands.COMMANDS maps each to its argument
# model and handler (a test keeps the two in step).
COMMAND_NAMES = (
    "elelem.ask",
    "elelem.fix",
    "elelem.providers",
    "elelem.selectProvider",
    "elelem.cancel",
    "elelem.reset",
    "elelem.context",
    "elelem.conversations",
    "elelem.resume",
    "elelem.transcript",
    "elelem.deleteConversation",
    "elelem.compact",
    "elelem.tools",
    "elelem.reload",
    "elelem.mcp",
    "elelem.checkpoints",
    "elelem.rewind",
    "elelem.completionAccepted",
)

log = logging.getLogger(__name__)


class ElelemServer(LanguageServer):
    protocol: ElelemProtocol

    def __init__(self) -> None:
        super().__init__("elelem-lsp", __version__, protocol_cls=ElelemProtocol)
        self.frontend = LspFrontend(self)
        self.router = LspRouter(self, self.frontend)
        self.completion = InlineCompletions(self.router)
        self.next_edit = NextEditBridge(self.router, self.completion)
        self.protocol.on_cancel = self.router.cancel_request
        self.preparing: asyncio.Task[None] | None = None

    # -- the connection: our framing, not pygls' reader ------------------------
    def start_io(self, stdin: Any = None, stdout: Any = None) -> None:
        """Serve over stdin/stdout until the editor exits or closes the stream."""
        source = stdin or cast(io.BufferedReader, sys.stdin.buffer)  # what Python opens stdin as
        self._stop_event = threading.Event()
        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))

        async def read() -> bytes:
            return await asyncio.get_running_loop().run_in_executor(self.thread_pool, source.read1, framing.CHUNK)

        self._run(framing.serve(read, self.protocol.receive, self._stop_event.is_set))

    def start_tcp(self, host: str, port: int) -> None:
        """Serve one editor connection at a time on ``host:port``."""
        self._stop_event = stop = threading.Event()

        async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.protocol.set_writer(writer)
            await framing.serve(lambda: reader.read(framing.CHUNK), self.protocol.receive, stop.is_set)
            self.shutdown()

        async def listen() -> None:
            self._server = await asyncio.start_server(connection, host, port)
            async with self._server:
                await self._server.serve_forever()

        self._run(listen())

    def _run(self, main: Any) -> None:
        stop_signals = StopSignals()

        async def serve_then_stop() -> None:
            try:
                await stop_signals.serve(main)
            finally:  # the editor left without a shutdown request, or signalled: stop what the host runs all the same
                await self.router.stop_host()

        try:
            asyncio.run(serve_then_stop())
        except framing.StreamLost as lost:
            sys.stderr.write(f"elelem-lsp: {lost}; exiting so the editor can restart the server\n")
            raise SystemExit(1) from None
        except BrokenPipeError:
            log.error("the editor closed the connection")
        except (KeyboardInterrupt, SystemExit, asyncio.CancelledError):
            pass  # exit: pygls ends the loop with SystemExit
        finally:
            stop_signals.end_process()
            self.shutdown()


def create_server() -> ElelemServer:
    logging.getLogger("pygls.protocol.json_rpc").addFilter(AnsweredErrors())
    server = ElelemServer()

    for name in COMMAND_NAMES:
        server.command(name)(_command(name))

    @server.feature(lsp.INITIALIZE)
    def initialize(ls: ElelemServer, params: lsp.InitializeParams) -> None:
        if params.client_info:
            ls.frontend.client_name = f"{params.client_info.name} {params.client_info.version or ''}".strip()
        ls.frontend.initialization_options = params.initialization_options
        if ls.next_edit.announced:  # only then are the recent edits kept
            ls.protocol.on_change = ls.next_edit.changed
            ls.protocol.on_request = ls.next_edit.arrived

    @server.feature(lsp.SHUTDOWN)
    async def shutdown(ls: ElelemServer, params: None) -> None:
        await ls.router.stop_host()

    @server.feature(lsp.INITIALIZED)
    def initialized(ls: ElelemServer, params: lsp.InitializedParams) -> None:
        ls.preparing = asyncio.ensure_future(prepare(ls))

    # Registering the document handlers makes pygls advertise open/close sync and
    # keep the editor's unsaved text, which ``read`` and the edits rely on.
    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: ElelemServer, params: lsp.DidOpenTextDocumentParams) -> None:
        pass

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: ElelemServer, params: lsp.DidSaveTextDocumentParams) -> None:
        if ls.router.host_loaded:  # git's state may have changed: read it again for the next ask
            read_git_again(ls, params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: ElelemServer, params: lsp.DidCloseTextDocumentParams) -> None:
        ls.completion.closed(params.text_document.uri)
        ls.next_edit.closed(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: ElelemServer, params: lsp.DidChangeTextDocumentParams) -> None:
        ls.completion.changed(params)  # pygls has applied the change; this notes when and where

    @server.feature(next_edit.NEXT_EDIT)
    async def suggest_next_edit(ls: ElelemServer, params: Any) -> dict[str, Any] | None:
        return await ls.next_edit.request(params)

    # Registered with options, so that pygls announces it (inlineCompletionProvider).
    @server.feature(lsp.TEXT_DOCUMENT_INLINE_COMPLETION, lsp.InlineCompletionOptions())
    async def inline_completion(ls: ElelemServer, params: lsp.InlineCompletionParams) -> lsp.InlineCompletionList:
        return await ls.completion.inline(params)

    @server.feature(lsp.TEXT_DOCUMENT_COMPLETION, lsp.CompletionOptions())
    async def completion_menu(ls: ElelemServer, params: lsp.CompletionParams) -> lsp.CompletionList:
        return await ls.completion.menu(params)

    @server.feature(lsp.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    def folders_changed(ls: ElelemServer, params: lsp.DidChangeWorkspaceFoldersParams) -> None:
        if ls.router.host_loaded:
            ls.router.sync_folders()

    @server.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def configuration_changed(ls: ElelemServer, params: lsp.DidChangeConfigurationParams) -> None:
        await ls.router.settings_changed()

    @server.feature(lsp.WINDOW_WORK_DONE_PROGRESS_CANCEL)
    def progress_cancelled(ls: ElelemServer, params: lsp.WorkDoneProgressCancelParams) -> None:
        ls.router.cancel_progress(params.token)

    @server.feature(
        lsp.TEXT_DOCUMENT_CODE_ACTION,
        lsp.CodeActionOptions(code_action_kinds=[lsp.CodeActionKind.QuickFix, lsp.CodeActionKind.Refactor]),
    )
    def code_action(ls: ElelemServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
        return actions.code_actions(params)

    return server


async def prepare(ls: ElelemServer) -> None:
    """After initialize: ready each folder's first turn, the messages of a turn, and read git's
    state of the trusted folders."""
    await ls.router.prepare_first_turn()
    warm_messages(ls.protocol)
    if ls.router.host_loaded:
        for agent in list(ls.router.host.agents.values()):
            if agent.settings.trusted:
                known_changes(agent.root).refresh()


def warm_messages(protocol: ElelemProtocol) -> None:
    """pygls' converter makes its (un)structuring functions of a type when first asked: made here
    for what every turn receives and sends, the first turn does not wait for them."""
    command = {"command": COMMAND_NAMES[0], "arguments": [{}], "workDoneToken": "warm"}
    protocol.structure_message({"jsonrpc": "2.0", "id": "warm", "method": lsp.WORKSPACE_EXECUTE_COMMAND, "params": command})
    for value in (
        lsp.WorkDoneProgressCreateParams(token="warm"),
        *(lsp.ProgressParams(token="warm", value={"kind": kind, "message": ""}) for kind in ("begin", "report", "end")),
    ):
        protocol._converter.unstructure(value)


def read_git_again(ls: ElelemServer, uri: str) -> None:
    """git status of the trusted folder ``uri`` is in, again in the background."""
    try:
        agent = ls.router.agent_for(uri)
    except JsonRpcException:  # a document outside every folder
        return
    if agent.settings.trusted:
        known_changes(agent.root).refresh()


def _command(name: str):
    async def run(ls: ElelemServer, *arguments: Any) -> Any:
        from . import commands  # imported after initialize by prepare_first_turn; here if a command came first

        return await commands.run(ls.router, name, arguments)

    return run
