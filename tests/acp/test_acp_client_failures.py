"""What the agent does when an ACP client fails one of its requests, in-process: the ACP face
(``AcpFrontend``) over a client whose file and terminal methods answer with errors, driven by the
toolbox as a turn drives it. A failed read falls back to the disk; a failed write leaves the file
as it was and tells the model why; a terminal that cannot be opened or fails is an error the model
reads, and a terminal that was opened is killed and released all the same."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from acp import RequestError
from acp_client import capabilities

from elelem_lsp.acp.frontend import AcpFrontend
from elelem_lsp.agent.toolbox import Toolbox
from elelem_lsp.host.settings import Settings
from elelem_lsp.host.workspace import FrontendWorkspace


class FailingClient:
    """An ACP client connection: each method in ``fails`` answers with an internal error, the
    terminal's commands never end unless ``exits``; every request is recorded."""

    def __init__(self, *fails: str, exits: bool = True) -> None:
        self.fails, self.exits = set(fails), exits
        self.requests: list[str] = []

    async def _answer(self, method: str, result: Any = None) -> Any:
        self.requests.append(method)
        if method in self.fails:
            raise RequestError(-32603, f"{method} broke")
        return result

    async def session_update(self, **_: Any) -> None:
        return None

    async def read_text_file(self, **_: Any) -> Any:
        return await self._answer("read_text_file", SimpleNamespace(content="from the client\n"))

    async def write_text_file(self, **_: Any) -> Any:
        return await self._answer("write_text_file")

    async def create_terminal(self, **_: Any) -> Any:
        return await self._answer("create_terminal", SimpleNamespace(terminal_id="t1"))

    async def wait_for_terminal_exit(self, **_: Any) -> Any:
        if not self.exits:
            await asyncio.sleep(3600)
        return await self._answer("wait_for_terminal_exit")

    async def kill_terminal(self, **_: Any) -> Any:
        return await self._answer("kill_terminal")

    async def terminal_output(self, **_: Any) -> Any:
        status = SimpleNamespace(exit_code=0)
        return await self._answer("terminal_output", SimpleNamespace(output="ran\n", truncated=False, exit_status=status))

    async def release_terminal(self, **_: Any) -> Any:
        return await self._answer("release_terminal")


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
    assert client.requests == ["read_text_file"]


async def test_a_read_the_client_answers_is_its_buffer(project):
    ws, _ = workspace(project, FailingClient())
    assert "from the client" in (await call(ws, "read", path="README.md"))["content"]


async def test_a_write_the_client_fails_leaves_the_file_and_tells_the_model(project):
    ws, _ = workspace(project, client := FailingClient("write_text_file"), fs="write")
    result = await call(ws, "edit", path="README.md", old="hello", new="changed")
    assert result["ok"] is False and "write_text_file broke" in result["error"]
    assert (project / "README.md").read_text() == "# hello\n" and "write_text_file" in client.requests


async def test_a_terminal_the_client_cannot_open_is_an_error_the_model_reads(project):
    ws, _ = workspace(project, FailingClient("create_terminal"))
    result = await call(ws, "execute", command="echo hi")
    assert result["ok"] is False
    assert result["error"] == "the client could not open a terminal for it: create_terminal broke"


async def test_a_terminal_that_fails_is_an_error_and_is_killed_and_released(project):
    ws, face = workspace(project, client := FailingClient("wait_for_terminal_exit"))
    result = await call(ws, "execute", command="echo hi")
    assert result["ok"] is False and result["error"] == "the client's terminal failed: wait_for_terminal_exit broke"
    await face.closed()
    assert client.requests[-2:] == ["kill_terminal", "release_terminal"]


async def test_a_terminal_past_its_timeout_is_killed_and_its_output_kept(project):
    ws, face = workspace(project, client := FailingClient(exits=False))
    result = await call(ws, "execute", command="sleep 100", timeout=0.2)
    assert result["ok"] is False and "timed out" in result["error"]
    await face.closed()
    assert client.requests == ["create_terminal", "kill_terminal", "terminal_output", "release_terminal"]


async def test_a_kill_and_release_the_client_fails_do_not_end_the_session(project):
    ws, face = workspace(project, client := FailingClient("wait_for_terminal_exit", "kill_terminal", "release_terminal"))
    result = await call(ws, "execute", command="echo hi")
    assert result["ok"] is False
    await face.closed()  # the failures are logged, the session goes on
    assert client.requests[-2:] == ["kill_terminal", "release_terminal"]
    assert (await call(ws, "read", path="README.md"))["ok"] is True
