"""ElelemProtocol: every message from the editor is checked before pygls handles it.

What is not JSON, not JSON-RPC, too early (before ``initialize``), too late (after
``shutdown``) or has params that do not fit the method is answered with the JSON-RPC
error that says so, without a traceback; a cancelled request stops its turn too.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

import cattrs
from lsprotocol import types as lsp
from pygls.exceptions import (
    JsonRpcException,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
    JsonRpcParseError,
    JsonRpcServerNotInitialized,
)
from pygls.protocol import LanguageServerProtocol

log = logging.getLogger(__name__)


class ElelemProtocol(LanguageServerProtocol):
    """pygls' protocol, with messages checked before they are handled and cancellation that
    really stops a turn."""

    initialized = False  # an initialize request has been received
    on_cancel: Callable[[Any], None] = staticmethod(lambda msg_id: None)  # the request's turn is stopped

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
        try:
            message = self.structure_message(data)
        except JsonRpcInvalidParams as error:
            return self._refuse(msg_id if "method" in data else None, JsonRpcInvalidParams(invalid_params(error)))
        except JsonRpcException as error:
            return self._refuse(msg_id if "method" in data else None, JsonRpcInvalidRequest(f"Invalid request: {error.message}"))
        if method == lsp.INITIALIZE:
            self.initialized = True
        self.handle_message(message)

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

    def _refuse(self, msg_id: Any, error: JsonRpcException) -> None:
        log.warning("refused a message from the editor: %s", error.message)
        self._send_response(msg_id, error=error.to_response_error())

    def _send_response(self, msg_id: Any, result: Any = None, error: Any = None) -> None:
        if error is not None and isinstance(error.data, dict) and "traceback" in error.data:
            error.data = None  # how the server failed is its log's business, not the editor's
        super()._send_response(msg_id, result, error)

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


def invalid_params(error: JsonRpcInvalidParams) -> str:
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
