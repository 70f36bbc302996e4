"""ElelemProtocol: every message from the editor is checked before pygls handles it.

What is not JSON, not JSON-RPC, too early (before ``initialize``), too late (after
``shutdown``) or has params that do not fit the method is answered with the JSON-RPC
error that says so, without a traceback; a cancelled request stops its turn too.

An answer to one of the server's own requests is never answered back: one whose result does
not fit what the request asked for (checked strictly, where cattrs would make ``"no"`` true)
is logged, and the request fails with ``InvalidAnswer`` so that its caller goes on as it does
when the editor cannot do the thing (an edit not confirmed is refused).
"""

from __future__ import annotations

import functools
import json
import logging
import uuid
from collections.abc import Callable
from typing import Any

import cattrs
from lsprotocol import types as lsp
from pygls.exceptions import (
    JsonRpcException,
    JsonRpcInternalError,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
    JsonRpcParseError,
    JsonRpcServerNotInitialized,
)
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method
from pygls.workspace import TextDocument

log = logging.getLogger(__name__)


class ElelemProtocol(LanguageServerProtocol):
    """pygls' protocol, with messages checked before they are handled and cancellation that
    really stops a turn."""

    initialized = False  # an initialize request has been received

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.asked: dict[Any, str] = {}  # our requests awaiting an answer: id -> method

    on_cancel: Callable[[Any], None] = staticmethod(lambda msg_id: None)  # the request's turn is stopped
    # Told each didChange's changes with the document's text before them, when something keeps the recent edits
    # (next edit, for a client that asked for it); None spares every other client the cost.
    on_change: Callable[[TextDocument, str, Any], None] | None = None
    # Told each request as it arrives, before its handler starts (the messages read with it are
    # handled first): next edit notes the text its position is in.
    on_request: Callable[[str, Any], None] | None = None

    def receive(self, body: bytes) -> None:
        """One frame's body from the editor: handled, or answered with the error it deserves."""
        try:
            data = json.loads(body)
        except RecursionError:
            return self._refuse(None, JsonRpcParseError("Parse error: the message is nested too deeply"))
        except ValueError as error:  # not UTF-8, or not JSON
            return self._refuse(None, JsonRpcParseError(f"Parse error: {error}"))
        if not isinstance(data, dict):
            return self._refuse(None, JsonRpcInvalidRequest("Invalid request: a message must be a JSON object"))
        if "id" in data and "method" not in data:
            return self._take_answer(data)
        msg_id, method = data.get("id"), data.get("method")
        if "id" in data and (isinstance(msg_id, bool) or not isinstance(msg_id, (str, int))):
            return self._refuse(None, JsonRpcInvalidRequest("Invalid request: id must be a string or an integer"))
        if data.get("jsonrpc") != self.VERSION or ("method" in data and not isinstance(method, str)):
            return self._refuse(
                msg_id, JsonRpcInvalidRequest('Invalid request: not JSON-RPC 2.0 ("jsonrpc": "2.0" and a string method)')
            )
        refusal = self._out_of_order(method, is_request="id" in data and "method" in data)
        if refusal is not None:
            return self._refuse(msg_id, refusal) if "id" in data else None
        params = data.get("params")
        if (
            method == lsp.WORKSPACE_EXECUTE_COMMAND
            and isinstance(params, dict)
            and not isinstance(params.get("arguments", []), list)
        ):
            # cattrs would make a string into a list of its characters
            return self._refuse(msg_id, JsonRpcInvalidParams("Invalid params: params.arguments: must be an array"))
        problem = position_problem(method, params)
        if problem is not None:  # cattrs would make "3" the line 3
            return self._refuse(msg_id, JsonRpcInvalidParams(f"Invalid params: params.position.{problem}"))
        try:
            message = self.structure_message(data)
        except JsonRpcInvalidParams as error:
            return self._refuse(msg_id if "method" in data else None, JsonRpcInvalidParams(invalid_params(error)))
        except JsonRpcException as error:
            return self._refuse(msg_id if "method" in data else None, JsonRpcInvalidRequest(f"Invalid request: {error.message}"))
        if method == lsp.INITIALIZE:
            self.initialized = True
        self.handle_message(message)

    def send_request(self, method: str, params: Any | None = None, callback: Any = None, msg_id: Any = None) -> Any:
        msg_id = msg_id if msg_id is not None else str(uuid.uuid4())
        self.asked[msg_id] = method  # what the answer is checked against
        return super().send_request(method, params, callback, msg_id)

    def _take_answer(self, data: dict[str, Any]) -> None:
        """An answer to one of our requests: handed to its waiter, or its request failed; never answered."""
        msg_id = data["id"]
        if isinstance(msg_id, bool) or not isinstance(msg_id, (str, int)):
            log.warning("ignored an answer from the editor whose id is %s", type(msg_id).__name__)
            return
        method = self.asked.pop(msg_id, None)
        check = ANSWER_CHECKS.get(method) if "error" not in data else None
        problem = 'not JSON-RPC 2.0 ("jsonrpc": "2.0")' if data.get("jsonrpc") != self.VERSION else None
        problem = problem or (check(data.get("result")) if check else None)
        if problem is None:
            try:
                message = self.structure_message(data)
            except JsonRpcException as error:
                problem = invalid_params(error).removeprefix("Invalid params: ") if error.__cause__ else error.message
        if problem is not None:
            return self._fail_request(msg_id, method, problem)
        self.handle_message(message)

    def _fail_request(self, msg_id: Any, method: str | None, problem: str) -> None:
        what = method or f"request {msg_id}"
        log.warning("the editor's answer to %s is invalid (%s): taken as failed", what, problem)
        self._result_types.pop(msg_id, None)
        future = self._request_futures.pop(msg_id, None)
        if future is not None and not future.done():
            future.set_exception(InvalidAnswer(f"the editor's answer to {what} is invalid: {problem}"))

    def _out_of_order(self, method: str | None, *, is_request: bool) -> JsonRpcException | None:
        """The error for a message the protocol's state does not allow now (a notification gets none)."""
        if method is None or method == lsp.EXIT:
            return None
        if not self.initialized and method != lsp.INITIALIZE:
            return JsonRpcServerNotInitialized(f"the server is not initialized: send initialize before {method}")
        if self.initialized and method == lsp.INITIALIZE:
            return JsonRpcInvalidRequest("Invalid request: the server is already initialized")
        if self._shutdown:
            return JsonRpcInvalidRequest(f"Invalid request: the server is shutting down; {method} was not run")
        return None

    def _execute_handler(self, msg_id: Any, handler: Any, callback: Any, args: Any = None, kwargs: Any = None) -> None:
        """pygls' own, but the future of a notification's handler (and of a handler its built-in
        ones yield to) is forgotten once done: pygls keeps it under a fresh id that nothing ever
        removes, about 2 KB for every didChange of a session (measured with bench/completion.py)."""
        super()._execute_handler(msg_id, handler, callback, args, kwargs)
        answers_request = isinstance(callback, functools.partial) and callback.func == self._send_handler_result
        future = None if answers_request else self._request_futures.get(msg_id)
        if future is not None:
            future.add_done_callback(lambda _done: self._request_futures.pop(msg_id, None))

    def _refuse(self, msg_id: Any, error: JsonRpcException) -> None:
        log.warning("refused a message from the editor: %s", error.message)
        self._send_response(msg_id, error=error.to_response_error())

    def _send_response(self, msg_id: Any, result: Any = None, error: Any = None) -> None:
        if error is not None and isinstance(error.data, dict) and "traceback" in error.data:
            error.data = None  # how the server failed is its log's business, not the editor's
        super()._send_response(msg_id, result, error)

    @lsp_method(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: lsp.DidChangeTextDocumentParams) -> Any:
        """pygls' own handling, with ``on_change`` told the changes and the text before them."""
        if self.on_change is None:
            yield from super().lsp_text_document__did_change(params)
            return
        document = self.workspace.get_text_document(params.text_document.uri)
        before = document.source
        for change in params.content_changes:
            self.workspace.update_text_document(params.text_document, change)
        try:  # once for them all: several cursors' changes are one edit, as a full-text client sends it
            self.on_change(document, before, params.content_changes)
        except Exception:  # what keeps the edits must not lose the editor's text
            log.exception("could not note the change of %s", params.text_document.uri)
        if (handler := self.fm.features.get(lsp.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield handler, (params,), None

    def _handle_request(self, msg_id: Any, method_name: str, params: Any) -> None:
        if self.on_request is not None:
            try:
                self.on_request(method_name, params)
            except Exception:  # what notes the request must not lose it
                log.exception("could not note the request %s", method_name)
        super()._handle_request(msg_id, method_name, params)

    def _handle_cancel_notification(self, msg_id: Any) -> None:
        # pygls answers the request but leaves the command's coroutine running.
        self.on_cancel(msg_id)
        super()._handle_cancel_notification(msg_id)

    def _handle_response(self, msg_id: Any, result: Any = None, error: Any = None) -> None:
        # A reply to a request whose waiter was cancelled (pygls #621) would raise
        # InvalidStateError and pop up an error in the editor: drop it.
        future = self._request_futures.get(msg_id)
        if future is not None and future.done():
            self._request_futures.pop(msg_id, None)
            self._result_types.pop(msg_id, None)
            return
        super()._handle_response(msg_id, result, error)


class InvalidAnswer(JsonRpcInternalError):
    """The editor answered one of our requests with a result that does not fit it."""


def json_type(value: Any) -> str:
    names = {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "an array", dict: "an object"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def object_with(value: Any, **fields: tuple[type, ...]) -> str | None:
    """What is wrong with ``value`` as an object whose ``fields`` are of those types (by exact
    type: ``true`` is no integer); a field that may not be null must be there."""
    if not isinstance(value, dict):
        return f"must be an object, not {json_type(value)}"
    for name, types in fields.items():
        if name not in value:
            if type(None) not in types:
                return f"{name}: missing"
        elif type(value[name]) not in types:
            expected = " or ".join(EXPECTED[t] for t in types)
            return f"{name}: must be {expected}, not {json_type(value[name])}"
    return None


EXPECTED = {bool: "a boolean", int: "an integer", str: "a string", type(None): "null"}
POSITIONED = {lsp.TEXT_DOCUMENT_INLINE_COMPLETION, lsp.TEXT_DOCUMENT_COMPLETION}  # requests at a cursor we answer


def position_problem(method: Any, params: Any) -> str | None:
    """What is wrong with the cursor of a request that has one (checked on the JSON as it came)."""
    if method not in POSITIONED or not isinstance(params, dict) or "position" not in params:
        return None
    return object_with(params["position"], line=(int,), character=(int,))


OPTIONAL_STRING, OPTIONAL_INTEGER = (str, type(None)), (int, type(None))
# The answers the server's requests take, checked on the JSON as it came.
ANSWER_CHECKS: dict[str | None, Callable[[Any], str | None]] = {
    lsp.WORKSPACE_APPLY_EDIT: lambda r: object_with(
        r, applied=(bool,), failureReason=OPTIONAL_STRING, failedChange=OPTIONAL_INTEGER
    ),
    lsp.WINDOW_SHOW_DOCUMENT: lambda r: object_with(r, success=(bool,)),
    lsp.WINDOW_SHOW_MESSAGE_REQUEST: lambda r: None if r is None else object_with(r, title=(str,)),
    lsp.WORKSPACE_CONFIGURATION: lambda r: None if isinstance(r, list) else f"must be an array, not {json_type(r)}",
    lsp.WINDOW_WORK_DONE_PROGRESS_CREATE: lambda r: None if r is None else f"must be null, not {json_type(r)}",
    lsp.CLIENT_REGISTER_CAPABILITY: lambda r: None if r is None else f"must be null, not {json_type(r)}",
    "elelem/input": lambda r: None if r is None else object_with(r, text=OPTIONAL_STRING),
}


def invalid_params(error: JsonRpcException) -> str:
    """``Invalid params: <field>: <problem>`` from the cattrs error behind pygls' InvalidParams."""
    cause = error.__cause__
    if not isinstance(cause, cattrs.BaseValidationError):
        return "Invalid params"

    def problem(exc: BaseException, type_: Any) -> str:
        return str(exc) if isinstance(exc, (ValueError, TypeError)) else cattrs.v.format_exception(exc, type_)

    found = []
    for line in cattrs.transform_error(cause, format_exception=problem):
        text, _, path = line.rpartition(" @ ")
        found.append(f"{path.removeprefix('$.')}: {text}")
    return "Invalid params: " + "; ".join(found)


class AnsweredErrors(logging.Filter):
    """pygls logs a traceback for every error it answers with; a bad argument or a refused
    request is an answer the client shows, not a fault of the server."""

    def filter(self, record: logging.LogRecord) -> bool:
        if str(record.msg).startswith("Unable to deserialize message"):
            return False  # ElelemProtocol.receive answers it, in one line
        error = record.exc_info[1] if record.exc_info else None
        return not isinstance(error, JsonRpcException)
