"""How a provider is asked for a next edit: the Zeta prompt as it is, or explained to a chat model.

Bridges ``predictor.Ask`` (a prompt in, the answer out) to a built provider. ``chat`` works with
every provider of the contract: one ``fetch`` without tools, the system message saying the form
to answer in. ``raw`` sends the prompt untouched to a Zeta model (Ollama's ``/api/generate`` with
``raw``, or an OpenAI-compatible ``/completions``), as it was trained. Either way the answer is
read only up to the region's end marker, and the stream is closed there.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any

from ..agent.messages import Message
from ..completion.chat_routes import events_of, fetch_once
from ..completion.routes import choices_text, post
from ..completion.routing import base_url_of, is_ollama, is_openai
from ..providers.remote.http import ndjson_lines, stream_failure
from .zeta import CHAT_INSTRUCTION, EDITABLE_END

CHARS_PER_TOKEN = 8  # twice what a token of code holds: room enough for any answer within maxTokens


@dataclass
class Tokens:
    """What one request read and wrote, as the model's server counted it (None where it did not say)."""

    read: int | None = None
    written: int | None = None


def route_of(api: str, model: str | None, provider: Any) -> str:
    """``raw`` for a Zeta model on a server that takes a raw prompt (or when asked), else ``chat``."""
    takes_raw = is_ollama(provider) or (is_openai(provider) and base_url_of(provider) is not None)
    if api == "raw" or (api == "auto" and "zeta" in (model or getattr(provider, "model", "") or "").lower()):
        return "raw" if takes_raw else "chat"
    return "chat"


async def answer(route: str, provider: Any, prompt: str, max_tokens: int, tokens: Tokens) -> str:
    """The model's answer to ``prompt``, read up to the end of the rewritten region; empty (no
    answer in the form) when it runs on past ``max_tokens`` without ending the region."""
    pieces = _raw(provider, prompt, max_tokens, tokens) if route == "raw" else _chat(provider, prompt, tokens)
    text = ""
    async with aclosing(pieces) as stream:
        async for piece in stream:
            text += piece
            if EDITABLE_END in text[-len(piece) - len(EDITABLE_END) :]:
                break  # the rest (a closing fence) is not needed: the stream is closed here
            if len(text) > max_tokens * CHARS_PER_TOKEN:
                return ""  # a chat model is given no token limit: one that rambles on is cut off here
    return text


async def _chat(provider: Any, prompt: str, tokens: Tokens) -> AsyncGenerator[str, None]:
    messages: list[Message] = [{"role": "system", "content": CHAT_INSTRUCTION}, {"role": "user", "content": prompt}]
    async for event in events_of(lambda emit: fetch_once(provider, messages, emit)):
        if event.get("type") == "usage":
            _count(tokens, event.get("inputTokens"), event.get("outputTokens"))
        elif event.get("type") == "saying" and isinstance(event.get("text"), str):
            yield event["text"]


async def _raw(provider: Any, prompt: str, max_tokens: int, tokens: Tokens) -> AsyncGenerator[str, None]:
    if is_ollama(provider):
        url = provider.url.removesuffix("/api/chat") + "/api/generate"
        body = {"model": provider.model, "prompt": prompt, "raw": True, "stream": True}
        body["options"] = {"num_predict": max_tokens, "temperature": 0}
        async with post(url, body, {}, provider.transport, "application/x-ndjson") as response:
            async for line in ndjson_lines(response):
                if isinstance(line, dict) and "error" in line:
                    raise stream_failure(line)
                if isinstance(line, dict) and isinstance(line.get("response"), str):
                    yield line["response"]
                if isinstance(line, dict) and line.get("done"):
                    _count(tokens, line.get("prompt_eval_count"), line.get("eval_count"))
                    return
        return
    url = (base_url_of(provider) or "").rstrip("/") + "/completions"
    body = {"model": await provider.served_model(), "prompt": prompt, "max_tokens": max_tokens, "temperature": 0, "stream": True}
    counted = functools.partial(_count, tokens)
    async with aclosing(choices_text(url, body, provider, counted, lambda choice: choice.get("text"))) as pieces:
        async for piece in pieces:
            yield piece


def _count(tokens: Tokens, read: Any, written: Any) -> None:
    if isinstance(read, int):
        tokens.read = read
    if isinstance(written, int):
        tokens.written = written
