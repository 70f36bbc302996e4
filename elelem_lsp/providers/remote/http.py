"""Shared HTTP streaming of the remote providers: httpx requests to the provider contract.

One place for what every HTTP provider does the same way: the client and its
timeouts (connect 10 s, read ``ELELEM_READ_TIMEOUT``), a non-2xx answer turned
into ``HTTP <code>: <the API's message>``, transport failures turned into plain
words, SSE (httpx-sse) and NDJSON bodies read as JSON, and tool-call argument
The gathering of tool-call fragments is shared with the local providers: ``..shaping``.

Every failure of a request, from sending it to the last byte of its answer,
leaves ``open_response`` as a ProviderError whose message has been scrubbed of
the credentials that request carried (headers and key-like URL parameters),
short ones included; ``agent/redaction.py`` then scrubs every provider's error of
the secrets in the environment and the settings.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import re
import ssl
import uuid
import weakref
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, overload
from urllib.parse import parse_qsl, quote, urlsplit

import httpx
from httpx_sse import EventSource, SSEError

from ...agent.messages import ProviderError
from ...agent.redaction import redact
from ...agent.wording import shorten
from ..environment import positive_number
from ..shaping import compact_json

CONNECT_TIMEOUT = 10.0
DEFAULT_READ_TIMEOUT = 600.0
READ_TIMEOUT_ENV = "ELELEM_READ_TIMEOUT"
ERROR_LENGTH = 300
FINISH_SECONDS = 0.5  # what the end of a finished answer may take to arrive
CREDENTIAL_HEADERS = ("authorization", "proxy-authorization", "x-api-key", "x-goog-api-key", "api-key")
CREDENTIAL_PARAMETER = re.compile(r"key|token|secret|signature|sig|password|auth", re.IGNORECASE)

Transport = httpx.AsyncBaseTransport


def read_timeout() -> float:
    """Seconds to wait for the next bytes of an answer, from ``ELELEM_READ_TIMEOUT``."""
    return positive_number(READ_TIMEOUT_ENV, DEFAULT_READ_TIMEOUT, float, "a number of seconds")


@functools.cache
def _verified_context() -> ssl.SSLContext:
    # Loading the CA bundle costs tens of milliseconds; every client of the process shares one.
    return httpx.create_ssl_context()


@functools.cache
def _unused_context() -> ssl.SSLContext:
    # httpx builds a context for every client unless handed one. An http:// request never
    # shakes hands, so it gets this one, which trusts nothing and so could verify nothing.
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


def tls_context(url: httpx.URL | str) -> ssl.SSLContext:
    """The context for requests to ``url``: the CA bundle only when the URL is https."""
    scheme = (parsed_url(url) if isinstance(url, str) else url).scheme  # asked at every request: parsed once
    return _verified_context() if scheme == "https" else _unused_context()


def http_client(url: httpx.URL | str, transport: Transport | None = None, timeout: float | None = None) -> httpx.AsyncClient:
    """A new client for requests to ``url``."""
    seconds = read_timeout() if timeout is None else timeout
    return httpx.AsyncClient(
        transport=transport, timeout=httpx.Timeout(seconds, connect=CONNECT_TIMEOUT), verify=tls_context(url)
    )


# Each event loop's clients, by what sets them apart: kept open, so that every request after the
# first reuses the connection (and the TLS session) the one before opened, as a turn's steps do.
_kept_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[Any, ...], httpx.AsyncClient]] = (
    weakref.WeakKeyDictionary()
)


def kept_client(url: httpx.URL | str, transport: Transport | None, timeout: float) -> httpx.AsyncClient:
    """The running loop's client for requests to ``url`` through ``transport``, its connections kept alive."""
    clients = _kept_clients.setdefault(asyncio.get_running_loop(), {})
    key = (tls_context(url), transport, timeout)
    if key not in clients or clients[key].is_closed:
        clients[key] = http_client(url, transport, timeout)
    return clients[key]


class EncodedMessages:
    """Each conversation message's JSON, encoded once and reused while the conversation lasts.

    Every request repeats the whole conversation; encoding a long one again each turn would
    cost more than everything else a request does. A message is known by identity: the
    session hands over the same dicts turn after turn and never changes them.
    """

    def __init__(self, shape: Callable[[Any], Any]) -> None:
        self.shape = shape  # one conversation message to its wire form
        self.known: dict[int, tuple[Any, bytes]] = {}
        self.placeholder = f"elelem-messages-{uuid.uuid4().hex}"  # no other text of a body can be it

    def body(self, fields: dict[str, Any], key: str, messages: list[Any]) -> bytes:
        """``fields`` as JSON, in their order, with ``key`` holding the messages' wire forms."""
        known, self.known = self.known, {}  # messages no longer sent are forgotten
        before, _, after = (
            compact_json({**fields, key: self.placeholder}).encode("utf-8").partition(f'"{self.placeholder}"'.encode())
        )
        parts = [before, b"["]
        for message in messages:
            entry = known.get(id(message))
            if entry is None or entry[0] is not message:
                entry = (message, compact_json(self.shape(message)).encode("utf-8"))
            self.known[id(message)] = entry
            parts += (entry[1], b",")
        if messages:
            parts.pop()  # the last comma
        parts += (b"]", after)
        return b"".join(parts)  # one copy of a long conversation, not three


def origin(url: httpx.URL | str) -> str:
    """Scheme, host and port only: what an error may say about where it went."""
    try:
        url = httpx.URL(url)
    except httpx.InvalidURL:
        return "the model server"
    port = f":{url.port}" if url.port else ""
    return f"{url.scheme}://{url.host}{port}"


@functools.lru_cache(maxsize=64)
def parsed_url(url: str) -> httpx.URL:
    """``url`` parsed once: httpx parses a URL in Python, a good part of a millisecond each request."""
    return httpx.URL(url)


def credentials(url: str, headers: dict[str, str]) -> list[str]:
    """The secret values a request carries: credential headers (with and without their
    scheme, e.g. ``Bearer``), key-like query parameters (``?key=``) and a password in the URL."""
    found: list[str] = []
    lowered = {name.lower(): value for name, value in headers.items()}
    for name in CREDENTIAL_HEADERS:
        value = (lowered.get(name) or "").strip()
        found += [value, value.partition(" ")[2].strip()]
    try:
        parts = urlsplit(url)  # lenient: a URL httpx refuses still has its secrets found
        raw = [pair.partition("=")[::2] for pair in parts.query.split("&")]  # as sent, and decoded
        found += [value for name, value in raw + parse_qsl(parts.query) if CREDENTIAL_PARAMETER.search(name)]
        found.append(parts.password or "")
    except ValueError:  # not even a URL: nothing in it can be told apart
        pass
    secrets = {secret for secret in found if len(secret) >= 4}
    secrets |= {quote(secret, safe="") for secret in secrets}  # as it appears inside a URL
    return sorted(secrets, key=len, reverse=True)


def error_message(data: Any) -> str | None:
    """The human part of an API's error value, whatever its dialect.

    OpenAI and Google nest ``{"error": {"message"}}`` (Google sometimes in a
    list), Anthropic ``{"type": "error", "error": {...}}``, Ollama
    ``{"error": "..."}``, FastAPI servers ``{"detail": [{"msg"}]}``.
    """
    if isinstance(data, list) and data:
        data = data[0]
    if isinstance(data, str):
        return data.strip() or None
    if isinstance(data, dict):
        for key in ("error", "message", "detail", "msg"):
            found = error_message(data.get(key))
            if found:
                return found
    return None


def api_message(body: bytes) -> str:
    text = body.decode("utf-8", errors="replace")
    try:
        return error_message(json.loads(text)) or text
    except ValueError:
        return text


def stream_failure(data: Any) -> ProviderError:
    """An error the server reported inside a stream that had started well."""
    message = error_message(data) or json.dumps(data)
    return ProviderError(f"the model server reported an error mid-answer: {shorten(message, ERROR_LENGTH)}")


# Self-hosted model servers refuse tool calls until started with these flags; the hint says which.
TOOL_FLAG_HINTS = (
    ("requires --jinja", "start llama-server with --jinja so that it accepts tools"),
    ("--enable-auto-tool-choice", "start vLLM with --enable-auto-tool-choice --tool-call-parser NAME (e.g. hermes)"),
)


def http_error(response: httpx.Response) -> ProviderError:
    """``HTTP <code>: <message>`` for a failed answer whose body has been read."""
    message = shorten(api_message(response.content), ERROR_LENGTH) or response.reason_phrase
    retry = response.headers.get("retry-after")
    if response.status_code == 429 and retry and retry.strip().isdigit():
        message += f" (retry after {retry.strip()} s)"
    for symptom, hint in TOOL_FLAG_HINTS:
        if symptom in message:
            message += f" ({hint})"
    return ProviderError(f"HTTP {response.status_code}: {message}")


def transport_error(error: httpx.TransportError, url: httpx.URL | str, timeout: float) -> ProviderError:
    where = origin(url)
    if isinstance(error, httpx.ConnectTimeout):
        return ProviderError(f"timed out connecting to {where} after {CONNECT_TIMEOUT:g} s")
    if isinstance(error, httpx.ConnectError):
        return ProviderError(f"cannot connect to {where}: {error}")
    if isinstance(error, httpx.ReadTimeout):
        return ProviderError(f"{where} sent nothing for {timeout:g} s (set {READ_TIMEOUT_ENV} to wait longer)")
    if isinstance(error, (httpx.RemoteProtocolError, httpx.ReadError)):
        return ProviderError(f"the connection to {where} dropped mid-answer ({error or type(error).__name__})")
    return ProviderError(f"request to {where} failed: {type(error).__name__}: {error}")


@asynccontextmanager
async def open_response(
    method: str,
    url: str,
    *,
    body: Any = None,
    headers: dict[str, str] | None = None,
    transport: Transport | None = None,
) -> AsyncIterator[httpx.Response]:
    """A streaming request whose 2xx response is yielded unread; anything else raises.

    Whatever fails inside the block, here or while the caller reads the body, leaves
    as a ProviderError scrubbed of the request's credentials; leaving the block
    (normally, by error or by cancellation) ends the response: a connection whose answer was
    read to its end stays open for the next request, any other is closed.
    """
    timeout = read_timeout()
    request_headers = {"accept": "application/json", **(headers or {})}
    secrets = credentials(url, request_headers)
    content = None
    if body is not None:  # a dict, or JSON already encoded (EncodedMessages)
        content = body if isinstance(body, bytes) else compact_json(body).encode("utf-8")
        request_headers["content-type"] = "application/json"
    client = kept_client(url, transport, timeout)
    try:
        async with client.stream(method, parsed_url(url), content=content, headers=request_headers) as response:
            if not response.is_success:
                await response.aread()
                raise http_error(response)
            yield response
            await finish(response)
    except Exception as error:  # the one exit of every provider failure: scrubbed here
        raise ProviderError(redact(failure_message(error, url, timeout), secrets)) from None


async def finish(response: httpx.Response) -> None:
    """Read what is left of an answer its reader was done with (the stream's last, empty chunk after
    ``[DONE]`` or ``message_stop``), so that its connection can serve the next request; one that
    goes on sending is closed instead."""
    if response.is_closed:
        return

    async def rest() -> None:
        async for _ in response.stream:  # type: ignore[union-attr]  # below the reader's own iterator, which stopped
            pass

    with contextlib.suppress(TimeoutError, httpx.HTTPError):  # leaving the block closes it
        await asyncio.wait_for(rest(), FINISH_SECONDS)


def failure_message(error: Exception, url: str, timeout: float) -> str:
    """What went wrong with a request, in plain words (not yet redacted)."""
    if isinstance(error, ProviderError):
        return str(error)
    if isinstance(error, httpx.TransportError):
        return str(transport_error(error, url, timeout))
    if isinstance(error, httpx.StreamError):  # e.g. a stream closed under our feet
        return f"the answer from {origin(url)} could not be read: {error}"
    if isinstance(error, httpx.InvalidURL):
        return f"the model server's URL is not valid: {error}"
    # a provider's reader tripping over a shape it did not expect
    return f"unexpected answer from {origin(url)}: {type(error).__name__}: {error}"


async def request_json(method: str, url: str, **options: Any) -> Any:
    """A whole JSON answer (not streamed), with the errors of ``open_response``."""
    async with open_response(method, url, **options) as response:
        await response.aread()
        return parse_json(response.text, f"answer from {origin(url)}")


def parse_json(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        raise ProviderError(f"malformed {what}: {shorten(text, 120)!r}") from None


async def sse_events(response: httpx.Response) -> AsyncIterator[tuple[str, str]]:
    """``(event name, data)`` for each server-sent event of the body, read with httpx-sse."""
    try:
        async for event in EventSource(response).aiter_sse():
            yield event.event, event.data
    except SSEError:
        await response.aread()
        kind = response.headers.get("content-type", "no content type")
        raise ProviderError(
            f"{origin(response.url)} answered {kind} instead of an event stream: {shorten(response.text, 120)!r}"
        ) from None


async def ndjson_lines(response: httpx.Response) -> AsyncIterator[Any]:
    """Each non-empty line of the body parsed as JSON."""
    async for line in response.aiter_lines():
        if line.strip():
            yield parse_json(line, f"line from {origin(response.url)}")


@overload
def env(name: str, default: str) -> str: ...
@overload
def env(name: str, default: None = None) -> str | None: ...


def env(name: str, default: str | None = None) -> str | None:
    """An environment variable, empty counting as unset."""
    value = os.environ.get(name, "").strip()
    return value or default
