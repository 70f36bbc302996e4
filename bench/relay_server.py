"""The floor for bench/sidebyside.py: the least a pygls server can do for one agent turn.

It answers ``elelem.ask {prompt, progressToken}`` by making one streaming chat-completions
request to ``RELAY_MODEL_URL`` (and one more after running a ``read`` the model asks for),
relaying the tokens as ``$/progress`` (coalesced every 50 ms, as elelem-lsp does, since editors
redraw on each), and answering with the reply. It keeps the conversation (each prompt and reply)
and sends it with every request, as any agent must, each message encoded to JSON once. Its HTTP client and
everything it imports are ready before the first request (it asks the model server for its
models after ``initialized``); nothing is validated or kept.

    python bench/relay_server.py          (stdio; started by bench/sidebyside.py)
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import httpx
from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer

URL = os.environ.get("RELAY_MODEL_URL", "http://127.0.0.1:1/v1/chat/completions")
TOOLS = json.dumps([{"type": "function", "function": {"name": "read", "description": "Read a file",
             "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}]).encode()

server = LanguageServer("relay", "1")
client = httpx.AsyncClient(timeout=60)
history: list[bytes] = [json.dumps({"role": "system", "content": "relay"}).encode()]


def encode(message: dict) -> bytes:
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode()


async def stream_once(messages: list[bytes], token) -> tuple[str, list[dict]]:
    """One streamed request: the text (relayed as it comes) and the tool calls."""
    body = b'{"model":"bench","messages":[' + b",".join(messages) + b'],"tools":' + TOOLS + b',"stream":true}'
    text, calls, pending, sent = [], {}, [], 0.0

    def report() -> None:
        nonlocal sent
        server.protocol.notify(lsp.PROGRESS, lsp.ProgressParams(token=token, value={"kind": "report", "message": "".join(pending)}))
        pending.clear()
        sent = time.monotonic()

    async with client.stream("POST", URL, content=body, headers={"content-type": "application/json"}) as response:
        async for line in response.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            for choice in json.loads(line[6:]).get("choices") or ():
                delta = choice.get("delta") or {}
                if delta.get("content"):
                    text.append(delta["content"])
                    pending.append(delta["content"])
                    if time.monotonic() - sent >= 0.05:
                        report()
                for part in delta.get("tool_calls") or ():
                    call = calls.setdefault(part["index"], {"id": "", "name": "", "arguments": ""})
                    call["id"] = part.get("id") or call["id"]
                    call["name"] += part.get("function", {}).get("name") or ""
                    call["arguments"] += part.get("function", {}).get("arguments") or ""
    if pending:
        report()
    return "".join(text), list(calls.values())


@server.command("elelem.ask")
async def ask(ls: LanguageServer, arguments: dict) -> dict:
    token = arguments["progressToken"]
    prompt = encode({"role": "user", "content": arguments["prompt"]})
    messages = [*history, prompt]
    while True:
        text, calls = await stream_once(messages, token)
        if not calls:
            history.extend([prompt, encode({"role": "assistant", "content": text})])
            return {"reply": text}
        messages.append(encode({"role": "assistant", "content": text, "tool_calls": [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}} for c in calls]}))
        for call in calls:
            content = Path(json.loads(call["arguments"])["path"]).read_text()
            messages.append(encode({"role": "tool", "tool_call_id": call["id"], "content": json.dumps({"ok": True, "content": content})}))


@server.feature(lsp.INITIALIZED)
async def warm_up(ls: LanguageServer, params: lsp.InitializedParams) -> None:
    # The floor is a server with everything ready: httpx imports most of a request on first use.
    await client.get(URL.rsplit("/chat/completions", 1)[0] + "/models")


if __name__ == "__main__":
    server.start_io()
