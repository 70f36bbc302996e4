"""The local providers asked with their model's own fill-in-the-middle tokens.

Bridges a ``Fill`` to the in-process models: the three elelem drives itself (ggml, candle,
llama2: a ``generation.Generator``) and llama.cpp (llama-cpp-python's ``create_completion``).
The FIM format is the one whose special tokens the model's vocabulary holds, each as a single
token; a model without any has no FIM route (the chat prompt serves it). Generation runs on a
thread (``agent.bridge``); closing the stream sets its cancel flag, checked between tokens.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing
from typing import Any

from ..agent.bridge import run_in_thread
from .chat_routes import Event, events_of
from .routes import Fill, Route
from .templates import END_MARKERS, FimFormat, format_in_vocabulary


def generator_has_token(provider: Any) -> Callable[[str], bool]:
    """Whether the Generator's model spells ``token`` as one token (loading the model)."""
    model = provider.generator.model
    bare = len(model.encode(""))
    return lambda token: len(model.encode(token)) - bare == 1


def llama_has_token(provider: Any) -> Callable[[str], bool]:
    llm = provider.llm
    return lambda token: len(llm.tokenize(token.encode("utf-8"), add_bos=False, special=True)) == 1


async def local_format(provider: Any) -> FimFormat | None:
    """The FIM format of a local provider's model, found in its vocabulary off the event loop."""
    if hasattr(provider, "generator"):
        probe = generator_has_token
    elif hasattr(provider, "llm"):
        probe = llama_has_token
    else:
        return None
    return await asyncio.to_thread(lambda: format_in_vocabulary(probe(provider)))


class LocalFim(Route):
    name = "fim-tokens"

    def __init__(self, provider: Any, fim: FimFormat) -> None:
        self.provider, self.fim = provider, fim
        self.stops = END_MARKERS + fim.stops

    async def stream(self, fill: Fill) -> AsyncGenerator[str, None]:
        prompt = self.fim.render(fill.context)
        work = self._llama if hasattr(self.provider, "llm") else self._generator

        async def start(emit: Callable[[Event], None]) -> None:
            await run_in_thread(lambda send, cancelled: work(prompt, fill, send, cancelled), emit, name="elelem-complete")

        async with aclosing(events_of(start)) as events:
            async for event in events:
                if event.get("type") == "saying":
                    yield event["text"]

    def _generator(self, prompt: str, fill: Fill, send: Callable[[Event], None], cancelled: threading.Event) -> None:
        def on_text(text: str) -> bool:
            send({"type": "saying", "text": text})
            return cancelled.is_set()

        prompt_tokens, generated = self.provider.generator.generate(prompt, on_text, cancelled, 0.0, fill.max_tokens)
        fill.count(prompt_tokens, len(generated))

    def _llama(self, prompt: str, fill: Fill, send: Callable[[Event], None], cancelled: threading.Event) -> None:
        llm = self.provider.llm
        with self.provider._lock:  # one generation at a time on the model, as the provider's fetch
            for chunk in llm.create_completion(
                prompt, max_tokens=fill.max_tokens, temperature=0.0, stream=True, stop=list(self.fim.stops)
            ):
                if cancelled.is_set():
                    return
                text = chunk["choices"][0].get("text") or ""
                if text:
                    send({"type": "saying", "text": text})
