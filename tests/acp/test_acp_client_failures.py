"""What the agent does when an ACP client fails one of its requests. In-process: the ACP face
(``AcpFrontend``) over a client whose file and terminal methods answer with errors, driven by the
toolbox as a turn drives it, every request and answer built from the SDK's types and checked
against the protocol's schema. A failed read falls back to the disk; a failed write leaves the file
as it was and tells the model why; a terminal that cannot be opened or fails is an error the model
reads, and a terminal that was opened is killed and released all the same. Then the same over the
real stdio pipe: ``elelem-lsp acp`` and the SDK's client answering with JSON-RPC errors."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from acp import RequestError
from acp.meta import CLIENT_METHODS
from acp.schema import (
    CreateTerminalRequest,
    CreateTerminalResponse,
    KillTerminalRequest,
    KillTerminalResponse,
    ReadTextFileRequest,
    ReadTextFileResponse,
    ReleaseTerminalRequest,
    ReleaseTerminalResponse,
    SessionNotification,
    TerminalExitStatus,
    TerminalOutputRequest,
    TerminalOutputResponse,
    WaitForTerminalExitRequest,
    WaitForTerminalExitResponse,
    WriteTextFileRequest,
    WriteTextFileResponse,
)
from acp_client import RecordingClient, capabilities
from pydantic import BaseModel
from schema_check import problems
from scaffold import write_script, write_user_settings

from elelem_lsp.acp.frontend import AcpFrontend
from elelem_lsp.agent.toolbox import Toolbox
from elelem_lsp.host.settings import Settings
from elelem_lsp.host.workspace import FrontendWorkspace

# The client's methods the agent calls: the method on the wire, and the type of its params.
METHODS: dict[str, tuple[str, type[BaseModel]]] = {
    "read_text_file": (CLIENT_METHODS["fs_read_text_file"], ReadTextFileRequest),
    "write_text_file": (CLIENT_METHODS["fs_write_text_file"], WriteTextFileRequest),
    "create_terminal": (CLIENT_METHODS["terminal_create"], CreateTerminalRequest),
    "wait_for_terminal_exit": (CLIENT_METHODS["terminal_wait_for_exit"], WaitForTerminalExitRequest),
    "kill_terminal": (CLIENT_METHODS["terminal_kill"], KillTerminalRequest),
    "terminal_output": (CLIENT_METHODS["terminal_output"], TerminalOutputRequest),
    "release_terminal": (CLIENT_METHODS["terminal_release"], ReleaseTerminalRequest),
}


def as_json(model: BaseModel) -> dict[str, Any]:
    """A model as the SDK puts it on the wire."""
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


class FailingClient:
    """An ACP client connection: each method in ``fails`` answers with an internal error, the
    terminal's commands never end unless ``exits``. Every request and answer is recorded as it
    would cross the pipe (``wire``, for the schema check), and the methods asked (``requests``)."""

    def __init__(self, *fails: str, exits: bool = True) -> None:
        self.fails, self.exits = set(fails), exits
        self.requests: list[str] = []
        self.wire: list[tuple[str, dict[str, Any]]] = []

    async def _answer(self, name: str, params: dict[str, Any], result: BaseModel) -> Any:
        method, request = METHODS[name]
        number = len(self.wire)
        self.requests.append(name)
        self.wire.append(("agent", {"jsonrpc": "2.0", "id": number, "method": method, "params": as_json(request(**params))}))
        if name in self.fails:
            error = RequestError.internal_error({"method": method})
            answer = {key: value for key, value in error.to_error_obj().items() if value is not None}
            self.wire.append(("client", {"jsonrpc": "2.0", "id": number, "error": answer}))
            raise RequestError(error.code, f"{name} broke", error.data)
        self.wire.append(("client", {"jsonrpc": "2.0", "id": number, "result": as_json(result)}))
        return result

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        notification = SessionNotification(session_id=session_id, update=update)
        self.wire.append(("agent", {"jsonrpc": "2.0", "method": CLIENT_METHODS["session_update"], "params": as_json(notification)}))

    async def read_text_file(self, **params: Any) -> ReadTextFileResponse:
        return await self._answer("read_text_file", params, ReadTextFileResponse(content="from the client\n"))

    async def write_text_file(self, **params: Any) -> WriteTextFileResponse:
        return await self._answer("write_text_file", params, WriteTextFileResponse())

    async def create_terminal(self, **params: Any) -> CreateTerminalResponse:
        return await self._answer("create_terminal", params, CreateTerminalResponse(terminal_id="t1"))

    async def wait_for_terminal_exit(self, **params: Any) -> WaitForTerminalExitResponse:
        if not self.exits:
            await asyncio.Event().wait()  # until the agent gives up on it
        return await self._answer("wait_for_terminal_exit", params, WaitForTerminalExitResponse(exit_code=0))

    async def kill_terminal(self, **params: Any) -> KillTerminalResponse:
        return await self._answer("kill_terminal", params, KillTerminalResponse())

    async def terminal_output(self, **params: Any) -> TerminalOutputResponse:
        output = TerminalOutputResponse(output="ran\n", truncated=False, exit_status=TerminalExitStatus(exit_code=0))
        return await self._answer("terminal_output", params, output)

    async def release_terminal(self, **params: Any) -> ReleaseTerminalResponse:
        return await self._answer("release_terminal", params, ReleaseTerminalResponse())


def workspace(root: Path, client: FailingClient, *, fs: bool | str = True) -> tuple[FrontendWorkspace, AcpFrontend]:
    face = AcpFrontend(client, "s1", root, capabilities(fs, True), "test-client", trust=True)
    settings = lambda: Settings(execute="allow", sandbox="off")  # noqa: E731
    return FrontendWorkspace(root, settings, documents=face, person=face, progress=face, face=face, client=face.name), face


async def call(ws: FrontendWorkspace, tool: str, **arguments: Any) -> dict:
    return await Toolbox().call(tool, arguments, ws)


async def test_a_read_the_client_fails_is_read_from_the_disk(project):
    ws, _ = workspace(project, client := FailingClient("read_text_file"))
    result = await call(ws, "read", path="README.md")
    assert result["ok"] is True and "# hello" in result["content"]
    assert client.requests == ["read_text_file"] and problems(client.wire) == []


async def test_a_read_the_client_answers_is_its_buffer(project):
    ws, _ = workspace(project, client := FailingClient())
    assert "from the client" in (await call(ws, "read", path="README.md"))["content"]
    assert problems(client.wire) == []


async def test_a_write_the_client_fails_leaves_the_file_and_tells_the_model(project):
    ws, _ = workspace(project, client := FailingClient("write_text_file"), fs="write")
    result = await call(ws, "edit", path="README.md", old="hello", new="changed")
    assert result["ok"] is False and "write_text_file broke" in result["error"]
    assert (project / "README.md").read_text() == "# hello\n" and "write_text_file" in client.requests
    assert problems(client.wire) == []


async def test_a_terminal_the_client_cannot_open_is_an_error_the_model_reads(project):
    ws, _ = workspace(project, client := FailingClient("create_terminal"))
    result = await call(ws, "execute", command="echo hi")
    assert result["ok"] is False
    assert result["error"] == "the client could not open a terminal for it: create_terminal broke"
    assert problems(client.wire) == []


async def test_a_terminal_that_fails_is_an_error_and_is_killed_and_released(project):
    ws, face = workspace(project, client := FailingClient("wait_for_terminal_exit"))
    result = await call(ws, "execute", command="echo hi")
    assert result["ok"] is False and result["error"] == "the client's terminal failed: wait_for_terminal_exit broke"
    await face.closed()
    assert client.requests[-2:] == ["kill_terminal", "release_terminal"] and problems(client.wire) == []


async def test_a_terminal_past_its_timeout_is_killed_and_its_output_kept(project):
    ws, face = workspace(project, client := FailingClient(exits=False))
    result = await call(ws, "execute", command="sleep 100", timeout=0.2)
    assert result["ok"] is False and "timed out" in result["error"]
    await face.closed()
    assert client.requests == ["create_terminal", "kill_terminal", "terminal_output", "release_terminal"]
    assert problems(client.wire) == []


async def test_a_kill_and_release_the_client_fails_do_not_end_the_session(project):
    ws, face = workspace(project, client := FailingClient("wait_for_terminal_exit", "kill_terminal", "release_terminal"))
    result = await call(ws, "execute", command="echo hi")
    assert result["ok"] is False
    await face.closed()  # the failures are logged, the session goes on
    assert client.requests[-2:] == ["kill_terminal", "release_terminal"]
    assert (await call(ws, "read", path="README.md"))["ok"] is True
    assert problems(client.wire) == []


class RefusingClient(RecordingClient):
    """The SDK's client over the real pipe, answering the file and terminal methods with
    JSON-RPC errors: a read it does not have, a write it refuses, no terminal to give."""

    async def read_text_file(self, session_id: str, path: str, **_: Any) -> ReadTextFileResponse:
        self.reads.append(path)
        raise RequestError.resource_not_found(path)

    async def write_text_file(self, session_id: str, path: str, content: str, **_: Any) -> None:
        self.writes.append((path, content))
        raise RequestError(-32000, "the file is read-only in this editor")

    async def create_terminal(self, session_id: str, command: str, **_: Any) -> CreateTerminalResponse:
        raise RequestError.internal_error({"why": "no terminals left"})


async def test_a_client_that_answers_its_methods_with_errors_over_the_pipe_costs_the_turn_nothing(
    scripted_project: Path, home: Path, start_agent
):
    write_user_settings(home, {"provider": "scripted", "execute": "allow", "sandbox": "off"})
    steps = [
        {"type": "doing", "id": "r1", "name": "read", "arguments": {"path": "README.md"}},
        {"type": "doing", "id": "e1", "name": "edit", "arguments": {"path": "README.md", "old": "hello", "new": "changed"}},
        {"type": "doing", "id": "x1", "name": "execute", "arguments": {"command": "echo hi"}},
    ]
    write_script(scripted_project, [[step] for step in steps] + [[{"type": "saying", "text": "went on"}]])
    agent = await start_agent(scripted_project, client=RefusingClient(), fs=True, terminal=True)
    assert (await agent.prompt("read, edit, run")).stop_reason == "end_turn"
    assert agent.client.text().endswith("went on")

    read, edit, run = (agent.client.tool_updates(call)[-1] for call in ("r1", "e1", "x1"))
    assert read.status == "completed" and read.raw_output == {"ok": True, "summary": "1 line"}  # read from the disk
    assert agent.client.reads[0] == str(scripted_project / "README.md")  # asked first, refused
    assert edit.status == "failed" and "the file is read-only in this editor" in edit.content[-1].content.text
    assert [path for path, _ in agent.client.writes] == [str(scripted_project / "README.md")]
    assert (scripted_project / "README.md").read_text() == "# hello\n"  # left as it was
    assert run.status == "failed" and "the client could not open a terminal for it" in run.content[-1].content.text

    refused = {m["id"] for sender, m in agent.wire if sender == "client" and "error" in m}
    asked = [m["method"] for sender, m in agent.wire if sender == "agent" and "method" in m and m.get("id") in refused]
    # the read, the edit's own read of the file (from the disk too), its write, the command's terminal
    assert asked == ["fs/read_text_file", "fs/read_text_file", "fs/write_text_file", "terminal/create"]
    assert problems(agent.wire) == []
