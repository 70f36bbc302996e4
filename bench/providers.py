"""Provider streaming throughput: text deltas turned into events per second, against bare httpx.

A server in a subprocess streams 200,000 text deltas over loopback in each wire
format (OpenAI SSE, Anthropic SSE, Ollama NDJSON), each delta in its own HTTP
chunk as the real APIs send them. For every provider the bench times ``fetch``
turning the stream into ``saying`` events, and times bare httpx reading the
same stream's lines (``aiter_lines``, nothing parsed); it prints both rates and
their ratio (aim: at least 0.5).

Run: ``python bench/providers.py [--deltas N] [--repeat R]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import socket
import time
from typing import Any, Awaitable, Callable

import httpx

from elelem_lsp.providers.remote.anthropic import AnthropicProvider
from elelem_lsp.providers.remote.openai_chat import OpenAIGenericProvider
from elelem_lsp.providers.remote.ollama import OllamaProvider
from elelem_lsp.providers.remote.openai import OpenAIProvider
from elelem_lsp.providers.remote.presets import factory as preset
from elelem_lsp.providers.remote.vertex import VertexProvider

TEXT = "tok "  # each delta's text: short, as model tokens are


def compact(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def openai_events(deltas: int) -> list[bytes]:
    def chunk(delta: dict, finish: str | None = None) -> bytes:
        return b"data: " + compact({
            "id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1741570283, "model": "gpt-4o",
            "system_fingerprint": "fp_bench", "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }) + b"\n\n"

    text = chunk({"content": TEXT})
    return [chunk({"role": "assistant", "content": ""}), *[text] * deltas, chunk({}, "stop"), b"data: [DONE]\n\n"]


def anthropic_events(deltas: int) -> list[bytes]:
    def event(payload: dict) -> bytes:
        return b"event: " + payload["type"].encode() + b"\ndata: " + compact(payload) + b"\n\n"

    text = event({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": TEXT}})
    return [
        event({"type": "message_start", "message": {"id": "msg_bench", "type": "message", "role": "assistant", "content": [],
                                                     "model": "claude", "usage": {"input_tokens": 1, "output_tokens": 1}}}),
        event({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        *[text] * deltas,
        event({"type": "content_block_stop", "index": 0}),
        event({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": deltas}}),
        event({"type": "message_stop"}),
    ]


def ollama_events(deltas: int) -> list[bytes]:
    def line(content: str, done: bool = False) -> bytes:
        return compact({"model": "qwen3:8b", "created_at": "2025-07-08T14:38:31.581434Z",
                        "message": {"role": "assistant", "content": content}, "done": done}) + b"\n"

    return [*[line(TEXT)] * deltas, line("", done=True)]


def chunked(events: list[bytes], content_type: str) -> bytes:
    head = f"HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ntransfer-encoding: chunked\r\n\r\n".encode()
    return head + b"".join(b"%x\r\n%s\r\n" % (len(e), e) for e in events) + b"0\r\n\r\n"


def serve(listener: socket.socket, deltas: int) -> None:
    """The loopback model server: one prebuilt chunked answer per wire, picked by the request path."""
    answers = {
        "openai": chunked(openai_events(deltas), "text/event-stream"),
        "anthropic": chunked(anthropic_events(deltas), "text/event-stream"),
        "ollama": chunked(ollama_events(deltas), "application/x-ndjson"),
    }
    while True:
        connection, _ = listener.accept()
        with connection:
            request = b""
            while b"\r\n\r\n" not in request:
                request += connection.recv(65536)
            head, _, body = request.partition(b"\r\n\r\n")
            length = next((int(l.split(b":")[1]) for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")), 0)
            while len(body) < length:
                body += connection.recv(65536)
            path = head.split(b" ")[1].decode()
            wire = "ollama" if path.endswith("/api/chat") else "anthropic" if ("messages" in path or "Predict" in path) else "openai"
            connection.sendall(answers[wire])


async def bare_httpx(url: str) -> int:
    """Lines read from the stream with nothing parsed: the floor every provider stands on."""
    lines = 0
    async with httpx.AsyncClient(timeout=60) as client:
        async with client.stream("POST", url, content=b"{}") as response:
            async for _ in response.aiter_lines():
                lines += 1
    return lines


async def best_times(runs: dict[str, Callable[[], Awaitable[Any]]], repeat: int) -> dict[str, float]:
    """The best wall time of each run; runs alternate, so a busy machine slows them alike."""
    best = {name: float("inf") for name in runs}
    for _ in range(repeat):
        for name, run in runs.items():
            started = time.perf_counter()
            await run()
            best[name] = min(best[name], time.perf_counter() - started)
    return best


async def token() -> str:
    return "ya29.bench"


def providers(base: str) -> dict[str, tuple[str, Any]]:
    """name -> (the URL bare httpx reads, the provider)."""
    groq = preset("groq", model="bench")
    groq.base_url, groq.url, groq.api_key = f"{base}/openai/v1", f"{base}/openai/v1/chat/completions", "k"
    vertex = VertexProvider("claude@1", project="p", base_url=base, token=token)
    return {
        "openai": (f"{base}/v1/chat/completions", OpenAIProvider("bench", base_url=f"{base}/v1", api_key="k")),
        "groq (preset)": (groq.url, groq),
        "openai-chat": (f"{base}/v1/chat/completions", OpenAIGenericProvider("bench", f"{base}/v1/chat/completions", "k")),
        "anthropic": (f"{base}/v1/messages", AnthropicProvider("claude", api_key="k", base_url=base)),
        "vertex": (vertex.url, vertex),
        "ollama": (f"{base}/api/chat", OllamaProvider("qwen3:8b", host=base)),
    }


async def main(deltas: int, repeat: int, base: str) -> None:
    messages = [{"role": "user", "content": "go"}]
    print(f"{deltas:,} text deltas per stream, best of {repeat}, loopback")
    print(f"{'provider':<15} {'provider deltas/s':>18} {'bare httpx deltas/s':>20} {'ratio':>6}")
    for name, (url, provider) in providers(base).items():
        said = 0

        def emit(event: dict) -> None:
            nonlocal said
            said += event["type"] == "saying"

        times = await best_times({"provider": lambda: provider.fetch(messages, [], emit), "bare": lambda: bare_httpx(url)}, repeat)
        assert said == deltas * repeat, f"{name}: {said} saying events, expected {deltas * repeat}"
        provider_time, bare_time = times["provider"], times["bare"]
        print(f"{name:<15} {deltas / provider_time:>18,.0f} {deltas / bare_time:>20,.0f} {bare_time / provider_time:>6.2f}")

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deltas", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    listener = socket.create_server(("127.0.0.1", 0))
    server = multiprocessing.Process(target=serve, args=(listener, options.deltas), daemon=True)
    server.start()
    try:
        asyncio.run(main(options.deltas, options.repeat, f"http://127.0.0.1:{listener.getsockname()[1]}"))
    finally:
        server.kill()
