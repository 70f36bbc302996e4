"""What the local-model providers (llama, ggml, candle, llama2) share.

Bridges blocking token-by-token generation to the agent's async ``fetch``
through ``agent.bridge.run_in_thread``: the work runs on a thread, its events
reach ``emit`` on the event loop, and cancellation sets the Event the work
checks between tokens. ``Generator`` is the token loop of the three models
elelem drives itself: the model stays loaded, the cache of the prompt prefix
shared with the previous fetch is reused, the next token is sampled (greedy at temperature 0), bytes
become text with a split character held back, and generation stops at the
model's end tokens, at the ChatML end marker, at ``max_tokens`` or on cancel.
``LocalProvider`` puts these together with the ``tool_text`` protocol, and emits
the prompt's and the reply's token counts as the ``usage`` event. These models
read text only: a conversation with images is refused before any work.
"""

from __future__ import annotations

import asyncio
import codecs
import importlib.util
import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

from ...agent.bridge import run_in_thread
from ...agent.budget import estimate_tokens
from ...agent.messages import Emit, Message, ProviderError, ToolDefinition
from ..environment import positive_number
from ..images import refuse_images
from ..shaping import Usage
from .tool_text import ToolCallStream, template_named

DEFAULT_TEMPERATURE = 0.7
DEFAULT_MAX_TOKENS = 512
PREFILL_CHUNK = 256  # prompt tokens evaluated per forward pass


class TokenModel(Protocol):
    """A causal language model with a KV cache, as the Generator drives it."""

    context_length: int
    stop_ids: frozenset[int]

    def encode(self, prompt: str) -> list[int]:
        """The prompt's token ids, beginning-of-sequence included."""
        ...

    def forward(self, ids: Sequence[int], position: int) -> np.ndarray:
        """Evaluate ``ids`` at positions ``position``... (the cache from ``position`` on is
        replaced) and return the logits for the token after the last one."""
        ...

    def piece(self, token: int) -> bytes:
        """The bytes ``token`` adds to the text."""
        ...


def sample(logits: np.ndarray, temperature: float, rng: np.random.Generator) -> int:
    """The next token: the most likely at temperature 0, else drawn from the softened distribution."""
    if temperature <= 0:
        return int(np.argmax(logits))
    scaled = (np.asarray(logits, dtype=np.float64) - np.max(logits)) / temperature
    weights = np.exp(scaled)
    return int(rng.choice(len(weights), p=weights / weights.sum()))


class Generator:
    """Keeps one TokenModel warm and generates from it, one caller at a time."""

    def __init__(self, load: Callable[[], TokenModel]) -> None:
        self._load = load
        self._model: TokenModel | None = None
        self._cached: list[int] = []  # ids whose keys and values the model's cache holds
        self._lock = threading.Lock()
        self._rng = np.random.default_rng()

    @property
    def cached_tokens(self) -> int:
        """How many tokens the model's cache holds: the last prompt and what was generated after it."""
        return len(self._cached)

    @property
    def loaded_model(self) -> TokenModel | None:
        """The model if it is loaded; None before the first fetch loads it."""
        return self._model

    @property
    def model(self) -> TokenModel:
        """The model, loaded on first use."""
        with self._lock:
            return self._loaded()

    def _loaded(self) -> TokenModel:
        if self._model is None:
            self._model = self._load()
        return self._model

    def generate(
        self,
        prompt: str,
        on_text: Callable[[str], bool],
        cancelled: threading.Event,
        temperature: float = DEFAULT_TEMPERATURE,
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> tuple[int, list[int]]:
        """Generate after ``prompt``, passing text to ``on_text`` until it returns True.

        Returns the prompt's length in tokens and the tokens generated (an end token is not included).
        """
        with self._lock:
            model = self._loaded()
            ids = model.encode(prompt)
            if len(ids) >= model.context_length:
                raise ProviderError(f"the prompt is {len(ids)} tokens, more than the model's context of {model.context_length}")
            logits = self._prefill(model, ids, cancelled)
            decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
            generated: list[int] = []
            while logits is not None and not cancelled.is_set():
                token = sample(logits, temperature, self._rng)
                if token in model.stop_ids:
                    break
                generated.append(token)
                text = decoder.decode(model.piece(token))
                if text and on_text(text):
                    break
                if len(generated) >= max_tokens or len(self._cached) >= model.context_length:
                    break
                # Native model code may hold the GIL through a whole forward pass: let the event
                # loop run between tokens, so the editor stays answered and a cancel lands at once.
                time.sleep(0)
                logits = self._advance(model, [token], cancelled)
            tail = decoder.decode(b"", final=True)
            if tail:
                on_text(tail)
            return len(ids), generated

    def _prefill(self, model: TokenModel, ids: list[int], cancelled: threading.Event) -> np.ndarray | None:
        """Evaluate what the cache lacks of ``ids`` (at least the last id, for its logits)."""
        reused = 0
        for cached, new in zip(self._cached, ids[:-1]):
            if cached != new:
                break
            reused += 1
        self._cached = self._cached[:reused]
        logits = None
        for start in range(reused, len(ids), PREFILL_CHUNK):
            logits = self._advance(model, ids[start : start + PREFILL_CHUNK], cancelled)
            if logits is None:
                return None
        return logits

    def _advance(self, model: TokenModel, ids: list[int], cancelled: threading.Event) -> np.ndarray | None:
        if cancelled.is_set():
            return None
        known = self._cached
        self._cached = []  # should the pass fail, the cache holds nothing we can trust
        logits = model.forward(ids, len(known))
        known.extend(ids)
        self._cached = known
        return logits


class LocalProvider:
    """A provider over a TokenModel: a chat-template prompt with the tools, tokens as ``saying``,
    calls as ``doing``. ``template`` names one of ``tool_text.TEMPLATES`` (ChatML by default)."""

    def __init__(
        self,
        load: Callable[[], TokenModel],
        temperature: float | None = None,
        max_tokens: int | None = None,
        template: str | None = None,
        name: str = "local",
    ) -> None:
        self.name = name  # the provider's -p name, for the refusal of images
        self.generator = Generator(load)
        self.temperature = checked_temperature(temperature)
        self.max_tokens = checked_max_tokens(max_tokens)
        self.template = template_named(template)

    @property
    def context_tokens(self) -> int | None:
        """What a prompt may take of the loaded model's context, leaving room for the reply;
        None until the first fetch loads the model (the session then uses its fallback)."""
        model = self.generator.loaded_model
        return max(model.context_length - self.max_tokens, 1) if model else None

    async def context_window(self) -> int:
        """The model file's own context, in tokens: the model loaded (off the event loop) to read it,
        so that the session sizes the first turn's prompt to it and counts with its tokenizer."""
        model = await asyncio.to_thread(lambda: self.generator.model)
        return model.context_length

    def count_tokens(self, text: str) -> int:
        """The model's own count once it is loaded, the estimate before."""
        model = self.generator.loaded_model
        return len(model.encode(text)) if model else estimate_tokens(text)

    async def fetch(self, messages: list[Message], tools: list[ToolDefinition], emit: Emit) -> None:
        refuse_images(self.name, messages)
        prompt = self.template.render(messages, tools)
        await run_in_thread(lambda send, cancelled: self._generate(prompt, send, cancelled), emit)

    def _generate(self, prompt: str, send: Emit, cancelled: threading.Event) -> None:
        stream = ToolCallStream(send, self.template.stops)
        prompt_tokens, generated = self.generator.generate(prompt, stream.feed, cancelled, self.temperature, self.max_tokens)
        stream.close()
        if not cancelled.is_set():  # a cancelled fetch has nobody to tell
            usage = Usage()
            usage.report(inputTokens=prompt_tokens, outputTokens=len(generated))
            usage.emit(send)


def checked_temperature(value: float | None) -> float:
    if value is None:
        return DEFAULT_TEMPERATURE
    temperature = float(value)
    if not temperature >= 0:
        raise ValueError(f"temperature must be 0 or more, got {value!r}")
    return temperature


def checked_max_tokens(value: int | None) -> int:
    if value is None:
        return DEFAULT_MAX_TOKENS
    if isinstance(value, bool) or int(value) != value or int(value) < 1:
        raise ValueError(f"max_tokens must be a whole number of at least 1, got {value!r}")
    return int(value)


def env_path(name: str, what: str) -> Path:
    """The existing file named by environment variable ``name``; ``what`` says what it should be."""
    value = os.environ.get(name, "").strip()
    if not value:
        raise ProviderError(f"{name} is not set: point it at {what}")
    path = Path(value).expanduser()
    if not path.is_file():
        raise ProviderError(f"{name}={value}: no such file ({what} expected)")
    return path


def env_int(name: str, default: int) -> int:
    """A positive whole number from the environment, ``default`` when unset."""
    return positive_number(name, default, int, "a whole number")


def require_module(module: str, extra: str) -> None:
    """Fail with the install line when the optional package behind a provider is missing."""
    if importlib.util.find_spec(module) is None:
        raise ProviderError(
            f"the {extra} provider needs its extra: in the elelem-lsp repository, "
            f"pip install '.[{extra}]' (or pipx install --force '.[{extra}]')"
        )
