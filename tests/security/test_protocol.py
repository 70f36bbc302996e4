"""The protocol under bad input: frames, JSON, message order, params, URIs, late events.

Raw bytes go to a real ``elelem-lsp serve`` subprocess (``RawServer``) and its
answers are read back frame by frame; what needs a full editor session uses
pytest-lsp. Every answer to bad input is a JSON-RPC error the editor can show,
never a traceback (in ``data`` or on stderr), and never a server that goes on
running but stops listening.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException

from elelem_lsp.server.framing import FrameReader, Malformed
from scaffold import add_plugin

INITIALIZE = {"processId": None, "rootUri": None, "capabilities": {}}


def frame(message: Any, *, length: int | str | None = None, header: str = "Content-Length") -> bytes:
    """A message as LSP frames it; ``length`` overrides what the header says (None: the truth)."""
    body = message if isinstance(message, bytes) else json.dumps(message).encode()
    declared = len(body) if length is None else length
    return f"{header}: {declared}\r\n\r\n".encode() + body


def request(msg_id: Any, method: str, params: Any = None, **extra: Any) -> dict[str, Any]:
    message = {"jsonrpc": "2.0", "id": msg_id, "method": method, **extra}
    if params is not None:
        message["params"] = params
    return message


class RawServer:
    """``elelem-lsp serve`` as a subprocess, spoken to in raw bytes."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.buffer = b""

    @classmethod
    async def start(cls, cwd: Path) -> "RawServer":
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "elelem_lsp", "serve", cwd=cwd,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )
        return cls(process)

    async def send(self, *chunks: bytes) -> None:
        for chunk in chunks:
            self.process.stdin.write(chunk)
        await self.process.stdin.drain()

    async def read(self, timeout: float = 10) -> dict[str, Any]:
        """The next message the server sends."""
        async def one() -> dict[str, Any]:
            while b"\r\n\r\n" not in self.buffer:
                self.buffer += await self.process.stdout.read(65536) or _eof()
            head, _, rest = self.buffer.partition(b"\r\n\r\n")
            length = int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0])
            while len(rest) < length:
                rest += await self.process.stdout.read(65536) or _eof()
            self.buffer = rest[length:]
            return json.loads(rest[:length])

        return await asyncio.wait_for(one(), timeout)

    async def answer(self, msg_id: Any, timeout: float = 10) -> dict[str, Any]:
        """The response to ``msg_id``, skipping notifications and other answers."""
        while True:
            message = await self.read(timeout)
            if "method" not in message and message.get("id") == msg_id:
                return message

    async def initialize(self, root: Path) -> None:
        await self.send(frame(request(0, "initialize", {**INITIALIZE, "rootUri": root.as_uri()})))
        # the answer waits for the server's imports: seconds on a machine busy with a parallel run
        assert "result" in await self.answer(0, timeout=60)
        await self.send(frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))

    async def stop(self) -> str:
        """End the process; its stderr."""
        if self.process.returncode is None:
            self.process.stdin.close()
            try:
                await asyncio.wait_for(self.process.wait(), 10)
            except asyncio.TimeoutError:
                self.process.kill()
                await self.process.wait()
        # bounded: a command the server started in a session of its own may still hold stderr
        return (await asyncio.wait_for(self.process.stderr.read(), 10)).decode(errors="replace")


def _eof() -> bytes:
    raise EOFError("the server closed its stdout")


@pytest.fixture
async def raw(project):
    server = await RawServer.start(project)
    yield server
    await server.stop()


def no_traceback(stderr: str) -> None:
    assert "Traceback" not in stderr and 'File "' not in stderr, stderr


# -- framing: resynchronised at the next header ------------------------------------------------
TOOLS = request(7, "workspace/executeCommand", {"command": "elelem.tools", "arguments": [{}]})
SPARE = {**TOOLS, "id": 5}  # the message inside a bad frame: answered only when it can be recovered whole


BAD_FRAMES = {
    "no Content-Length": b"Content-Type: application/vscode-jsonrpc\r\n\r\n" + json.dumps(SPARE).encode(),
    "non-numeric": frame(SPARE, length="abc"),
    "negative": frame(SPARE, length="-3"),
    "shorter than the body": frame(SPARE, length=10),
    "longer than the body": frame(SPARE, length=400),
    "absurdly long": frame(SPARE, length=99_999_999_999),
    "garbage": b"garbage without any newline " * 10,
}


@pytest.mark.parametrize("bad", BAD_FRAMES.values(), ids=BAD_FRAMES.keys())
def test_frame_reader_reports_a_malformed_frame_and_finds_the_next(bad):
    reader = FrameReader()
    reader.feed(bad + frame(TOOLS))
    found = list(reader.frames())
    assert any(isinstance(f, Malformed) for f in found), found
    assert found[-1] == json.dumps(TOOLS).encode() and not reader.pending


async def test_each_malformed_frame_is_skipped_and_the_next_one_is_answered(raw, project):
    """All the bad frames above through one real server, each followed by a good request."""
    await raw.initialize(project)
    for number, (name, bad) in enumerate(BAD_FRAMES.items(), start=10):
        await raw.send(bad, frame({**TOOLS, "id": number}))
        answer = await raw.answer(number)
        assert [tool["name"] for tool in answer["result"]["tools"]][:2] == ["read", "write"], name
    await raw.send(frame(request(8, "workspace/executeCommand", {"command": "elelem.tools", "arguments": [{}]})))
    assert "result" in await raw.answer(8)  # and it stays in step
    stderr = await raw.stop()
    no_traceback(stderr)
    assert stderr.count("malformed frame") >= len(BAD_FRAMES), stderr


async def test_a_frame_split_into_single_bytes_still_arrives(raw, project):
    await raw.initialize(project)
    for byte in frame(TOOLS):
        await raw.send(bytes([byte]))
    assert "result" in await raw.answer(7)


def test_frame_reader_recovers_both_frames_when_a_length_runs_into_the_next():
    reader = FrameReader()
    first, second = json.dumps(request(1, "a")).encode(), json.dumps(request(2, "b")).encode()
    reader.feed(frame(first, length=len(first) + 30) + frame(second))
    found = list(reader.frames())
    assert [type(f) for f in found] == [Malformed, bytes, bytes]
    assert found[1:] == [first, second] and not reader.pending


def test_frame_reader_takes_header_names_in_any_case_and_waits_for_a_partial_body():
    reader = FrameReader()
    body = json.dumps(request(1, "a")).encode()
    reader.feed(b"content-length:  %d\r\nContent-Type: x\r\n\r\n" % len(body) + body[:5])
    assert list(reader.frames()) == [] and reader.pending
    reader.feed(body[5:])
    assert list(reader.frames()) == [body] and not reader.pending


async def test_a_stream_of_endless_garbage_ends_the_server_with_one_line(raw, project):
    await raw.initialize(project)
    try:
        await raw.send(b"x" * (65 * 2**20))
    except (BrokenPipeError, ConnectionResetError):
        pass
    assert await asyncio.wait_for(raw.process.wait(), 30) == 1
    stderr = await raw.stop()
    no_traceback(stderr)
    assert stderr.strip().splitlines()[-1].startswith("elelem-lsp: more than 64 MiB arrived without a single header line")


# -- JSON and JSON-RPC -------------------------------------------------------------------------
class InProcess:
    """The server's protocol in this process, its answers captured: for checks of what it
    answers to a message, which need no subprocess (the wire is tested end to end below)."""

    def __init__(self, *, initialized: bool = True) -> None:
        from elelem_lsp.server.server import create_server

        self.server = create_server()
        self.sent: list[bytes] = []
        self.server.protocol.set_writer(type("Writer", (), {"write": lambda _, data: self.sent.append(data)})())
        self.server.protocol.initialized = initialized

    def answer(self, body: bytes) -> dict[str, Any]:
        before = len(self.sent)
        self.server.protocol.receive(body)
        [answer] = self.sent[before:]
        return json.loads(answer.partition(b"\r\n\r\n")[2])


BAD_BODIES = [
    (b'{"jsonrpc": "2.0", "id": 3, "method": ', -32700),
    (b"\xff\xfe not utf-8", -32700),
    (b"[" * 200_000 + b"]" * 200_000, -32700),
    (b'{"a": ' * 100_000 + b"1" + b"}" * 100_000, -32700),
    (b"[]", -32600),
    (b'"just a string"', -32600),
    (b'{"jsonrpc": "1.0", "id": 3, "method": "shutdown"}', -32600),
    (b'{"jsonrpc": "2.0", "id": 3, "method": 42}', -32600),
    (b'{"jsonrpc": "2.0", "id": {"no": 1}, "method": "shutdown"}', -32600),
]
BAD_BODY_IDS = ["cut JSON", "not UTF-8", "arrays 200k deep", "objects 100k deep", "a batch", "a string",
                "JSON-RPC 1.0", "numeric method", "object id"]


@pytest.mark.parametrize("body, code", BAD_BODIES, ids=BAD_BODY_IDS)
def test_a_body_that_is_not_a_json_rpc_message_gets_an_error_answer(body, code):
    answer = InProcess().answer(body)
    assert answer["error"]["code"] == code and answer["error"].get("data") is None
    assert "Traceback" not in answer["error"]["message"]


@pytest.mark.parametrize("body, code", [BAD_BODIES[0], BAD_BODIES[3], BAD_BODIES[8]], ids=["cut JSON", "objects 100k deep", "object id"])
async def test_over_the_wire_a_bad_body_is_answered_and_the_server_goes_on(body, code, raw, project):
    await raw.initialize(project)
    await raw.send(frame(body))
    answer = await raw.read()
    assert answer["error"]["code"] == code and "data" not in answer["error"] or answer["error"]["data"] is None
    await raw.send(frame(TOOLS))
    assert "result" in await raw.answer(7)
    stderr = await raw.stop()
    no_traceback(stderr)
    assert "RecursionError" not in stderr


def test_before_initialize_a_request_is_refused_and_a_notification_dropped():
    protocol = InProcess(initialized=False)
    early = protocol.answer(json.dumps(TOOLS).encode())
    assert early["error"]["code"] == -32002 and "send initialize before workspace/executeCommand" in early["error"]["message"]
    protocol.server.protocol.receive(json.dumps({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {}}).encode())
    assert len(protocol.sent) == 1


def test_a_second_initialize_is_refused():
    again = InProcess().answer(json.dumps(request(1, "initialize", INITIALIZE)).encode())
    assert again["error"]["code"] == -32600 and "already initialized" in again["error"]["message"]


async def test_requests_before_initialize_and_after_shutdown_are_refused(raw, project):
    await raw.send(frame(TOOLS))
    early = await raw.answer(7)
    assert early["error"]["code"] == -32002
    await raw.send(frame({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {}}))  # dropped
    await raw.initialize(project)
    await raw.send(frame(request(1, "initialize", INITIALIZE)))
    assert (await raw.answer(1))["error"]["code"] == -32600
    await raw.send(frame(request(2, "shutdown")))
    assert (await raw.answer(2))["result"] is None
    await raw.send(frame(TOOLS))
    late = await raw.answer(7)
    assert late["error"]["code"] == -32600 and "shutting down" in late["error"]["message"]
    await raw.send(frame({"jsonrpc": "2.0", "method": "exit"}))
    assert await asyncio.wait_for(raw.process.wait(), 10) == 0
    no_traceback(await raw.stop())


@pytest.mark.parametrize(
    "params, field",
    [
        (None, "params: required field missing"),
        ({"arguments": [{}]}, "params.command: required field missing"),
        ({"command": "elelem.tools", "arguments": "not a list"}, "params.arguments"),
    ],
)
def test_execute_command_without_usable_params_is_invalid_params(params, field):
    answer = InProcess().answer(json.dumps(request(4, "workspace/executeCommand", params)).encode())
    assert answer["error"]["code"] == -32602 and field in answer["error"]["message"]
    assert answer["error"].get("data") is None


async def test_over_the_wire_unusable_params_are_invalid_params_without_a_traceback(raw, project):
    await raw.initialize(project)
    await raw.send(frame(request(4, "workspace/executeCommand", {"command": "elelem.tools", "arguments": "not a list"})))
    answer = await raw.answer(4)
    assert answer["error"]["code"] == -32602 and "params.arguments" in answer["error"]["message"]
    assert answer["error"].get("data") is None
    no_traceback(await raw.stop())


@pytest.mark.parametrize("line", [2**70, -1, 2**31])
def test_a_code_action_at_a_position_lsp_does_not_allow_is_invalid_params(line, project):
    uri = (project / "README.md").as_uri()
    where = {"start": {"line": line, "character": 0}, "end": {"line": 0, "character": 0}}
    params = {"textDocument": {"uri": uri}, "range": where, "context": {"diagnostics": []}}
    answer = InProcess().answer(json.dumps(request(5, "textDocument/codeAction", params)).encode())
    assert answer["error"]["code"] == -32602
    assert "params.range.start" in answer["error"]["message"] and "Position.line" in answer["error"]["message"]


@pytest.mark.parametrize("line", [2**70])
async def test_a_position_lsp_does_not_allow_is_invalid_params_naming_the_field(line, raw, project):
    await raw.initialize(project)
    uri = (project / "README.md").as_uri()
    where = {"start": {"line": line, "character": 0}, "end": {"line": 0, "character": 0}}
    await raw.send(frame(request(5, "textDocument/codeAction", {"textDocument": {"uri": uri}, "range": where, "context": {"diagnostics": []}})))
    answer = await raw.answer(5)
    assert answer["error"]["code"] == -32602
    assert "params.range.start" in answer["error"]["message"] and "Position.line" in answer["error"]["message"]
    await raw.send(frame(request(6, "workspace/executeCommand", {"command": "elelem.ask", "arguments": [{"prompt": "x", "uri": uri, "range": where}]})))
    ask = await raw.answer(6)
    assert ask["error"]["code"] == -32602 and "range.start.line" in ask["error"]["message"]
    stderr = await raw.stop()
    no_traceback(stderr)
    assert len(stderr.strip().splitlines()) <= 2  # one line per refusal at most


def test_a_server_bug_is_answered_without_its_traceback():
    from concurrent.futures import Future

    protocol = InProcess()
    failed: Future = Future()
    failed.set_exception(KeyError("a bug"))
    protocol.server.protocol._send_handler_result(failed, msg_id=3)  # what pygls does when a handler raises
    answer = json.loads(protocol.sent[-1].partition(b"\r\n\r\n")[2])
    assert answer["id"] == 3 and answer["error"]["code"] == -32603
    assert answer["error"].get("data") is None and "KeyError" in answer["error"]["message"]


# -- document URIs -----------------------------------------------------------------------------
async def command_error(editor, name: str, argument: dict) -> JsonRpcException:
    with pytest.raises(JsonRpcException) as caught:
        await editor.command(name, argument)
    return caught.value


SELECT_LINE_2 = {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 5}}


@pytest.mark.parametrize("uri", ["untitled:Untitled-1", "vscode-notebook-cell:/home/me/nb.ipynb#W0sZmlsZQ%3D%3D"])
async def test_a_document_that_is_not_a_file_is_asked_about_as_the_text_the_editor_sent(uri, project, start_editor):
    add_plugin(project, "echo")
    editor = await start_editor(project, settings={"provider": "echo"})
    editor.client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(text_document=lsp.TextDocumentItem(uri=uri, language_id="python", version=1, text="x = 1\ny = 2\n"))
    )
    result = await editor.ask("explain", uri=uri, range=SELECT_LINE_2)
    assert result["reply"] == f"explain\n\nBuffer: {uri} (line 2)\n```python\ny = 2\n```"


async def test_an_unopened_buffer_is_named_but_no_path_is_read_for_it(project, start_editor):
    add_plugin(project, "echo")
    (project / "Untitled-2").write_text("text on disk that must not be read\n")
    editor = await start_editor(project, settings={"provider": "echo"})
    result = await editor.ask("explain", uri="untitled:Untitled-2", range=SELECT_LINE_2)
    assert result["reply"] == "explain\n\nBuffer: untitled:Untitled-2 (the editor has not sent its text)"


UNUSABLE_URIS = [
    ("not a uri", "not a URI"),
    ("", "not a URI"),
    ("/etc/passwd", "not a URI"),
    ("file:///tmp/x\nfile:///etc/passwd", "not a URI"),
    ("file://elsewhere.example.com/etc/passwd", "another host"),
    ("file:///etc/passwd", "not inside a workspace folder"),
    ("file://{project}/../../../etc/passwd", "not inside a workspace folder"),
]


@pytest.mark.parametrize("uri, says", UNUSABLE_URIS)
def test_an_unusable_uri_names_uri_in_its_error(uri, says, project):
    from pygls.exceptions import JsonRpcInvalidParams

    from elelem_lsp.host.frontend import BadRequest
    from elelem_lsp.host.host import Host
    from elelem_lsp.server.documents import document_path

    from host.memory_frontend import MemoryFrontend

    host = Host(MemoryFrontend())
    host.sync_folders({project.as_uri(): project})
    uri = uri.format(project=project)
    with pytest.raises((JsonRpcInvalidParams, BadRequest)) as refused:
        host.agent_for(document_path(uri), uri)
    message = getattr(refused.value, "message", None) or str(refused.value)
    assert message.startswith("uri: ") and says in message


@pytest.mark.parametrize("uri, says", [UNUSABLE_URIS[4], UNUSABLE_URIS[6]])
async def test_an_unusable_uri_is_invalid_params_naming_it(uri, says, project, start_editor):
    add_plugin(project, "echo")
    editor = await start_editor(project, settings={"provider": "echo"})
    for name, argument in [
        ("elelem.ask", {"prompt": "x", "uri": uri.format(project=project)}),
        ("elelem.fix", {"uri": uri.format(project=project), "range": SELECT_LINE_2}),
    ]:
        error = await command_error(editor, name, argument)
        assert error.code == -32602 and error.message.startswith("uri: ") and says in error.message, (name, error.message)


# -- nothing reaches the client after a turn's end ---------------------------------------------
LATE_PLUGIN = '''
import asyncio, threading, time
import elelem_lsp

def leave_behind(emit, log, start):
    """Emit after the fetch has returned, as a forgotten thread or task would."""
    def later():
        time.sleep(0.3)
        for _ in range(3):
            try:
                emit({"type": "saying", "text": "LATE"})
                log.append("accepted")
            except Exception as error:
                log.append(type(error).__name__)
    start(later)

class Leaky:
    def __init__(self):
        self.log = []
    def fetch(self, messages, tools, emit):
        leave_behind(emit, self.log, lambda f: threading.Thread(target=f).start())
        emit({"type": "saying", "text": "on time"})

class LeakyAsync(Leaky):
    async def fetch(self, messages, tools, emit):
        leave_behind(emit, self.log, lambda f: asyncio.get_running_loop().run_in_executor(None, f))
        emit({"type": "saying", "text": "on time"})

class Reporter:
    def __init__(self, leaky):
        self.leaky = leaky
    async def fetch(self, messages, tools, emit):
        for _ in range(3000):  # while the leftover emits: until it tried all three (30 s at most)
            if len(self.leaky.log) == 3:
                break
            await asyncio.sleep(0.01)
        emit({"type": "saying", "text": ",".join(self.leaky.log)})

@elelem_lsp.configure
def setup(config):
    shared = {"leaky": Leaky(), "leaky-async": LeakyAsync()}
    for name, provider in shared.items():
        config.provider(name, lambda model=None, p=provider, **_: p)
        config.provider(name + "-report", lambda model=None, p=provider, **_: Reporter(p))
'''


@pytest.mark.parametrize("kind", ["leaky", "leaky-async"])
async def test_a_leftover_threads_late_emits_are_dropped_for_good(kind, project, start_editor):
    (project / ".agents" / "plugins").mkdir(parents=True)
    (project / ".agents" / "plugins" / "late.py").write_text(LATE_PLUGIN)
    editor = await start_editor(project)
    await editor.command("elelem.selectProvider", {"name": kind})
    first = await editor.ask("go", token="first")
    assert first["reply"] == "on time"
    await editor.command("elelem.selectProvider", {"name": f"{kind}-report"})
    second = await editor.ask("and?", token="second")  # the leftover emits during this turn
    assert second["reply"] == "TurnAbandoned,TurnAbandoned,TurnAbandoned"
    everything = json.dumps(dict(editor.progress))
    assert "LATE" not in everything
    assert editor.progress["first"][-1]["kind"] == "end"
