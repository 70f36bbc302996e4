"""The ``llama`` provider: a GGUF model run in-process by llama-cpp-python (llama.cpp).

Bridges the agent's messages and tools to ``Llama.create_chat_completion``
(streamed) with the model's own chat template, and its chunks back to events:
text as ``saying`` and tool calls as ``doing``, whether the chat format returns
them as ``tool_calls`` (llama-cpp-python's function-calling formats, or a
forced tool) or the template asks the model to write ``<tool_call>`` tags (Qwen
and Hermes style, read by ``tool_text``). A template that knows nothing of
tools gets them described in the system prompt.

``--model`` / the ``model`` setting, else ``ELELEM_LLAMA_MODEL``, is the .gguf
path. ``ELELEM_LLAMA_CTX`` (default 4096), ``ELELEM_LLAMA_THREADS`` and
``ELELEM_LLAMA_CHAT_FORMAT`` (a llama-cpp-python chat format name, e.g.
``chatml-function-calling``) tune it.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ...agent.bridge import run_in_thread
from ...agent.budget import estimate_tokens
from ...agent.messages import Emit, Message, ProviderError, ToolDefinition
from ..images import refuse_images
from ..shaping import ToolCalls, chat_message
from .generation import checked_max_tokens, checked_temperature, env_int, env_path, require_module
from .tool_text import ToolCallStream, with_tools_described, write_arguments

DEFAULT_CONTEXT = 4096


class LlamaCppProvider:
    """One llama.cpp model, loaded on the first fetch and kept for the provider's life."""

    def __init__(
        self,
        model_path: Path,
        context: int = DEFAULT_CONTEXT,
        threads: int | None = None,
        chat_format: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        tool_choice: str | None = None,
    ) -> None:
        self.model_path = model_path
        self.context = context
        self.threads = threads
        self.chat_format = chat_format
        self.temperature = checked_temperature(temperature)
        self.max_tokens = checked_max_tokens(max_tokens)
        self.tool_choice = tool_choice  # "auto" (None), "none", or a tool's name to force it
        self._llm: Any = None
        self._lock = threading.Lock()

    @property
    def llm(self) -> Any:
        """The loaded ``llama_cpp.Llama``, loaded on first use."""
        if self._llm is not None:
            return self._llm
        with self._lock:
            return self._loaded()

    def _loaded(self) -> Any:
        if self._llm is None:
            from llama_cpp import Llama

            try:
                self._llm = Llama(
                    model_path=str(self.model_path),
                    n_ctx=self.context,
                    n_threads=self.threads,
                    n_threads_batch=self.threads,
                    chat_format=self.chat_format,
                    verbose=False,
                )
            except ValueError as error:
                raise ProviderError(f"llama.cpp could not load {self.model_path}: {error}") from error
        return self._llm

    @property
    def context_tokens(self) -> int:
        """What a prompt may take of ``n_ctx``, leaving room for the reply."""
        return max(self.context - self.max_tokens, 1)

    async def context_window(self) -> int:
        """``n_ctx``, with the model loaded (off the event loop) so that even the first turn is
        counted by its own tokenizer, not the estimate."""
        await asyncio.to_thread(lambda: self.llm)
        return self.context

    def count_tokens(self, text: str) -> int:
        """llama.cpp's own count once the model is loaded, the estimate before."""
        if self._llm is None:
            return estimate_tokens(text)
        return len(self._llm.tokenize(text.encode("utf-8", "replace"), add_bos=False, special=False))

    async def fetch(self, messages: list[Message], tools: list[ToolDefinition], emit: Emit) -> None:
        refuse_images("llama", messages)
        await run_in_thread(lambda send, cancelled: self._complete(messages, tools, send, cancelled), emit)

    def _template_writes_tools(self, llm: Any) -> bool:
        """Whether the chat format passes tools to the model itself."""
        if llm.chat_format != "chat_template.default":
            return llm.chat_format in ("chatml-function-calling", "functionary", "functionary-v1", "functionary-v2")
        return "tools" in llm.metadata.get("tokenizer.chat_template", "")

    def _complete(self, messages: list[Message], tools: list[ToolDefinition], send: Emit, cancelled: threading.Event) -> None:
        with self._lock:
            llm = self._loaded()
            if tools and not self._template_writes_tools(llm):
                messages = with_tools_described(messages, tools)
            request: dict[str, Any] = {
                "messages": [chat_message(m, write_arguments) for m in messages],
                "stream": True,
                "temperature": self.temperature,
                "max_tokens": self.max_tokens,
            }
            if tools:
                request["tools"] = tools
                if self.tool_choice in ("auto", "none"):
                    request["tool_choice"] = self.tool_choice
                elif self.tool_choice:
                    request["tool_choice"] = {"type": "function", "function": {"name": self.tool_choice}}
            if not isinstance(request.get("tool_choice"), dict):  # a forced call's grammar may forbid ending
                request["logits_processor"] = end_when_cancelled(cancelled, llm.token_eos())
            text = ToolCallStream(send)
            calls = ToolCalls(f"llama-{len(messages)}")
            chunks = llm.create_chat_completion(**request)
            try:
                for chunk in chunks:
                    delta = chunk["choices"][0].get("delta") or {}
                    if delta.get("content") and text.feed(delta["content"]):
                        break
                    for part in delta.get("tool_calls") or []:
                        function = part.get("function") or {}
                        calls.add(
                            part.get("index", 0),
                            id=part.get("id"),
                            name=function.get("name"),
                            arguments=function.get("arguments"),
                        )
                    if cancelled.is_set():
                        break
            finally:
                chunks.close()
            text.close()
        if not cancelled.is_set():
            calls.emit(send)


def end_when_cancelled(cancelled: threading.Event, end_token: int) -> list[Callable[[Any, Any], Any]]:
    """A logits processor that makes the next token the end once the fetch is cancelled.

    llama-cpp-python holds back every chunk after a token that is not valid UTF-8
    (0.3.16), so waiting for the next chunk is not enough to stop promptly.
    """

    def process(input_ids: Any, scores: Any) -> Any:
        if cancelled.is_set():
            scores[:] = -np.inf
            scores[end_token] = 0.0
        return scores

    return [process]


def factory(
    model: str | None = None,
    temperature: float | None = None,
    max_tokens: int | None = None,
    tool_choice: str | None = None,
    **_: object,
) -> LlamaCppProvider:
    require_module("llama_cpp", "llama")
    if model:
        path = Path(model).expanduser()
        if not path.is_file():
            raise ProviderError(f"model {model}: no such file (the llama provider takes a path to a .gguf file)")
    else:
        path = env_path("ELELEM_LLAMA_MODEL", "a .gguf model file (or pass --model PATH)")
    return LlamaCppProvider(
        path,
        context=env_int("ELELEM_LLAMA_CTX", DEFAULT_CONTEXT),
        # Half the cores for the prompt too: llama-cpp-python's own default there is every core,
        # and ggml's threads spin while they wait, so a busy machine made prompts many times slower.
        threads=env_int("ELELEM_LLAMA_THREADS", max(1, len(os.sched_getaffinity(0)) // 2)),
        chat_format=os.environ.get("ELELEM_LLAMA_CHAT_FORMAT", "").strip() or None,
        temperature=temperature,
        max_tokens=max_tokens,
        tool_choice=tool_choice,
    )
