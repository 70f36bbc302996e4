"""A fake model server for inline completion: real HTTP on 127.0.0.1, each FIM wire format.

It answers OpenAI-style ``/v1/completions`` (SSE, ``choices[].text``), llama.cpp's ``/infill``
(SSE, ``content`` and ``stop``), Ollama's ``/api/generate`` (NDJSON, ``response`` and ``done``),
Mistral's ``/v1/fim/completions`` and OpenAI chat completions (SSE, ``choices[].delta.content``),
shaped field for field as those servers send them. Every request is recorded with its body;
each answer streams ``answer`` in ``pieces``, ``delay`` seconds apart. A request whose client
went away mid-answer is counted in ``closed``, one answered to its end in ``finished``.
``refuse`` lists paths answered as the real servers refuse what they do not take.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def sse(data: Any) -> bytes:
    return f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n".encode()


def ndjson(data: Any) -> bytes:
    return (json.dumps(data) + "\n").encode()


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class FimServer:
    answer: list[str] = field(default_factory=lambda: ["b", ")"])
    delay: float = 0.0
    refuse: dict[str, tuple[int, dict[str, Any]]] = field(default_factory=dict)
    requests: list[Recorded] = field(default_factory=list)
    finished: int = 0
    closed: int = 0

    def start(self) -> FimServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # as model servers do: each piece leaves when written

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                server.handle(self, json.loads(self.rfile.read(length) or b"{}"))

            def do_GET(self) -> None:
                listing = json.dumps({"object": "list", "data": [{"id": "served-coder", "object": "model"}]}).encode()
                if self.path == "/stats":  # for bench/completion.py, which runs the server in a process of its own
                    listing = json.dumps({"requests": len(server.requests), "finished": server.finished, "closed": server.closed}).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(listing)))
                self.end_headers()
                self.wfile.write(listing)

        class Quiet(ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = 128  # many documents asked at once: the default backlog of 5 drops connections under load

            def handle_error(self, request: Any, client_address: Any) -> None:
                if not isinstance(sys.exc_info()[1], ConnectionError):
                    super().handle_error(request, client_address)

        self.httpd = Quiet(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True).start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def bodies(self, path: str) -> list[dict[str, Any]]:
        return [request.body for request in self.requests if request.path == path]

    # -- answering -------------------------------------------------------------------
    def handle(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        path = handler.path
        self.requests.append(Recorded(path, {k.lower(): v for k, v in handler.headers.items()}, body))
        if path in self.refuse or (path == "/api/generate" and "suffix" in body and "/api/generate+suffix" in self.refuse):
            status, payload = self.refuse.get(path) or self.refuse["/api/generate+suffix"]
            data = json.dumps(payload).encode()
            handler.send_response(status)
            handler.send_header("content-type", "application/json")
            handler.send_header("content-length", str(len(data)))
            handler.end_headers()
            handler.wfile.write(data)
            return
        frames, kind = self.frames(path, body)
        delay = self.delay  # as it was when the request came: a test may change it for the next one
        handler.send_response(200)
        handler.send_header("content-type", kind)
        handler.send_header("transfer-encoding", "chunked")
        handler.end_headers()
        try:
            for frame in frames:
                handler.wfile.write(b"%x\r\n%s\r\n" % (len(frame), frame))
                handler.wfile.flush()
                if delay:
                    time.sleep(delay)
            handler.wfile.write(b"0\r\n\r\n")
            handler.wfile.flush()
            self.finished += 1
        except (BrokenPipeError, ConnectionResetError):
            self.closed += 1
            handler.close_connection = True

    def frames(self, path: str, body: dict[str, Any]) -> tuple[list[bytes], str]:
        pieces = list(self.answer)
        if path.endswith("/chat/completions"):
            chunk = lambda delta, finish=None: {  # noqa: E731
                "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1741570283, "model": body.get("model"),
                "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
            }  # fmt: skip
            frames = [sse(chunk({"role": "assistant", "content": ""}))]
            frames += [sse(chunk({"content": piece})) for piece in pieces] + [sse(chunk({}, "stop")), sse("[DONE]")]
            return frames, "text/event-stream"
        if path == "/v1/fim/completions":
            chunk = lambda delta, finish=None: {  # noqa: E731
                "id": "fim-1", "object": "chat.completion.chunk", "created": 1741570283, "model": body.get("model"),
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }  # fmt: skip
            frames = [sse(chunk({"role": "assistant", "content": piece})) for piece in pieces]
            usage = chunk({"content": ""}, "stop") | {"usage": {"prompt_tokens": 31, "completion_tokens": 5, "total_tokens": 36}}
            return frames + [sse(usage), sse("[DONE]")], "text/event-stream"
        if path.endswith("/completions"):
            chunk = lambda text, finish=None: {  # noqa: E731
                "id": "cmpl-1", "object": "text_completion", "created": 1741570283, "model": body.get("model"),
                "choices": [{"text": text, "index": 0, "logprobs": None, "finish_reason": finish}],
            }  # fmt: skip
            frames = [sse(chunk(piece)) for piece in pieces] + [sse(chunk("", "stop")), sse("[DONE]")]
            return frames, "text/event-stream"
        if path == "/infill":
            frames = [sse({"content": piece, "stop": False, "id_slot": 0, "multimodal": False}) for piece in pieces]
            final = {"content": "", "stop": True, "model": "coder.gguf", "tokens_predicted": len(pieces),
                     "tokens_evaluated": 40, "timings": {"prompt_n": 40, "predicted_n": len(pieces)}}  # fmt: skip
            return frames + [sse(final)], "text/event-stream"
        if path == "/api/generate":
            line = lambda text, done=False: {  # noqa: E731
                "model": body.get("model"), "created_at": "2026-12-04T12:00:00.000Z", "response": text, "done": done,
            }  # fmt: skip
            frames = [ndjson(line(piece)) for piece in pieces]
            final = line("", True) | {"done_reason": "stop", "total_duration": 1, "prompt_eval_count": 26, "eval_count": len(pieces)}
            return frames + [ndjson(final)], "application/x-ndjson"
        raise AssertionError(f"the fake FIM server has no route {path}")


if __name__ == "__main__":  # python fim_server.py '["x", " + 1"]': serve until stdin closes, the URL on stdout
    server = FimServer(answer=json.loads(sys.argv[1]) if len(sys.argv) > 1 else ["x"]).start()
    print(server.url, flush=True)
    sys.stdin.read()
