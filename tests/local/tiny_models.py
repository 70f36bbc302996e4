"""Tiny random llama models for the local-provider tests and bench/local.py.

One set of random weights and one small SentencePiece-style vocabulary (three
specials, the 256 byte pieces, the two ChatML markers, printable ASCII and a
few merges), written two ways: a GGUF of the llama architecture with a ChatML
chat template (for llama.cpp, ctransformers and candle) and a llama2.c
checkpoint with its tokenizer.bin (for the numpy runner). Both files describe
the same model, so every backend must compute the same logits.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

SPACE = "\u2581"  # SentencePiece's visible space
MERGES = [f"{SPACE}t", "he", f"{SPACE}the", "in", "ing", f"{SPACE}a", "er", "on"]

# token kinds, as GGUF numbers them
NORMAL, UNKNOWN, CONTROL, BYTE = 1, 2, 3, 6

# ChatML with tool support, in the style of Qwen 2.5 and Hermes: the shape the
# `tool_text` module writes for raw-generation models.
CHAT_TEMPLATE = """\
{%- if tools %}<|im_start|>system
{% if messages[0].role == 'system' %}{{ messages[0].content }}

{% endif %}# Tools

You may call one or more functions. The functions are listed in <tools></tools>:
<tools>
{% for tool in tools %}{{ tool | tojson }}
{% endfor %}</tools>

For each call, write a JSON object with the function name and its arguments within \
<tool_call></tool_call> tags:
<tool_call>
{"name": <function-name>, "arguments": <args-json-object>}
</tool_call><|im_end|>
{% elif messages[0].role == 'system' %}<|im_start|>system
{{ messages[0].content }}<|im_end|>
{% endif %}
{%- for message in messages %}
{%- if message.role == 'tool' %}<|im_start|>user
<tool_response>
{{ message.content }}
</tool_response><|im_end|>
{% elif message.role == 'assistant' %}<|im_start|>assistant
{{ message.content or '' }}
{%- for call in message.tool_calls or [] %}
<tool_call>
{"name": "{{ call.function.name }}", "arguments": {{ call.function.arguments }}}
</tool_call>
{%- endfor %}<|im_end|>
{% elif message.role != 'system' %}<|im_start|>{{ message.role }}
{{ message.content }}<|im_end|>
{% endif %}
{%- endfor %}
{%- if add_generation_prompt %}<|im_start|>assistant
{% endif %}"""


@dataclass(frozen=True)
class TinyConfig:
    dim: int = 64
    hidden_dim: int = 128
    n_layers: int = 2
    n_heads: int = 4
    n_kv_heads: int = 2  # grouped: two query heads share each key/value head
    # A small model's window: this tiny vocabulary spells text out nearly a token a byte, so the
    # full prompt (about 7,300 of its tokens) does not fit, and the agent sends the compact one.
    context_length: int = 4096
    seed: int = 1234

    @property
    def head_size(self) -> int:
        return self.dim // self.n_heads


def vocabulary() -> list[tuple[str, float, int]]:
    """(piece, score, kind) in id order: <unk> <s> </s>, bytes, ChatML markers, chars, merges."""
    pieces: list[tuple[str, float, int]] = [("<unk>", 0.0, UNKNOWN), ("<s>", 0.0, CONTROL), ("</s>", 0.0, CONTROL)]
    pieces += [(f"<0x{b:02X}>", 0.0, BYTE) for b in range(256)]
    pieces += [("<|im_start|>", 0.0, CONTROL), ("<|im_end|>", 0.0, CONTROL)]
    chars = [SPACE] + [chr(c) for c in range(0x21, 0x7F)]
    pieces += [(c, -100.0 - i, NORMAL) for i, c in enumerate(chars)]
    pieces += [(m, -1.0 - i, NORMAL) for i, m in enumerate(MERGES)]
    return pieces


def weights(config: TinyConfig) -> dict[str, np.ndarray]:
    """Random weights under their GGUF names, rows = outputs (PyTorch's Linear layout)."""
    rng = np.random.default_rng(config.seed)
    vocab = len(vocabulary())
    d, h, kv = config.dim, config.hidden_dim, config.n_kv_heads * config.head_size

    def linear(out: int, inp: int, gain: float = 1.0) -> np.ndarray:
        return (rng.standard_normal((out, inp)) * gain / np.sqrt(inp)).astype(np.float32)

    def norm() -> np.ndarray:
        return (1.0 + 0.1 * rng.standard_normal(d)).astype(np.float32)

    tensors = {"token_embd.weight": rng.standard_normal((vocab, d)).astype(np.float32)}
    for layer in range(config.n_layers):
        tensors |= {
            f"blk.{layer}.attn_norm.weight": norm(),
            f"blk.{layer}.attn_q.weight": linear(d, d),
            f"blk.{layer}.attn_k.weight": linear(kv, d),
            f"blk.{layer}.attn_v.weight": linear(kv, d),
            f"blk.{layer}.attn_output.weight": linear(d, d),
            f"blk.{layer}.ffn_norm.weight": norm(),
            f"blk.{layer}.ffn_gate.weight": linear(h, d),
            f"blk.{layer}.ffn_down.weight": linear(d, h),
            f"blk.{layer}.ffn_up.weight": linear(h, d),
        }
    tensors["output_norm.weight"] = norm()
    tensors["output.weight"] = linear(vocab, d, gain=3.0)  # peaked logits: greedy picks are clear
    return tensors


# -- a tiny model that calls a tool: weights made by hand, not drawn ---------------------------------
# Random weights never write a tool call. This model does, through the real token loop of every
# backend: after the prompt's last line break it writes the two tokens of CALL (a whole <tool_call>),
# then ends; once the context holds the byte 0xA7 (the "§" of a file name a tool result shows), one
# attention head finds it and the same line break is followed by DONE instead. One layer: the
# embedding of each token that matters is its own axis, the feed-forward part is zero.
# Two pieces: llama-cpp-python reads at most 32 bytes a token back as text.
CALL = ('<tool_call>{"name":"list",', '"arguments":{}}</tool_call>')
DONE = "Listed."
FLAG_BYTE = 0xA7  # the second byte of "§" in UTF-8


def tool_caller_vocabulary() -> list[tuple[str, float, int]]:
    """The tiny vocabulary and two whole pieces the model writes: the call, and its answer after."""
    return [*vocabulary(), *((piece, -1000.0, NORMAL) for piece in CALL), (DONE, -1000.0, NORMAL)]


def tool_caller_weights(config: TinyConfig) -> dict[str, np.ndarray]:
    """Weights under their GGUF names (rows = outputs) that write CALL, then DONE once it sees the flag."""
    pieces = [piece for piece, _, _ in tool_caller_vocabulary()]
    d, h, kv = config.dim, config.hidden_dim, config.n_kv_heads * config.head_size
    newline, flag = pieces.index("<0x0A>"), pieces.index(f"<0x{FLAG_BYTE:02X}>")
    call, call_end, done, eos = pieces.index(CALL[0]), pieces.index(CALL[1]), pieces.index(DONE), 2
    embedding = np.zeros((len(pieces), d), np.float32)
    for token, axis in ((newline, 0), (flag, 1), (call, 2), (done, 3), (call_end, 4)):
        embedding[token, axis] = 1.0
    slow = config.head_size - 2  # the slowest-turning pair of head 0: its score barely moves with distance
    query, key, value, out = (np.zeros((rows, d), np.float32) for rows in (d, kv, kv, d))
    query[slow, 0] = key[slow, 1] = 3.0  # a line break's query meets the flag's key, and nothing else
    value[0, 1] = 1.0
    out[10, 0] = 0.25  # what head 0 found becomes axis 10 of the stream
    scores = np.zeros((len(pieces), d), np.float32)
    scores[call, 0], scores[call, 10] = 10.0, -10.0  # a line break with no flag: the call
    scores[done, 10] = 10.0  # with the flag: the answer
    scores[call_end, 2] = 10.0  # the call's second piece after its first
    scores[eos, 4] = scores[eos, 3] = 10.0  # after the call or the answer: the end
    ones = np.ones(d, np.float32)
    tensors = {"token_embd.weight": embedding}
    for layer in range(config.n_layers):
        tensors |= {
            f"blk.{layer}.attn_norm.weight": ones,
            f"blk.{layer}.attn_q.weight": query if layer == 0 else np.zeros((d, d), np.float32),
            f"blk.{layer}.attn_k.weight": key if layer == 0 else np.zeros((kv, d), np.float32),
            f"blk.{layer}.attn_v.weight": value if layer == 0 else np.zeros((kv, d), np.float32),
            f"blk.{layer}.attn_output.weight": out if layer == 0 else np.zeros((d, d), np.float32),
            f"blk.{layer}.ffn_norm.weight": ones,
            f"blk.{layer}.ffn_gate.weight": np.zeros((h, d), np.float32),
            f"blk.{layer}.ffn_down.weight": np.zeros((d, h), np.float32),
            f"blk.{layer}.ffn_up.weight": np.zeros((h, d), np.float32),
        }
    return tensors | {"output_norm.weight": ones, "output.weight": scores}


def write_gguf(path: Path, config: TinyConfig = TinyConfig(), quantize_q8: bool = False,
               tie_embeddings: bool = False, tool_caller: bool = False) -> Path:
    """The tiny model as a llama GGUF (F32, or Q8_0 for the matrices when ``quantize_q8``).

    With ``tie_embeddings`` it has no output matrix: the embedding table scores the next token.
    With ``tool_caller`` it is the model that calls a tool (``tool_caller_weights``).
    """
    import gguf

    vocab = tool_caller_vocabulary() if tool_caller else vocabulary()
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("elelem tiny llama")
    writer.add_context_length(config.context_length)
    writer.add_embedding_length(config.dim)
    writer.add_block_count(config.n_layers)
    writer.add_feed_forward_length(config.hidden_dim)
    writer.add_rope_dimension_count(config.head_size)
    writer.add_head_count(config.n_heads)
    writer.add_head_count_kv(config.n_kv_heads)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_freq_base(10000.0)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0 if quantize_q8 else gguf.LlamaFileType.ALL_F32)
    writer.add_tokenizer_model("llama")
    writer.add_token_list([piece for piece, _, _ in vocab])
    writer.add_token_scores([score for _, score, _ in vocab])
    writer.add_token_types([kind for _, _, kind in vocab])
    writer.add_unk_token_id(0)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_chat_template(CHAT_TEMPLATE)
    for name, tensor in (tool_caller_weights(config) if tool_caller else weights(config)).items():
        if tie_embeddings and name == "output.weight":
            continue
        if quantize_q8 and tensor.ndim == 2:
            q8 = gguf.GGMLQuantizationType.Q8_0
            writer.add_tensor(name, gguf.quants.quantize(tensor, q8), raw_dtype=q8)
        else:
            writer.add_tensor(name, tensor)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def write_llama2(checkpoint: Path, tokenizer: Path, config: TinyConfig = TinyConfig(),
                 tool_caller: bool = False) -> tuple[Path, Path]:
    """The same model as a llama2.c checkpoint (run.c's version-0 layout) and tokenizer.bin."""
    vocab = tool_caller_vocabulary() if tool_caller else vocabulary()
    tensors = tool_caller_weights(config) if tool_caller else weights(config)
    layers = range(config.n_layers)

    def stacked(kind: str) -> list[np.ndarray]:
        return [tensors[f"blk.{layer}.{kind}.weight"] for layer in layers]

    # a negative vocab size tells run.c the classifier is not the embedding table
    header = struct.pack(
        "7i", config.dim, config.hidden_dim, config.n_layers, config.n_heads, config.n_kv_heads,
        -len(vocab), config.context_length,
    )
    rope_tables = np.zeros(config.context_length * config.head_size, dtype=np.float32)  # unused by run.c
    order = [tensors["token_embd.weight"], *stacked("attn_norm"), *stacked("attn_q"), *stacked("attn_k"),
             *stacked("attn_v"), *stacked("attn_output"), *stacked("ffn_norm"), *stacked("ffn_gate"),
             *stacked("ffn_down"), *stacked("ffn_up"), tensors["output_norm.weight"], rope_tables,
             tensors["output.weight"]]
    with open(checkpoint, "wb") as out:
        out.write(header)
        for array in order:
            out.write(np.ascontiguousarray(array, dtype=np.float32).tobytes())

    encoded = [piece.replace(SPACE, " ").encode() for piece, _, _ in vocab]
    with open(tokenizer, "wb") as out:
        out.write(struct.pack("i", max(len(e) for e in encoded)))
        for (_, score, _), piece in zip(vocab, encoded):
            out.write(struct.pack("fi", score, len(piece)))
            out.write(piece)
    return checkpoint, tokenizer
