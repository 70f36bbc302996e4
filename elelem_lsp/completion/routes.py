"""How each kind of provider is asked to fill the hole: one route a wire.

Bridges a ``Fill`` (the context, the extent, the token limit) to a stream of text pieces from
the model, over the provider's own address, key and transport: OpenAI-style ``/v1/completions``
with ``suffix`` (SSE), llama.cpp's ``/infill`` with ``input_extra`` (SSE), Ollama's
``/api/generate`` with ``suffix`` or, ``raw``, the model's FIM tokens (NDJSON), Mistral's
``/v1/fim/completions`` (SSE), a local model's FIM tokens (``local_routes``), and for any
provider the hole-filling chat prompt through its ``fetch`` or its own ``complete``
(``chat_routes``). A route whose request the server refuses raises ``Refused``, and the
caller tries the next (``routing``). Leaving a stream early, or cancelling it, closes its
HTTP response.
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import aclosing, asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx

from ..agent.messages import ProviderError
from ..providers.remote.http import ndjson_lines, open_response, parse_json, sse_events, stream_failure
from .context import CompletionContext
from .templates import END_MARKERS, FimFormat, commented_snippets

# A FIM request the endpoint does not take: not there, not allowed, or a model that cannot insert.
REFUSAL = re.compile(r"^HTTP (400|404|405|422|501)\b|does not support insert|suffix", re.IGNORECASE)


class Refused(ProviderError):
    """The endpoint does not take this route's request: try another route."""


@dataclass
class Fill:
    """What a route is asked: the hole, how far to write, and its token counts once known."""

    context: CompletionContext
    multiline: bool
    max_tokens: int
    input_tokens: int | None = None
    output_tokens: int | None = None
    asked: bool = False  # whether a request went to the model

    def count(self, input_tokens: Any, output_tokens: Any) -> None:
        if isinstance(input_tokens, int):
            self.input_tokens = input_tokens
        if isinstance(output_tokens, int):
            self.output_tokens = output_tokens

    def line_stops(self) -> list[str]:
        """A single line stops at its newline, unless the cursor's line is blank (its first line is wanted)."""
        return ["\n"] if not self.multiline and self.context.line_before.strip() else []


@asynccontextmanager
async def post(
    url: str, body: dict[str, Any], headers: dict[str, str], transport: Any, accept: str
) -> AsyncIterator[httpx.Response]:
    """A streamed POST whose refusal (the endpoint does not take FIM) is ``Refused``."""
    try:
        async with open_response("POST", url, body=body, headers={**headers, "accept": accept}, transport=transport) as response:
            yield response
    except ProviderError as error:
        if REFUSAL.search(str(error)):
            raise Refused(str(error)) from None
        raise


class Route:
    """One way of asking; ``stops`` are the strings its answers must be cut at."""

    name = "route"
    stops: tuple[str, ...] = END_MARKERS

    def stream(self, fill: Fill) -> AsyncGenerator[str, None]:
        raise NotImplementedError


class OpenAICompletions(Route):
    """``POST <base>/completions`` with ``prompt`` and ``suffix``: llama.cpp server, DeepSeek, OpenAI's instruct models."""

    name = "completions"

    def __init__(self, provider: Any, base_url: str) -> None:
        self.provider, self.url = provider, base_url.rstrip("/") + "/completions"

    async def stream(self, fill: Fill) -> AsyncGenerator[str, None]:
        body = fim_body(await self.provider.served_model(), fill)
        async with aclosing(choices_text(self.url, body, self.provider, fill.count, lambda choice: choice.get("text"))) as pieces:
            async for piece in pieces:
                yield piece


class LlamaCppInfill(Route):
    """llama.cpp server's ``POST /infill``: the model file's own FIM tokens, other files as ``input_extra``."""

    name = "infill"

    def __init__(self, provider: Any, base_url: str) -> None:
        root = base_url.rstrip("/").removesuffix("/v1")
        self.provider, self.url = provider, f"{root}/infill"

    async def stream(self, fill: Fill) -> AsyncGenerator[str, None]:
        context = fill.context
        body: dict[str, Any] = {
            "input_prefix": context.prefix,
            "input_suffix": context.suffix,
            "input_extra": [{"filename": snippet.path, "text": snippet.text} for snippet in context.snippets],
            "n_predict": fill.max_tokens,
            "temperature": 0,
            "stream": True,
            "cache_prompt": True,
        }
        if fill.line_stops():
            body["stop"] = fill.line_stops()
        async with post(self.url, body, self.provider.headers(), self.provider.transport, "text/event-stream") as response:
            async for _, data in sse_events(response):
                chunk = chunk_of(data)
                if isinstance(chunk.get("content"), str) and chunk["content"]:
                    yield chunk["content"]
                if chunk.get("stop"):
                    timings = chunk.get("timings") or {}
                    fill.count(timings.get("prompt_n"), timings.get("predicted_n"))
                    return


class OllamaGenerate(Route):
    """Ollama's ``POST /api/generate`` with ``suffix`` (the model's template inserts), or ``raw``
    with the model's FIM tokens (``fim``) where its template takes no suffix."""

    def __init__(self, provider: Any, fim: FimFormat | None = None) -> None:
        self.provider, self.fim = provider, fim
        self.url = provider.url.removesuffix("/api/chat") + "/api/generate"
        self.name = "ollama-raw" if fim else "ollama"
        self.stops = END_MARKERS + (fim.stops if fim else ())

    async def stream(self, fill: Fill) -> AsyncGenerator[str, None]:
        context = fill.context
        body: dict[str, Any] = {"model": self.provider.model, "stream": True}
        if self.fim is not None:
            body |= {"prompt": self.fim.render(context), "raw": True}
        else:
            body |= {"prompt": commented_snippets(context) + context.prefix, "suffix": context.suffix}
        stops = [*fill.line_stops(), *self.stops]
        body["options"] = {"num_predict": fill.max_tokens, "temperature": 0, **({"stop": stops} if stops else {})}
        async with post(self.url, body, {}, self.provider.transport, "application/x-ndjson") as response:
            async for line in ndjson_lines(response):
                if not isinstance(line, dict):
                    raise ProviderError(f"malformed line in the model's stream: {line!r:.120}")
                if "error" in line:
                    raise stream_failure(line)
                if isinstance(line.get("response"), str) and line["response"]:
                    yield line["response"]
                if line.get("done"):
                    fill.count(line.get("prompt_eval_count"), line.get("eval_count"))
                    return


class MistralFim(Route):
    """Mistral's ``POST /v1/fim/completions`` (Codestral): ``prompt`` and ``suffix``, chat-shaped chunks."""

    name = "mistral-fim"

    def __init__(self, provider: Any, base_url: str) -> None:
        self.provider, self.url = provider, base_url.rstrip("/") + "/fim/completions"

    async def stream(self, fill: Fill) -> AsyncGenerator[str, None]:
        model = self.provider.model if "codestral" in (self.provider.model or "") else "codestral-latest"
        body = fim_body(model, fill)
        async with aclosing(choices_text(self.url, body, self.provider, fill.count, delta_content)) as pieces:
            async for piece in pieces:
                yield piece


def fim_body(model: str | None, fill: Fill) -> dict[str, Any]:
    """An OpenAI-style FIM request: the prompt (the other files as comments, then the prefix) and the suffix."""
    context = fill.context
    body: dict[str, Any] = {
        "model": model,
        "prompt": commented_snippets(context) + context.prefix,
        "suffix": context.suffix,
        "max_tokens": fill.max_tokens,
        "temperature": 0,
        "stream": True,
    }
    if fill.line_stops():
        body["stop"] = fill.line_stops()
    return body


async def choices_text(
    url: str, body: dict[str, Any], provider: Any, count: Callable[[Any, Any], None], text_of: Callable[[dict[str, Any]], Any]
) -> AsyncGenerator[str, None]:
    """The text of each choice of an OpenAI-shaped SSE stream (``text_of`` finds it in a choice), its usage counted."""
    async with post(url, body, provider.headers(), provider.transport, "text/event-stream") as response:
        async for _, data in sse_events(response):
            if data == "[DONE]":
                return
            chunk = chunk_of(data)
            usage = chunk.get("usage") or {}
            count(usage.get("prompt_tokens"), usage.get("completion_tokens"))
            for choice in chunk.get("choices") or ():
                text = text_of(choice) if isinstance(choice, dict) else None
                if isinstance(text, str) and text:
                    yield text


def delta_content(choice: dict[str, Any]) -> Any:
    """A chat-shaped chunk's text."""
    return (choice.get("delta") or {}).get("content")


def chunk_of(data: str) -> dict[str, Any]:
    chunk = parse_json(data, "chunk in the model's stream")
    if not isinstance(chunk, dict):
        raise ProviderError(f"malformed chunk in the model's stream: {data[:120]!r}")
    if "error" in chunk:
        raise stream_failure(chunk)
    return chunk
