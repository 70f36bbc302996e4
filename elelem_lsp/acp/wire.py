"""The ACP face's input, checked line by line before the SDK sees it.

Bridges the client's stdin to the SDK's connection (``acp`` 0.12.1) as its message transport,
so that no line a client sends ends the agent. The SDK's own reading skips a line that is not
JSON without an answer, and a JSON line that is not an object (a number, a string, an array,
``null``) or whose ``id`` or ``error`` has the wrong type raises in its receive loop, which then
stops for good. Here each line gets what JSON-RPC 2.0 prescribes instead:

- not JSON: ``-32700`` Parse error, ``id`` null;
- not a request, a notification or a response (not an object, a batch, a wrong ``jsonrpc``,
  ``method`` or ``id``): ``-32600`` Invalid Request, with the request's ``id`` when one can be
  read, else null;
- a request before ``initialize``: ``-32600``, saying to initialize first (ACP: "before a session
  can be created, clients MUST initialize the connection");
- ``initialize`` whose ``protocolVersion`` is not an integer 0..65535: ``-32602`` Invalid params
  (a date string, which old clients sent, is version 0, and is answered with ours as any version
  we do not speak is);
- a notification that is wrong in any of these ways: nothing (JSON-RPC never answers one), logged;
- an answer to one of our own requests is never answered: one that is malformed, or whose result
  does not fit the request (checked strictly, where pydantic would take ``"true"`` for true), is
  handed on as an error, so the request waiting for it fails (a permission question counts as
  refused) instead of raising where nothing expects it, or waiting on.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from typing import Any

from acp._transport import NdjsonTransport
from acp.schema import (
    CreateTerminalResponse,
    KillTerminalResponse,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    RequestPermissionResponse,
    TerminalOutputResponse,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)
from acp.task import MessageSender, TaskSupervisor
from pydantic import BaseModel, ValidationError

log = logging.getLogger(__name__)

PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS, INTERNAL_ERROR = -32700, -32600, -32602, -32603
LEGACY_VERSION = re.compile(r"\d{4}-\d{2}-\d{2}")  # what clients sent before versions were integers
MAX_VERSION = 65535
SHOWN = 200  # characters of a bad line quoted in the log
# What the client's answer to each of our requests must be; the second is whether null will do.
ANSWERS: dict[str, tuple[type[BaseModel], bool]] = {
    "session/request_permission": (RequestPermissionResponse, False),
    "fs/read_text_file": (ReadTextFileResponse, False),
    "fs/write_text_file": (WriteTextFileResponse, True),
    "terminal/create": (CreateTerminalResponse, False),
    "terminal/output": (TerminalOutputResponse, False),
    "terminal/wait_for_exit": (WaitForTerminalExitResponse, False),
    "terminal/kill": (KillTerminalResponse, True),
    "terminal/release": (ReleaseTerminalResponse, True),
}


class BadMessage(Exception):
    """A line that is no valid message: its answer's code and what was wrong."""

    def __init__(self, code: int, reason: str) -> None:
        super().__init__(reason)
        self.code = code


class CheckedTransport(NdjsonTransport):
    """The SDK's newline-delimited JSON transport, handing on only well-formed messages."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        super().__init__(reader, MessageSender(writer, TaskSupervisor(source="elelem.acp.wire")))
        self.initialized = False
        self.asked: dict[Any, str] = {}  # our requests awaiting an answer: id -> method

    async def send(self, message: dict[str, Any]) -> None:
        if "method" in message and "id" in message:
            self.asked[message["id"]] = message["method"]
        await super().send(message)

    async def receive(self) -> dict[str, Any] | None:
        while True:
            line = await self._read_line()
            if not line:
                return None  # the end of the input
            line = line.strip()
            if not line:
                continue
            message = await self._checked(line)
            if message is not None:
                return message

    async def _checked(self, line: bytes) -> dict[str, Any] | None:
        """The message on ``line``, or None once a bad one has been answered (or logged)."""
        try:
            message = json.loads(line)
        except (ValueError, RecursionError) as error:  # also a line not UTF-8, or nested too deep
            await self._refuse(None, PARSE_ERROR, f"not JSON: {error}", line)
            return None
        if not isinstance(message, dict):
            what = "a batch (an array)" if isinstance(message, list) else f"a JSON {json_type(message)}"
            await self._refuse(None, INVALID_REQUEST, f"{what} is not a message: send one JSON object per line", line)
            return None
        if "method" not in message and ("result" in message or "error" in message):
            return self._answer(message, line)
        try:
            self._check_request(message)
        except BadMessage as error:
            if "id" in message or "method" not in message:  # a notification is never answered
                request = message.get("id") if "method" in message and valid_id(message.get("id")) else None
                await self._refuse(request, error.code, str(error), line)
            else:
                log.warning("ignored a notification: %s: %s", error, shown(line))
            return None
        return message

    def _check_request(self, message: dict[str, Any]) -> None:
        if "method" not in message:
            raise BadMessage(INVALID_REQUEST, "neither a request (no method) nor a response (no result or error)")
        if message.get("jsonrpc") != "2.0":
            raise BadMessage(INVALID_REQUEST, 'jsonrpc: must be "2.0"')
        if not isinstance(message["method"], str):
            raise BadMessage(INVALID_REQUEST, "method: must be a string")
        if "id" in message and not valid_id(message["id"]):
            raise BadMessage(INVALID_REQUEST, "id: must be a string or an integer")
        params = message.get("params")
        if params is not None and not isinstance(params, (dict, list)):
            raise BadMessage(INVALID_REQUEST, f"params: must be an object, not a {json_type(params)}")
        if message["method"] == "initialize":
            protocol_version(params)
            self.initialized = True
        elif not self.initialized:
            raise BadMessage(INVALID_REQUEST, f"{message['method']} before initialize: initialize the connection first")

    def _answer(self, message: dict[str, Any], line: bytes) -> dict[str, Any] | None:
        """An answer to one of our requests as the SDK can take it: one it cannot match is dropped
        (never answered); a malformed one it can match becomes an error, so that request fails."""
        request = message.get("id")
        if not valid_id(request) or request is None:
            log.warning("ignored a message that is neither a request nor an answer to ours: %s", shown(line))
            return None
        problem = answer_problem(message, self.asked.pop(request, None))
        if problem is None:
            return message
        log.warning("the client's answer to request %r is taken as its failure (%s): %s", request, problem, shown(line))
        error = {"code": INTERNAL_ERROR, "message": f"the client's answer is invalid: {problem}"}
        return {"jsonrpc": "2.0", "id": request, "error": error}

    async def _refuse(self, request: Any, code: int, reason: str, line: bytes) -> None:
        log.warning("answered %s: %s: %s", code, reason, shown(line))
        names = {PARSE_ERROR: "Parse error", INVALID_REQUEST: "Invalid Request", INVALID_PARAMS: "Invalid params"}
        error = {"code": code, "message": names[code], "data": {"details": reason}}
        await self.send({"jsonrpc": "2.0", "id": request, "error": error})


def protocol_version(params: Any) -> int:
    """``initialize``'s ``protocolVersion``: an integer 0..65535, or 0 for an old date string."""
    version = params.get("protocolVersion") if isinstance(params, dict) else None
    if isinstance(version, str) and LEGACY_VERSION.fullmatch(version):
        return 0
    if not isinstance(version, int) or isinstance(version, bool) or not 0 <= version <= MAX_VERSION:
        raise BadMessage(INVALID_PARAMS, f"protocolVersion: must be an integer from 0 to {MAX_VERSION}, got {version!r}")
    return version


def answer_problem(message: dict[str, Any], method: str | None) -> str | None:
    """What is wrong with an answer to our request ``method``; None when nothing is."""
    if message.get("jsonrpc") != "2.0":
        return 'jsonrpc: must be "2.0"'
    if "error" in message:
        error = message["error"]
        if isinstance(error, dict) and type(error.get("code")) is int and isinstance(error.get("message"), str):
            return None
        return "error: must be an object with an integer code and a string message"
    model, may_be_null = ANSWERS.get(method or "", (None, True))
    result = message.get("result")
    if model is None or (result is None and may_be_null):
        return None
    try:
        model.model_validate_json(json.dumps(result), strict=True)  # JSON's types, as they came
    except ValidationError as error:
        first = error.errors()[0]
        return f"{'.'.join(str(part) for part in first['loc']) or 'result'}: {first['msg']}"
    return None


def valid_id(value: Any) -> bool:
    """A JSON-RPC id: a string, an integer (not a boolean, which Python would take for 0 or 1) or null."""
    return value is None or isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def json_type(value: Any) -> str:
    names = {bool: "boolean", int: "number", float: "number", str: "string", list: "array", dict: "object"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def shown(line: bytes) -> str:
    text = line.decode("utf-8", "replace")
    return text if len(text) <= SHOWN else text[: SHOWN - 1] + "…"
