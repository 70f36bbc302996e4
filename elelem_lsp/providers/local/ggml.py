"""The ``ggml`` provider: GGML and GGUF models through ctransformers' bundled runtime.

Bridges ``ELELEM_GGML_MODEL`` (the model file), ``ELELEM_GGML_TYPE`` (the
architecture, default ``llama``) and ``ELELEM_GGML_LIB`` (``avx2``, ``avx`` or
``basic`` to skip the slow CPU probe, or a path to the library) to the agent
through the shared token loop: ctransformers evaluates tokens and keeps the
cache, the loop samples and stops. Its tokenizer does not know special tokens,
so the ChatML prompt is read as plain text and the reply ends at the end-of-
sequence token, at the written end marker, or at max tokens.
``ELELEM_GGML_CTX`` and ``ELELEM_GGML_THREADS`` size the context and the threads;
``ELELEM_GGML_TEMPLATE`` picks the chat template (``chatml``, the default, or ``llama2``).
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ...agent.messages import ProviderError
from .generation import LocalProvider, env_int, env_path, require_module

DEFAULT_CONTEXT = 4096


class GgmlModel:
    """A ctransformers model driven token by token."""

    def __init__(self, path: Path, model_type: str, lib: str | None, context_length: int, threads: int) -> None:
        from ctransformers import AutoModelForCausalLM

        try:
            self._llm = AutoModelForCausalLM.from_pretrained(
                str(path), model_type=model_type, lib=lib, context_length=context_length, threads=threads
            )
        except (OSError, RuntimeError, ValueError) as error:
            raise ProviderError(f"ctransformers could not load {path} as {model_type!r}: {error}") from error
        self.context_length = int(self._llm.context_length)
        self.stop_ids = frozenset([int(self._llm.eos_token_id)])
        self._threads = int(self._llm.config.threads)
        self._batch = int(self._llm.config.batch_size)

    def encode(self, prompt: str) -> list[int]:
        # not LLM.tokenize: its buffer has one slot per character, and a character that falls
        # back to byte tokens overflows it (heap corruption, then a crash)
        data = prompt.encode("utf-8")
        # at most three tokens a byte (a space becomes U+2581, three byte tokens in a vocabulary
        # without it), plus BOS and the leading space
        room = (ctypes.c_int * (3 * len(data) + 4))()
        count = self._llm.ctransformers_llm_tokenize(data, self._llm.model_type == "llama", room)
        return list(room[:count])

    def piece(self, token: int) -> bytes:
        return self._llm.ctransformers_llm_detokenize(token) or b""

    def forward(self, ids: Sequence[int], position: int) -> np.ndarray:
        if position + len(ids) > self.context_length:
            raise ProviderError(f"the model's context of {self.context_length} tokens is full")
        tokens = (ctypes.c_int * len(ids))(*ids)
        if not self._llm.ctransformers_llm_batch_eval(tokens, len(ids), position, self._batch, self._threads):
            raise ProviderError("ctransformers failed to evaluate the tokens")
        size = self._llm.ctransformers_llm_logits_size()
        return np.ctypeslib.as_array(self._llm.ctransformers_llm_logits_data(), shape=(size,)).copy()


def settings() -> dict[str, Any]:
    return {
        "path": env_path("ELELEM_GGML_MODEL", "a GGML or GGUF model file"),
        "model_type": os.environ.get("ELELEM_GGML_TYPE", "").strip() or "llama",
        "lib": os.environ.get("ELELEM_GGML_LIB", "").strip() or None,
        "context_length": env_int("ELELEM_GGML_CTX", DEFAULT_CONTEXT),
        # half the cores, as llama-cpp-python does: ggml's threads spin while they wait, so
        # ctransformers' own default (-1) or every core is a hundred times slower on a busy machine
        "threads": env_int("ELELEM_GGML_THREADS", max(1, len(os.sched_getaffinity(0)) // 2)),
    }


def factory(temperature: float | None = None, max_tokens: int | None = None, **_: object) -> LocalProvider:
    """Reads its model from the environment only; ``--model`` is ignored (docs/contract.md)."""
    require_module("ctransformers", "ggml")
    chosen = settings()
    template = os.environ.get("ELELEM_GGML_TEMPLATE")  # chatml (default) or llama2
    return LocalProvider(lambda: GgmlModel(**chosen), temperature, max_tokens, template, name="ggml")
