"""What goes wrong with an MCP server, as exceptions the connection raises and as one line the person reads."""

from __future__ import annotations


class ServerGone(Exception):
    """The server's connection ended or never began; the message says how."""


class NotSent(ServerGone):
    """The connection had ended before the call went out: the server never saw it."""


class InvalidResult(Exception):
    """The server answered with what the SDK does not accept as a tool result."""


def lost_connection(error: BaseException) -> bool:
    """Whether what a call raised says the transport failed (rather than that an answer was wrong)."""
    import anyio
    import httpx2

    return isinstance(
        error, (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, httpx2.TransportError, OSError)
    )


def refused_connection(error: BaseException | None) -> bool:
    """Whether the session ended because the HTTP server could not be reached: no request got to it."""
    import httpx2

    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return isinstance(error, httpx2.ConnectError)


def unreadable(error: Exception) -> str:
    """A line the SDK could not read, in short: what was wrong and the start of the line."""
    errors = getattr(error, "errors", None)
    if callable(errors):  # pydantic's ValidationError: the JSON or the message shape was wrong
        first = errors()[0]
        return f"{first['msg']}: {str(first.get('input', ''))[:80]!r}"
    return describe_error(error)


def describe_error(error: BaseException) -> str:
    """What went wrong in one line: the first real error inside the SDK's exception groups."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    if isinstance(error, OSError) and error.strerror:
        return f"{error.strerror}: {error.filename}" if error.filename else error.strerror
    message = getattr(getattr(error, "error", None), "message", None) or str(error)
    return message or type(error).__name__
