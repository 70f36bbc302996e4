"""No line a client writes to ``elelem-lsp acp`` ends the agent; each gets what JSON-RPC 2.0 and ACP prescribe.

The real agent runs as a subprocess; raw bytes go to its stdin and its stdout is read line by
line. Each bad line is followed by a good request, whose answer must be the very next line
(so a line that must get nothing got nothing), and at the end a session is made and listed.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from acp import PROTOCOL_VERSION

from scaffold import add_plugin, write_script

PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602


class RawAgent:
    """``elelem-lsp acp`` spoken to in bytes."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.ids = iter(range(1000, 10**6))

    async def send(self, line: bytes | str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write((line.encode() if isinstance(line, str) else line) + b"\n")
        await self.process.stdin.drain()

    async def next_message(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = await asyncio.wait_for(self.process.stdout.readline(), 30)
        assert line, f"the agent ended (exit status {await self.process.wait()})"
        return json.loads(line)

    async def request(self, method: str, params: Any) -> dict[str, Any]:
        """A good request; its answer, which must be the next message the agent writes."""
        request = next(self.ids)
        await self.send(json.dumps({"jsonrpc": "2.0", "id": request, "method": method, "params": params}))
        answer = await self.next_message()
        while "method" in answer and "id" not in answer:  # the agent's own notifications (session/update)
            answer = await self.next_message()
        assert answer.get("id") == request, f"expected the answer to {method} {request}, got {answer}"
        return answer

    async def initialize(self, version: Any = PROTOCOL_VERSION) -> dict[str, Any]:
        return await self.request("initialize", {"protocolVersion": version, "clientCapabilities": {}})

    async def still_answers(self, root: Path) -> None:
        answer = await self.request("session/list", {"cwd": str(root)})
        assert "result" in answer and isinstance(answer["result"]["sessions"], list), answer


@pytest_asyncio.fixture
async def agent(project: Path):
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "elelem_lsp", "acp", cwd=project,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
        limit=2**24,
    )
    yield RawAgent(process)
    if process.returncode is None:
        process.stdin.close()
        try:
            await asyncio.wait_for(process.wait(), 10)
        except TimeoutError:
            process.kill()
            await process.wait()


def error_of(answer: dict[str, Any]) -> tuple[Any, int]:
    assert answer.get("jsonrpc") == "2.0" and "result" not in answer, answer
    return answer["id"], answer["error"]["code"]


NOT_JSON = [
    b"{",
    b'{"jsonrpc": "2.0", "id": 1, "method": ',
    b"not json at all",
    b"{'single': 'quotes'}",
    b'{"a": 1}}',
    b"\xff\xfe{}",  # not UTF-8
    b"[" * 100_000,  # nested too deep to parse
    b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1,}}',
]
NOT_A_MESSAGE = [
    b"1", b"-3.5", b"NaN", b'"a string"', b"null", b"true", b"[]", b"{}", b'{"jsonrpc": "2.0", "id": 4}',
    json.dumps([{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}]).encode(),
]
# A request whose id can be read is answered with it; else with null.
BAD_REQUESTS = [
    ({"jsonrpc": "2.0", "id": 7, "method": 5}, 7),
    ({"jsonrpc": "2.0", "id": "seven", "method": None}, "seven"),
    ({"jsonrpc": "1.0", "id": 8, "method": "session/list", "params": {}}, 8),
    ({"id": 9, "method": "session/list", "params": {}}, 9),
    ({"jsonrpc": "2.0", "id": 10, "method": "session/new", "params": "x"}, 10),
    ({"jsonrpc": "2.0", "id": 11, "method": "session/new", "params": 3}, 11),
    ({"jsonrpc": "2.0", "id": {"a": 1}, "method": "session/list", "params": {}}, None),
    ({"jsonrpc": "2.0", "id": [1], "method": "session/list", "params": {}}, None),
    ({"jsonrpc": "2.0", "id": 1.5, "method": "session/list", "params": {}}, None),
    ({"jsonrpc": "2.0", "id": True, "method": "session/list", "params": {}}, None),
]
BAD_VERSIONS = ["1", "banana", None, True, 1.5, -1, 65536, {}, [1]]
BAD_NOTIFICATIONS = [
    {"jsonrpc": "2.0", "method": "session/cancel", "params": 5},
    {"jsonrpc": "2.0", "method": "session/cancel", "params": "x"},
    {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": 5}},
    {"jsonrpc": "2.0", "method": "session/cancel", "params": {}},
    {"jsonrpc": "2.0", "method": "session/cancel", "params": None},
    {"jsonrpc": "2.0", "method": "session/cancel", "params": [1, 2]},
    {"jsonrpc": "2.0", "method": "no/such/notification", "params": {}},
    {"jsonrpc": "2.0", "method": 5},
    {"jsonrpc": "1.0", "method": "session/cancel", "params": {"sessionId": "x"}},
    {"method": "session/cancel", "params": {"sessionId": "x"}},
]
# Answers to requests the agent never made, or malformed: never answered.
STRAY_RESPONSES = [
    {"jsonrpc": "2.0", "id": 99, "result": {}},
    {"jsonrpc": "2.0", "id": 98, "error": {"code": -1, "message": "no"}},
    {"jsonrpc": "2.0", "id": 3, "error": "boom"},
    {"jsonrpc": "2.0", "id": 3, "error": {"code": "x"}},
    {"jsonrpc": "2.0", "id": [1], "result": 1},
    {"jsonrpc": "2.0", "id": {"x": 1}, "error": "boom"},
    {"jsonrpc": "2.0", "id": True, "result": None},
    {"jsonrpc": "2.0", "id": None, "result": None},
    {"jsonrpc": "2.0", "result": 1},
]


async def test_lines_that_are_not_json_get_a_parse_error_and_the_agent_goes_on(agent, project):
    await agent.initialize()
    for line in NOT_JSON:
        await agent.send(line)
        assert error_of(await agent.next_message()) == (None, PARSE_ERROR), line[:40]
        await agent.still_answers(project)


async def test_json_that_is_not_a_message_is_an_invalid_request_and_the_agent_goes_on(agent, project):
    for line in NOT_A_MESSAGE:  # before initialize too: nothing in it can be answered otherwise
        await agent.send(line)
        assert error_of(await agent.next_message()) == (None, INVALID_REQUEST), line
    await agent.initialize()
    for line in NOT_A_MESSAGE:
        await agent.send(line)
        assert error_of(await agent.next_message()) == (None, INVALID_REQUEST), line
        await agent.still_answers(project)


async def test_requests_of_the_wrong_shape_are_answered_with_their_id_when_it_can_be_read(agent, project):
    await agent.initialize()
    for request, answered_id in BAD_REQUESTS:
        await agent.send(json.dumps(request))
        answer = await agent.next_message()
        assert error_of(answer) == (answered_id, INVALID_REQUEST), request
        await agent.still_answers(project)


async def test_requests_before_initialize_are_refused_and_notifications_ignored(agent, project):
    for method, params in [("session/new", {"cwd": str(project), "mcpServers": []}), ("session/list", {}),
                           ("session/prompt", {"sessionId": "x", "prompt": []}), ("no/such/method", {}),
                           ("authenticate", {"methodId": "x"})]:
        answer = await agent.request(method, params)
        assert answer["error"]["code"] == INVALID_REQUEST and "initialize" in answer["error"]["data"]["details"], method
    await agent.send(json.dumps({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "x"}}))
    answer = await agent.initialize()
    assert answer["result"]["protocolVersion"] == PROTOCOL_VERSION
    await agent.still_answers(project)


@pytest.mark.parametrize("after_a_good_one", [False, True], ids=["first", "second"])
async def test_initialize_with_a_version_that_is_no_integer_is_invalid_params(agent, project, after_a_good_one):
    if after_a_good_one:
        await agent.initialize()
    for version in BAD_VERSIONS:
        answer = await agent.initialize(version)
        assert answer["error"]["code"] == INVALID_PARAMS and "protocolVersion" in answer["error"]["data"]["details"], version
    for params in ({}, {"clientCapabilities": {}}, None):  # no version at all
        answer = await agent.request("initialize", params)
        assert answer["error"]["code"] in (INVALID_PARAMS, INVALID_REQUEST), params
    if not after_a_good_one:  # none of those initialized the connection
        answer = await agent.request("session/list", {"cwd": str(project)})
        assert answer["error"]["code"] == INVALID_REQUEST
    await agent.initialize()
    await agent.still_answers(project)


@pytest.mark.parametrize("version", [0, 1, 2, 7, 65535, "2024-11-05"])
async def test_any_integer_version_is_answered_with_ours(agent, project, version):
    """ACP's negotiation: the same version when we speak it, else the latest we do (an old date string is 0)."""
    assert (await agent.initialize(version))["result"]["protocolVersion"] == PROTOCOL_VERSION
    await agent.still_answers(project)


async def test_bad_notifications_and_stray_responses_get_nothing_back(agent, project):
    await agent.initialize()
    for message in BAD_NOTIFICATIONS + STRAY_RESPONSES:
        await agent.send(json.dumps(message))
        await agent.still_answers(project)  # the next line is its answer: nothing came before it


async def test_after_every_kind_of_bad_line_a_session_still_works(agent, project):
    lines = [*NOT_JSON, *NOT_A_MESSAGE, *(json.dumps(m).encode() for m in BAD_NOTIFICATIONS + STRAY_RESPONSES)]
    for line in lines:
        await agent.send(line)
    await agent.send(json.dumps({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {"protocolVersion": 1}}))
    refused = []
    while (message := await agent.next_message()).get("id") != "init":
        refused.append(error_of(message))
    assert refused == [(None, PARSE_ERROR)] * len(NOT_JSON) + [(None, INVALID_REQUEST)] * len(NOT_A_MESSAGE)
    assert message["result"]["protocolVersion"] == PROTOCOL_VERSION
    new = await agent.request("session/new", {"cwd": str(project), "mcpServers": []})
    assert new["result"]["sessionId"]
    await agent.still_answers(project)
    assert agent.process.returncode is None


INVALID_PERMISSION_ANSWERS = [
    {"result": {}}, {"result": None}, {"result": 5}, {"result": "allow"}, {"result": [1]}, {"result": True},
    {"result": {"outcome": "selected"}}, {"result": {"outcome": {"outcome": "yes"}}},
    {"result": {"outcome": {"outcome": "selected", "optionId": 0}}},
    {"result": {"outcome": {"outcome": "selected"}}},
    {"error": "boom"}, {"error": {"code": "x", "message": "no"}},
    {"result": {"outcome": {"outcome": "selected", "optionId": "option-0"}}, "jsonrpc": "1.0"},
]


async def test_an_invalid_answer_to_a_permission_question_runs_nothing_and_the_turn_ends(project, home):
    add_plugin(project, "scripted")
    settings = home / ".config" / "elelem-lsp" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"provider": "scripted"}))
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "elelem_lsp", "acp", "--trust", cwd=project, stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
    )
    agent = RawAgent(process)
    try:
        await agent.initialize()
        session = (await agent.request("session/new", {"cwd": str(project), "mcpServers": []}))["result"]["sessionId"]
        for number, answer in enumerate(INVALID_PERMISSION_ANSWERS):
            call = {"type": "doing", "id": f"x{number}", "name": "execute", "arguments": {"command": f"touch ran-{number}.txt"}}
            write_script(project, [[call]])
            prompt = {"sessionId": session, "prompt": [{"type": "text", "text": "run it"}]}
            await agent.send(json.dumps({"jsonrpc": "2.0", "id": f"p{number}", "method": "session/prompt", "params": prompt}))
            asked, said = False, []
            while (message := await agent.next_message()).get("id") != f"p{number}":
                update = message.get("params", {}).get("update", {}) if message.get("method") == "session/update" else {}
                if update.get("status") == "failed":
                    said += [part["content"]["text"] for part in update.get("content", [])]
                if message.get("method") == "session/request_permission":
                    asked = True
                    await agent.send(json.dumps({"jsonrpc": "2.0", "id": message["id"], **answer}))
                assert "method" in message or "id" not in message or message["id"] is not None, message
            assert asked, answer
            assert message["result"]["stopReason"] == "end_turn", (answer, message)
            assert not (project / f"ran-{number}.txt").exists(), answer
            [refusal] = said  # the call failed, and says why in a sentence, not a validation dump
            assert refusal.startswith(f"not allowed to run 'touch ran-{number}.txt': the client could not ask for permission: "
                                      "the client's answer is invalid: "), refusal
        await agent.still_answers(project)
    finally:
        process.stdin.close()
        await asyncio.wait_for(process.wait(), 10)
