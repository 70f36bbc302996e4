"""The ``candle`` provider: a llama GGUF run on Hugging Face's candle from Python.

Bridges ``ELELEM_CANDLE_MODEL`` (a GGUF of the llama architecture, F32 or
quantized) to the agent through the shared token loop. The file is read with
``candle.utils.load_gguf``; the matrices stay quantized and multiply through
``QTensor.matmul_t``; the forward pass is written here on candle's Tensor
operations (RMSNorm, rotary embeddings on adjacent pairs as llama.cpp's GGUFs
expect, attention with a KV cache and grouped KV heads, SwiGLU). candle-nn's
own ``QuantizedLlama`` is not used: it calls functions that do not exist.
The tokenizer is the GGUF's vocabulary (``sentencepiece.PieceVocab``), special tokens included.
``ELELEM_CANDLE_TEMPLATE`` picks the chat template (``chatml``, the default, or ``llama2``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ...agent.messages import ProviderError
from .generation import LocalProvider, env_path, require_module
from .sentencepiece import PieceVocab


class CandleLlama:
    """A llama GGUF on candle tensors, with its KV cache and vocabulary."""

    def __init__(self, path: Path) -> None:
        import candle
        from candle import functional, utils

        self._candle, self._functional = candle, functional
        tensors, metadata = utils.load_gguf(str(path))
        architecture = metadata.get("general.architecture")
        if architecture != "llama":
            raise ValueError(f"{path} is a {architecture!r} model; the candle provider runs llama models")

        def setting(key: str, default: Any = None) -> Any:
            value = metadata.get(f"llama.{key}", default)
            if value is None:
                raise ValueError(f"{path} lacks llama.{key}")
            return value

        self.dim = int(setting("embedding_length"))
        self.n_layers = int(setting("block_count"))
        self.n_heads = int(setting("attention.head_count"))
        self.n_kv_heads = int(setting("attention.head_count_kv", self.n_heads))
        self.head_size = self.dim // self.n_heads
        self.epsilon = float(setting("attention.layer_norm_rms_epsilon", 1e-5))
        self.context_length = int(setting("context_length"))
        rope_base = float(setting("rope.freq_base", 10000.0))
        if int(setting("rope.dimension_count", self.head_size)) != self.head_size:
            raise ValueError(f"{path} rotates part of each head; the candle provider rotates whole heads")

        def weight(name: str) -> Any:
            if name not in tensors:
                raise ValueError(f"{path} lacks the tensor {name}")
            return tensors[name]

        self.embedding = weight("token_embd.weight").dequantize()  # rows are looked up, not multiplied
        # a model without its own output matrix reuses the embedding table
        self.output = tensors["output.weight"] if "output.weight" in tensors else weight("token_embd.weight")
        self.output_norm = weight("output_norm.weight").dequantize()
        self.layers = [
            {
                kind: (
                    weight(f"blk.{i}.{kind}.weight").dequantize() if kind.endswith("norm") else weight(f"blk.{i}.{kind}.weight")
                )
                for kind in (
                    "attn_norm",
                    "attn_q",
                    "attn_k",
                    "attn_v",
                    "attn_output",
                    "ffn_norm",
                    "ffn_gate",
                    "ffn_up",
                    "ffn_down",
                )
            }
            for i in range(self.n_layers)
        ]
        pairs = [rope_base ** (-i / self.head_size) for i in range(0, self.head_size, 2)]
        angles = np.outer(np.arange(self.context_length), pairs).astype(np.float32)
        self._cos, self._sin = candle.tensor(np.cos(angles).tolist()), candle.tensor(np.sin(angles).tolist())
        self._cache: list[tuple[Any, Any] | None] = [None] * self.n_layers

        self.vocab = PieceVocab.from_gguf_metadata(metadata)
        end_of_turn = [i for i, p in enumerate(self.vocab.pieces) if p in ("<|im_end|>", "<|eot_id|>")]
        self.stop_ids = frozenset([t for t in (self.vocab.eos_id,) if t is not None] + end_of_turn)

    def encode(self, prompt: str) -> list[int]:
        return self.vocab.encode(prompt)

    def piece(self, token: int) -> bytes:
        return self.vocab.piece_bytes(token)

    def forward(self, ids: Sequence[int], position: int) -> np.ndarray:
        candle = self._candle
        count, end = len(ids), position + len(ids)
        if end > self.context_length:
            raise ProviderError(f"the model's context of {self.context_length} tokens is full")
        x = self.embedding.index_select(candle.tensor(list(ids)), 0).reshape((1, count, self.dim))
        cos = self._cos.narrow(0, position, count).reshape((count, self.head_size // 2, 1))
        sin = self._sin.narrow(0, position, count).reshape((count, self.head_size // 2, 1))
        mask = self._mask(position, count) if count > 1 else None
        for index, layer in enumerate(self.layers):
            x = x + self._attention(index, layer, self._rms_norm(x, layer["attn_norm"]), position, cos, sin, mask)
            h = self._rms_norm(x, layer["ffn_norm"])
            gated = self._functional.silu(layer["ffn_gate"].matmul_t(h)) * layer["ffn_up"].matmul_t(h)
            x = x + layer["ffn_down"].matmul_t(gated)
        last = self._rms_norm(x, self.output_norm).narrow(1, count - 1, 1).reshape((1, self.dim))
        return np.asarray(self.output.matmul_t(last).values()[0], dtype=np.float32)

    def _attention(self, index: int, layer: dict[str, Any], x: Any, position: int, cos: Any, sin: Any, mask: Any) -> Any:
        candle = self._candle
        count, size = x.shape[1], self.head_size
        group = self.n_heads // self.n_kv_heads
        q = self._rope(layer["attn_q"].matmul_t(x).reshape((1, count, self.n_heads, size)).transpose(1, 2), cos, sin)
        k = self._rope(layer["attn_k"].matmul_t(x).reshape((1, count, self.n_kv_heads, size)).transpose(1, 2), cos, sin)
        v = layer["attn_v"].matmul_t(x).reshape((1, count, self.n_kv_heads, size)).transpose(1, 2)
        cached = self._cache[index]
        if position > 0 and cached is not None:
            k = candle.cat([cached[0].narrow(2, 0, position), k], 2)
            v = candle.cat([cached[1].narrow(2, 0, position), v], 2)
        k, v = k.contiguous(), v.contiguous()
        self._cache[index] = (k, v)
        # the query heads that share a KV head become one block of rows against it
        q = q.contiguous().reshape((1, self.n_kv_heads, group * count, size))
        scores = q.matmul(k.transpose(2, 3).contiguous()) / (size**0.5)
        if mask is not None:
            full = mask.broadcast_as((group, count, position + count)).reshape((group * count, position + count))
            scores = full.broadcast_as(scores.shape).where_cond(self._minus_infinity(scores.shape), scores)
        mixed = self._functional.softmax(scores, -1).matmul(v)
        mixed = mixed.reshape((1, self.n_heads, count, size)).transpose(1, 2).reshape((1, count, self.dim))
        return layer["attn_output"].matmul_t(mixed)

    def _rms_norm(self, x: Any, weight: Any) -> Any:
        mean_square = x.sqr().sum_keepdim(2) / self.dim
        return x.broadcast_div((mean_square + self.epsilon).sqrt()).broadcast_mul(weight)

    def _rope(self, x: Any, cos: Any, sin: Any) -> Any:
        """Rotate adjacent pairs (x[2i], x[2i+1]), llama.cpp's rotation for llama GGUFs."""
        batch, heads, count, size = x.shape
        pairs = x.contiguous().reshape((batch, heads, count, size // 2, 2))
        even, odd = pairs.narrow(-1, 0, 1), pairs.narrow(-1, 1, 1)
        rotated = self._candle.cat(
            [even.broadcast_mul(cos) - odd.broadcast_mul(sin), even.broadcast_mul(sin) + odd.broadcast_mul(cos)], -1
        )
        return rotated.flatten_from(-2)

    def _mask(self, position: int, count: int) -> Any:
        """1 where a query (row) must not see a key (column): keys after its own position."""
        candle = self._candle
        width = position + count
        keys = candle.tensor(list(range(width))).reshape((1, width)).broadcast_as((count, width))
        queries = candle.tensor(list(range(position, width))).reshape((count, 1)).broadcast_as((count, width))
        return keys > queries

    def _minus_infinity(self, shape: tuple[int, ...]) -> Any:
        return self._candle.tensor(float("-inf")).broadcast_as(shape)


def load(path: Path) -> CandleLlama:
    try:
        return CandleLlama(path)
    except ValueError as error:
        raise ProviderError(str(error)) from error


def factory(temperature: float | None = None, max_tokens: int | None = None, **_: object) -> LocalProvider:
    """Reads its model from ``ELELEM_CANDLE_MODEL`` only; ``--model`` is ignored (docs/contract.md)."""
    require_module("candle", "candle")
    path = env_path("ELELEM_CANDLE_MODEL", "a GGUF file of a llama model")
    template = os.environ.get("ELELEM_CANDLE_TEMPLATE")  # chatml (default) or llama2
    return LocalProvider(lambda: load(path), temperature, max_tokens, template, name="candle")
