"""The JSON-RPC errors of the ACP face: a bad request names its field, as the LSP face's do."""

from __future__ import annotations

from acp import RequestError


def invalid(field: str, message: str) -> RequestError:
    """InvalidParams whose message names the field, as the LSP face's errors do."""
    return RequestError(-32602, f"{field}: {message}", {field: message})
