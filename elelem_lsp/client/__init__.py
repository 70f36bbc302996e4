"""TerminalClient: the LSP client behind ``elelem-lsp ask`` and ``chat``.

It starts the real server as a subprocess and speaks LSP to it like an
editor: the current folder is the workspace, edits are applied to disk,
``$/progress`` events go to a sink, and permission and input requests are
answered on the terminal (or refused when nobody is there to answer).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcRequestCancelled
from pygls.lsp.client import LanguageClient

from .. import __version__
from ..agent.workspace import WorkspaceError
from ..our_clients import TERMINAL_CLIENT
from .disk import apply_workspace_edit
from .terminal import Terminal

EventSink = Callable[[dict[str, Any]], None]
SERVER_COMMAND = (sys.executable, "-m", "elelem_lsp", "serve")


class TerminalClient:
    def __init__(self, root: Path, terminal: Terminal, *, options: dict[str, Any] | None = None) -> None:
        self.root = root.resolve()
        self.terminal = terminal
        self.options = options or {}
        self.client = LanguageClient("elelem-lsp-terminal", __version__)
        self.sinks: dict[Any, EventSink] = {}
        self.counter = itertools.count(1)
        self.in_flight: str | None = None
        self._register()

    def _register(self) -> None:
        client = self.client

        @client.feature(lsp.WORKSPACE_APPLY_EDIT)
        def apply_edit(params: lsp.ApplyWorkspaceEditParams) -> lsp.ApplyWorkspaceEditResult:
            try:
                apply_workspace_edit(params.edit)
            except (OSError, ValueError, WorkspaceError) as error:
                return lsp.ApplyWorkspaceEditResult(applied=False, failure_reason=str(error))
            return lsp.ApplyWorkspaceEditResult(applied=True)

        @client.feature(lsp.PROGRESS)
        def progress(params: lsp.ProgressParams) -> None:
            sink = self.sinks.get(params.token)
            if sink is not None and isinstance(params.value, dict):  # the server's progress values are objects
                sink(params.value)

        @client.feature(lsp.WINDOW_SHOW_MESSAGE)
        def show_message(params: lsp.ShowMessageParams) -> None:
            self.terminal.notice(params.message)

        @client.feature(lsp.WINDOW_LOG_MESSAGE)
        def log_message(params: lsp.LogMessageParams) -> None:
            if params.type in (lsp.MessageType.Error, lsp.MessageType.Warning):
                self.terminal.notice(params.message)

        @client.feature(lsp.WINDOW_SHOW_MESSAGE_REQUEST)
        async def show_message_request(params: lsp.ShowMessageRequestParams) -> lsp.MessageActionItem | None:
            titles = [action.title for action in params.actions or []]
            choice = await self.terminal.choose(params.message, titles)
            return lsp.MessageActionItem(title=choice) if choice else None

        @client.feature(lsp.WINDOW_WORK_DONE_PROGRESS_CREATE)
        def create_progress(params: lsp.WorkDoneProgressCreateParams) -> None:
            return None

        @client.feature("elelem/input")
        async def ask_input(params: Any) -> dict[str, str] | None:
            prompt = params.get("prompt") if isinstance(params, dict) else getattr(params, "prompt", "")
            text = await self.terminal.ask_person(str(prompt or ""))
            return None if text is None else {"text": text}

    async def start(self, command: tuple[str, ...] = SERVER_COMMAND) -> None:
        # A session of its own: Ctrl-C in the terminal is ours to handle (cancel the
        # turn), not a signal that should kill the server.
        await self.client.start_io(
            *command, cwd=str(self.root), env={**os.environ, "PYTHONUNBUFFERED": "1"}, start_new_session=True
        )
        process = self.client._server
        if process is None or process.stderr is None:  # start_io sets both, piping the server's stderr
            raise RuntimeError("the server process has no stderr stream")
        self.process = process
        self._stderr = asyncio.create_task(self._forward_stderr(process.stderr))
        await self.client.initialize_async(
            lsp.InitializeParams(
                process_id=os.getpid(),
                client_info=lsp.ClientInfo(name="elelem-lsp terminal", version=__version__),
                root_uri=self.root.as_uri(),
                workspace_folders=[lsp.WorkspaceFolder(uri=self.root.as_uri(), name=self.root.name)],
                initialization_options={**self.options, "client": TERMINAL_CLIENT},
                capabilities=lsp.ClientCapabilities(
                    workspace=lsp.WorkspaceClientCapabilities(
                        apply_edit=True,
                        workspace_edit=lsp.WorkspaceEditClientCapabilities(
                            document_changes=True,
                            resource_operations=[lsp.ResourceOperationKind.Create],
                        ),
                    ),
                    window=lsp.WindowClientCapabilities(
                        work_done_progress=True,
                        show_message=lsp.ShowMessageRequestClientCapabilities(),
                    ),
                ),
            )
        )
        self.client.initialized(lsp.InitializedParams())

    async def _forward_stderr(self, stream: asyncio.StreamReader) -> None:
        while line := await stream.readline():
            self.terminal.server_log(line.decode("utf-8", errors="replace"))

    async def command(self, name: str, argument: dict[str, Any] | None = None) -> Any:
        return as_dict(
            await self.client.workspace_execute_command_async(lsp.ExecuteCommandParams(command=name, arguments=[argument or {}]))
        )

    async def open_conversation(self, *, resume: str | None = None, keep: bool = False) -> dict[str, Any] | None:
        """Which conversation this session goes on with: ``resume``'s, the folder's current one
        (``keep``), or a new one (None). A resumed or kept conversation's transcript."""
        if resume:
            return await self.command("elelem.resume", {"id": resume})
        if keep:
            return await self.command("elelem.transcript", {})
        await self.command("elelem.reset", {})
        return None

    async def ask(self, prompt: str, sink: EventSink, **extra: Any) -> dict[str, Any]:
        """Run one turn; ``sink`` sees every progress value of it. ``cancel()`` stops it."""
        number = next(self.counter)
        token, msg_id = f"terminal-{number}", f"ask-{number}"
        ended = asyncio.Event()

        def receive(value: dict[str, Any]) -> None:
            sink(value)
            if value.get("kind") == "end":
                ended.set()

        self.sinks[token] = receive
        self.in_flight = msg_id
        params = lsp.ExecuteCommandParams(command="elelem.ask", arguments=[{"prompt": prompt, "progressToken": token, **extra}])
        try:
            return as_dict(await self.client.protocol.send_request_async(lsp.WORKSPACE_EXECUTE_COMMAND, params, msg_id=msg_id))
        except JsonRpcRequestCancelled:
            # The answer to a cancelled request comes before the turn's last progress: wait for it.
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(ended.wait(), 5)
            return {"reply": "", "cancelled": True, "error": None}
        finally:
            self.in_flight = None
            self.sinks.pop(token, None)

    def cancel(self) -> None:
        """Stop the running turn with ``$/cancelRequest``, as an editor does; stop waiting for input."""
        self.terminal.dismiss()
        if self.in_flight is not None:
            self.client.protocol.notify(lsp.CANCEL_REQUEST, lsp.CancelParams(id=self.in_flight))

    async def stop(self) -> None:
        try:
            await asyncio.wait_for(self.client.shutdown_async(None), 5)
            self.client.exit(None)
        except (TimeoutError, Exception):
            self.process.kill()
        await self.client.stop()
        self._stderr.cancel()


def as_dict(value: Any) -> Any:
    """Command results arrive as pygls objects; turn them back into plain data."""
    if isinstance(value, (list, tuple)):
        return [as_dict(v) for v in value]
    if hasattr(value, "__dict__") and not isinstance(value, type):
        return {k: as_dict(v) for k, v in vars(value).items()}
    return value
