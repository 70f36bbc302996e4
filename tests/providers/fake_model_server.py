"""A fake model server for the provider tests: real HTTP on 127.0.0.1, the real wire formats.

It answers like OpenAI's chat completions (SSE), Anthropic's Messages API and
Vertex's streamRawPredict (SSE with named events), Ollama's /api/chat (NDJSON)
and Google's OAuth token endpoint. Bodies are built from the shapes those APIs
send (recorded field for field), streamed with chunked transfer encoding.

Two ways to answer:
- ``server.queue(Reply(...))``: the next request gets exactly that reply, which
  may cut bytes mid-UTF-8, or drop the connection mid-stream;
- otherwise a scripted model plays the round trip every agent test needs: asked
  with a ``read`` tool and no tool result yet, it calls ``read`` on README.md;
  once the result is in, it answers ``the tool said: <result>``.

Every request is recorded (``server.requests``) for the tests to inspect. A
queued reply may hold ``KEY_ECHO``: it is replaced by the credential the request
carried (bearer token, ``x-api-key``, ``x-goog-api-key`` or ``?key=``), as APIs
quote a key back in their errors.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

FAKE_TOKEN = "ya29.fake-vertex-token"
SERVED_MODEL = "served-model-7b"
KEY_ECHO = "@@KEY@@"


# -- wire encoders ---------------------------------------------------------------------------------
def compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def sse(data: Any, event: str | None = None) -> bytes:
    """One server-sent event; ``data`` as given when it is a string, else JSON."""
    text = data if isinstance(data, str) else compact(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {text}\n\n".encode()


def ndjson(line: Any) -> bytes:
    return (compact(line) + "\n").encode()


# -- recorded shapes: OpenAI chat completions ------------------------------------------------------
def openai_chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
        "object": "chat.completion.chunk",
        "created": 1741570283,
        "model": "gpt-4o-2024-08-06",
        "system_fingerprint": "fp_eb9dce56a8",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        **extra,
    }


def openai_usage_chunk(usage: dict[str, Any] | None = None) -> dict[str, Any]:
    """The last chunk when ``stream_options.include_usage`` was asked: no choices, the usage."""
    chunk = openai_chunk({})
    chunk["choices"] = []
    chunk["usage"] = usage or {"prompt_tokens": 80, "completion_tokens": 17, "total_tokens": 97}
    return chunk


def openai_text(parts: list[str], *, reasoning: list[str] = (), done: bool = True) -> list[bytes]:
    """A streamed text answer: role chunk, reasoning deltas, text deltas, finish, usage, [DONE]."""
    chunks = [openai_chunk({"role": "assistant", "content": "", "refusal": None})]
    chunks += [openai_chunk({"reasoning_content": r}) for r in reasoning]
    chunks += [openai_chunk({"content": p}) for p in parts]
    chunks += [openai_chunk({}, "stop"), openai_usage_chunk()]
    body = [sse(c) for c in chunks]
    return body + [sse("[DONE]")] if done else body


def openai_tool_calls(calls: list[tuple[str, str, list[str]]], *, interleave: bool = True) -> list[bytes]:
    """Streamed tool calls ``(id, name, argument fragments)``; interleaved by index when asked."""
    chunks = [openai_chunk({"role": "assistant", "content": None, "refusal": None})]
    heads = [
        openai_chunk({"tool_calls": [{"index": i, "id": cid, "type": "function", "function": {"name": name, "arguments": ""}}]})
        for i, (cid, name, _) in enumerate(calls)
    ]
    fragments = [
        [openai_chunk({"tool_calls": [{"index": i, "function": {"arguments": f}}]}) for f in parts]
        for i, (_, _, parts) in enumerate(calls)
    ]
    if interleave:
        chunks += heads
        longest = max(len(f) for f in fragments)
        for step in range(longest):
            chunks += [f[step] for f in fragments if step < len(f)]
            chunks.append(openai_chunk({}))  # an empty delta between fragments
    else:
        for head, parts in zip(heads, fragments):
            chunks += [head, *parts]
    chunks += [openai_chunk({}, "tool_calls"), openai_usage_chunk()]
    return [sse(c) for c in chunks] + [sse("[DONE]")]


# -- recorded shapes: Anthropic Messages -----------------------------------------------------------
def anthropic_event(payload: dict[str, Any]) -> bytes:
    return sse(payload, event=payload["type"])


def anthropic_message(
    blocks: list[dict[str, Any]],
    *,
    stop_reason: str = "end_turn",
    stop: bool = True,
    start_usage: dict[str, Any] | None = None,
    delta_usage: dict[str, Any] | None = None,
) -> list[bytes]:
    """A streamed message. Each block: ``{"text": [..]}``, ``{"thinking": [..], "signature": [..]}``
    or ``{"tool_use": (id, name, [json fragments])}``; a ping follows the first block's start.
    ``start_usage``/``delta_usage``: the counts of message_start and message_delta."""
    events = [
        {
            "type": "message_start",
            "message": {
                "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
                "type": "message",
                "role": "assistant",
                "content": [],
                "model": "claude-sonnet-4-5-20250929",
                "stop_reason": None,
                "stop_sequence": None,
                "usage": start_usage or {"input_tokens": 472, "output_tokens": 2},
            },
        }
    ]
    for index, block in enumerate(blocks):
        if "text" in block:
            start = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": t} for t in block["text"]]
        elif "thinking" in block:
            start = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": t} for t in block["thinking"]]
            deltas += [{"type": "signature_delta", "signature": s} for s in block.get("signature", ())]
        else:
            call_id, name, parts = block["tool_use"]
            start = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in parts]
        events.append({"type": "content_block_start", "index": index, "content_block": start})
        if index == 0:
            events.append({"type": "ping"})
        events += [{"type": "content_block_delta", "index": index, "delta": d} for d in deltas]
        events.append({"type": "content_block_stop", "index": index})
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": delta_usage or {"output_tokens": 89},
        }
    )
    if stop:
        events.append({"type": "message_stop"})
    return [anthropic_event(e) for e in events]


def anthropic_error_event(kind: str, message: str) -> bytes:
    return anthropic_event({"type": "error", "error": {"type": kind, "message": message}})


# -- recorded shapes: Ollama /api/chat -------------------------------------------------------------
def ollama_line(message: dict[str, Any], done: bool = False) -> dict[str, Any]:
    line: dict[str, Any] = {
        "model": "qwen3:8b",
        "created_at": "2025-07-08T14:38:31.581434Z",
        "message": {"role": "assistant", "content": "", **message},
        "done": done,
    }
    if done:
        line.update(
            done_reason="stop",
            total_duration=4883583458,
            load_duration=1334875,
            prompt_eval_count=26,
            prompt_eval_duration=342546000,
            eval_count=282,
            eval_duration=4535599000,
        )
    return line


def ollama_chat(parts: list[str], *, thinking: list[str] = (), final_calls: list[dict] = (), done: bool = True) -> list[bytes]:
    """Streamed lines: thinking, then text, then the final line (carrying any tool calls)."""
    lines = [ollama_line({"thinking": t}) for t in thinking]
    lines += [ollama_line({"content": p}) for p in parts]
    if done:
        final: dict[str, Any] = {"tool_calls": list(final_calls)} if final_calls else {}
        lines.append(ollama_line(final, done=True))
    return [ndjson(line) for line in lines]


# -- replies ---------------------------------------------------------------------------------------
@dataclass
class Reply:
    """One scripted answer. ``cut``: "utf8" sends a chunk boundary inside every multi-byte
    character; ``drop``: close the connection after the body without ending the chunked stream;
    ``stall``: seconds to wait after the first piece before sending the rest."""

    body: list[bytes] = field(default_factory=list)
    status: int = 200
    content_type: str = "text/event-stream"
    headers: dict[str, str] = field(default_factory=dict)
    cut: str | None = None
    drop: bool = False
    stall: float = 0.0


def json_error(status: int, payload: Any, **headers: str) -> Reply:
    return Reply([compact(payload).encode()], status=status, content_type="application/json", headers=headers)


def credential(headers: dict[str, str], path: str) -> str | None:
    """The key a request carried, wherever its API puts it."""
    bearer = headers.get("authorization", "")
    if bearer.startswith("Bearer "):
        return bearer[len("Bearer "):]
    query = parse_qs(urlsplit(path).query)
    return headers.get("x-api-key") or headers.get("x-goog-api-key") or (query.get("key") or [None])[0]


def echo_credential(reply: Reply, headers: dict[str, str], path: str) -> Reply:
    key = credential(headers, path)
    if key is None or not any(KEY_ECHO.encode() in piece for piece in reply.body):
        return reply
    body = [piece.replace(KEY_ECHO.encode(), key.encode()) for piece in reply.body]
    return Reply(body, reply.status, reply.content_type, reply.headers, reply.cut, reply.drop, reply.stall)


def utf8_pieces(data: bytes) -> list[bytes]:
    """``data`` cut right after the first byte of every multi-byte character."""
    pieces, start = [], 0
    for i in range(1, len(data)):
        if data[i] & 0xC0 == 0x80 and data[i - 1] & 0xC0 != 0x80:  # first continuation byte
            pieces.append(data[start:i])
            start = i
    pieces.append(data[start:])
    return pieces


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)


# -- the scripted model: read README.md, then answer with what the tool said ----------------------
def last_tool_result(wire: str, body: dict[str, Any]) -> str | None:
    """The newest tool result in a request, in the wire's own shape; None if there is none yet."""
    last = body["messages"][-1]
    if wire == "anthropic":
        blocks = last["content"] if isinstance(last["content"], list) else []
        results = [b["content"] for b in blocks if b.get("type") == "tool_result"]
        return results[-1] if results else None
    return last["content"] if last["role"] == "tool" else None


def offers_read(wire: str, body: dict[str, Any]) -> bool:
    names = [t["name"] if wire == "anthropic" else t["function"]["name"] for t in body.get("tools", [])]
    return "read" in names


def scripted_answer(wire: str, body: dict[str, Any]) -> Reply:
    result = last_tool_result(wire, body)
    if result is None and offers_read(wire, body):
        if wire == "openai":
            return Reply(openai_tool_calls([("call_Hx4Ej0", "read", ['{"pa', 'th": "REA', 'DME.md"}'])]))
        if wire == "anthropic":
            return Reply(anthropic_message([{"text": ["Let me read it."]}, {"tool_use": ("toolu_01A09q90", "read", ['{"path": ', '"README.md"}'])}], stop_reason="tool_use"))
        call = {"function": {"name": "read", "arguments": {"path": "README.md"}}}
        return Reply(ollama_chat([], final_calls=[call]), content_type="application/x-ndjson")
    text = f"the tool said: {result}" if result is not None else "no tools, no reading."
    parts = [text[i : i + 7] for i in range(0, len(text), 7)]
    if wire == "openai":
        return Reply(openai_text(parts))
    if wire == "anthropic":
        return Reply(anthropic_message([{"text": parts}]))
    return Reply(ollama_chat(parts), content_type="application/x-ndjson")


def wire_of(path: str) -> str | None:
    if path.endswith("/chat/completions"):
        return "openai"
    if path.endswith("/v1/messages") or path.endswith(":streamRawPredict"):
        return "anthropic"
    if path.endswith("/api/chat"):
        return "ollama"
    return None


def looks_up(method: str, path: str) -> bool:
    """Whether a request asks what the server serves (its models, their window) rather than for an answer."""
    return (method == "GET" and path.endswith(("/models", "/props"))) or path == "/api/show"


def model_requests(requests: list["Recorded"]) -> list["Recorded"]:
    """The requests for the model's answers: not its lookups, nor Google's token endpoint."""
    return [r for r in requests if r.path != "/token" and not looks_up(r.method, r.path)]


class QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client closing its kept-alive connection is normal here; anything else is a test bug.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class FakeModelServer:
    """The server, in a thread of the test process; ``url`` is its base (http://127.0.0.1:PORT)."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.replies: deque[Reply] = deque()
        self.aborted: list[str] = []  # paths whose client went away before the answer ended
        self.expected_token = FAKE_TOKEN
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_GET(self) -> None:
                server.handle(self, b"")

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                server.handle(self, self.rfile.read(length))

        self.httpd = QuietServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def start(self) -> "FakeModelServer":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def queue(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def handle(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        path = handler.path
        headers = {k.lower(): v for k, v in handler.headers.items()}
        self.requests.append(Recorded(handler.command, path, headers, body))
        queued = self.replies and not looks_up(handler.command, path)  # a queued reply is for the model's answer
        reply = self.replies.popleft() if queued else self.route(handler.command, path, headers, body)
        self.send(handler, echo_credential(reply, headers, path))

    def route(self, method: str, path: str, headers: dict[str, str], body: bytes) -> Reply:
        if path == "/token":  # Google's OAuth token endpoint, for google-auth's refresh
            form = parse_qs(body.decode())
            if form.get("grant_type") != ["refresh_token"]:
                return json_error(400, {"error": "unsupported_grant_type"})
            token = {"access_token": self.expected_token, "expires_in": 3599, "token_type": "Bearer"}
            return Reply([compact(token).encode()], content_type="application/json")
        if method == "GET" and path.endswith("/models"):
            listing = {"object": "list", "data": [{"id": SERVED_MODEL, "object": "model", "owned_by": "me"}]}
            return Reply([compact(listing).encode()], content_type="application/json")
        if path.endswith(":streamRawPredict") and headers.get("authorization") != f"Bearer {self.expected_token}":
            return json_error(401, {"error": {"code": 401, "message": "Request had invalid authentication credentials.", "status": "UNAUTHENTICATED"}})
        wire = wire_of(path)
        if wire is None:
            return json_error(404, {"error": {"message": f"no route {path}"}})
        return scripted_answer(wire, json.loads(body))

    def send(self, handler: BaseHTTPRequestHandler, reply: Reply) -> None:
        handler.send_response(reply.status)
        handler.send_header("content-type", reply.content_type)
        for name, value in reply.headers.items():
            handler.send_header(name, value)
        handler.send_header("transfer-encoding", "chunked")
        handler.end_headers()
        pieces = utf8_pieces(b"".join(reply.body)) if reply.cut == "utf8" else reply.body
        out = handler.wfile
        try:
            for number, piece in enumerate(pieces):
                if piece:
                    out.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                    out.flush()
                if reply.stall and number == 0:
                    time.sleep(reply.stall)
            if reply.drop:
                time.sleep(0.05)  # let the client read what came before the drop
                handler.connection.shutdown(socket.SHUT_RDWR)
                handler.close_connection = True
                return
            out.write(b"0\r\n\r\n")
            out.flush()
        except (BrokenPipeError, ConnectionResetError):  # the client went away (cancelled)
            self.aborted.append(handler.path)
            handler.close_connection = True


def refreshable_credentials(tmp_path: Path, token_url: str) -> Path:
    """Application default credentials refreshed at ``token_url`` (google-auth pins the token
    endpoint of plain ``authorized_user`` files, so this is the workforce flavour)."""
    path = tmp_path / "adc.json"
    path.write_text(json.dumps({
        "type": "external_account_authorized_user",
        "audience": "//iam.googleapis.com/locations/global/workforcePools/pool/providers/fake",
        "client_id": "fake-client", "client_secret": "fake-secret",
        "refresh_token": "1//fake-refresh", "token_url": token_url,
    }))
    return path
