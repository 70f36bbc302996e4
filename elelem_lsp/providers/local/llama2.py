"""The ``llama2`` provider: Karpathy's llama2.c checkpoints, run in numpy.

Bridges a llama2.c model file (run.c's layout: a header of seven int32s, then
float32 weights, layer by layer per kind) and its ``tokenizer.bin`` to the
agent, through the shared token loop. The forward pass is run.c's: RMSNorm,
rotary embeddings on adjacent pairs, attention with a KV cache and grouped KV
heads, a SwiGLU feed-forward. Generation stops on BOS or EOS, at max tokens,
or at the template's end marker. Configured by environment only:
``ELELEM_LLAMA2_MODEL``, ``ELELEM_LLAMA2_TOKENIZER``, and ``ELELEM_LLAMA2_TEMPLATE``
(``chatml``, the default, or ``llama2`` for Llama 2 chat models).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...agent.messages import ProviderError
from .generation import LocalProvider, env_path
from .sentencepiece import PieceVocab

HEADER = struct.Struct("<7i")
RMS_EPSILON = 1e-5
ROPE_BASE = 10000.0


@dataclass(frozen=True)
class Llama2Config:
    dim: int
    hidden_dim: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    vocab_size: int
    seq_len: int
    shared_classifier: bool

    @property
    def head_size(self) -> int:
        return self.dim // self.n_heads


def read_config(header: bytes) -> Llama2Config:
    dim, hidden, layers, heads, kv_heads, vocab, seq_len = HEADER.unpack(header[: HEADER.size])
    config = Llama2Config(dim, hidden, layers, heads, kv_heads, abs(vocab), seq_len, vocab > 0)
    if min(dim, hidden, layers, heads, kv_heads, config.vocab_size, seq_len) < 1:
        raise ValueError(f"not a llama2.c checkpoint: its header reads {config}")
    if dim % heads or heads % kv_heads or config.head_size % 2:
        raise ValueError(f"not a llama2.c checkpoint: {heads} heads, {kv_heads} KV heads and dim {dim} do not fit")
    return config


class Llama2Model:
    """A llama2.c checkpoint held in memory, with its KV cache and tokenizer."""

    def __init__(self, checkpoint: Path, tokenizer: Path) -> None:
        data = Path(checkpoint).read_bytes()
        if len(data) < HEADER.size:
            raise ValueError(f"{checkpoint} is too short to be a llama2.c checkpoint")
        config = self.config = read_config(data)
        floats = np.frombuffer(data, dtype=np.float32, offset=HEADER.size)
        d, h, n, kv = config.dim, config.hidden_dim, config.n_layers, config.n_kv_heads * config.head_size
        layout: list[tuple[str, tuple[int, ...]]] = [
            ("embedding", (config.vocab_size, d)),
            ("attn_norm", (n, d)),
            ("wq", (n, d, d)),
            ("wk", (n, kv, d)),
            ("wv", (n, kv, d)),
            ("wo", (n, d, d)),
            ("ffn_norm", (n, d)),
            ("w1", (n, h, d)),
            ("w2", (n, d, h)),
            ("w3", (n, h, d)),
            ("final_norm", (d,)),
            ("rope_tables", (config.seq_len * config.head_size,)),
        ]
        if not config.shared_classifier:
            layout.append(("classifier", (config.vocab_size, d)))
        expected = sum(int(np.prod(shape)) for _, shape in layout)
        if floats.size != expected:
            raise ValueError(f"{checkpoint} holds {floats.size} weights; a model with the header {config} needs {expected}")
        weights: dict[str, np.ndarray] = {}
        offset = 0
        for name, shape in layout:
            size = int(np.prod(shape))
            weights[name] = floats[offset : offset + size].reshape(shape)
            offset += size
        self.weights = weights
        self.classifier = weights.get("classifier", weights["embedding"])

        self.vocab = PieceVocab.from_llama2_tokenizer(tokenizer, config.vocab_size)
        self.context_length = config.seq_len
        self.stop_ids = frozenset(t for t in (self.vocab.bos_id, self.vocab.eos_id) if t is not None)

        pairs = np.arange(0, config.head_size, 2) / config.head_size
        angles = np.outer(np.arange(config.seq_len), ROPE_BASE**-pairs)
        self._cos, self._sin = np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)
        cache_shape = (n, config.seq_len, config.n_kv_heads, config.head_size)
        self._keys = np.zeros(cache_shape, dtype=np.float32)
        self._values = np.zeros(cache_shape, dtype=np.float32)

    def encode(self, prompt: str) -> list[int]:
        return self.vocab.encode(prompt)

    def piece(self, token: int) -> bytes:
        return self.vocab.piece_bytes(token)

    def forward(self, ids: Sequence[int], position: int) -> np.ndarray:
        config, w = self.config, self.weights
        count, end = len(ids), position + len(ids)
        if end > config.seq_len:
            raise ProviderError(f"the model's context of {config.seq_len} tokens is full")
        heads, kv_heads, size = config.n_heads, config.n_kv_heads, config.head_size
        group = heads // kv_heads
        cos, sin = self._cos[position:end, None, :], self._sin[position:end, None, :]
        # a query at position p sees keys at positions up to p
        hidden = np.arange(end)[None, :] > np.arange(position, end)[:, None]

        x = w["embedding"][np.asarray(ids)]
        for layer in range(config.n_layers):
            xb = rms_norm(x, w["attn_norm"][layer])
            q = rope((xb @ w["wq"][layer].T).reshape(count, heads, size), cos, sin)
            self._keys[layer, position:end] = rope((xb @ w["wk"][layer].T).reshape(count, kv_heads, size), cos, sin)
            self._values[layer, position:end] = (xb @ w["wv"][layer].T).reshape(count, kv_heads, size)
            keys, values = self._keys[layer, :end], self._values[layer, :end]
            q = q.reshape(count, kv_heads, group, size)
            scores = np.einsum("tkgd,skd->kgts", q, keys) / np.sqrt(size)
            scores[..., hidden] = -np.inf
            attention = softmax(scores)
            mixed = np.einsum("kgts,skd->tkgd", attention, values).reshape(count, config.dim)
            x = x + mixed @ w["wo"][layer].T
            xb = rms_norm(x, w["ffn_norm"][layer])
            gate, up = xb @ w["w1"][layer].T, xb @ w["w3"][layer].T
            x = x + (gate / (1.0 + np.exp(-gate)) * up) @ w["w2"][layer].T
        last = rms_norm(x[-1], w["final_norm"])
        return self.classifier @ last


def rms_norm(x: np.ndarray, weight: np.ndarray) -> np.ndarray:
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + RMS_EPSILON) * weight


def rope(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """Rotate adjacent pairs (x[2i], x[2i+1]) by their position's angle, as run.c does."""
    even, odd = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = even * cos - odd * sin
    out[..., 1::2] = even * sin + odd * cos
    return out


def softmax(x: np.ndarray) -> np.ndarray:
    shifted = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return shifted / np.sum(shifted, axis=-1, keepdims=True)


def load(checkpoint: Path, tokenizer: Path) -> Llama2Model:
    try:
        return Llama2Model(checkpoint, tokenizer)
    except ValueError as error:
        raise ProviderError(str(error)) from error


def factory(temperature: float | None = None, max_tokens: int | None = None, **_: object) -> LocalProvider:
    """Reads its model from the environment only; ``--model`` is ignored (docs/contract.md)."""
    checkpoint = env_path("ELELEM_LLAMA2_MODEL", "a llama2.c checkpoint (.bin)")
    tokenizer = env_path("ELELEM_LLAMA2_TOKENIZER", "a llama2.c tokenizer.bin")
    template = os.environ.get("ELELEM_LLAMA2_TEMPLATE")  # chatml (default) or llama2
    return LocalProvider(lambda: load(checkpoint, tokenizer), temperature, max_tokens, template, name="llama2")
