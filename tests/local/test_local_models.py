"""The models we run ourselves agree with llama.cpp: same tokens from the same text, same logits.

The tiny model is one set of weights written as a GGUF and as a llama2.c
checkpoint, so the numpy runner (llama2), the candle forward pass, llama.cpp
and ctransformers must all compute the same next-token scores.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from local_extras import require_extra
from optional_parts import require_module
from elelem_lsp.providers.local.generation import Generator
from elelem_lsp.providers.local.llama2 import Llama2Model
from elelem_lsp.providers.local.sentencepiece import PieceVocab

TEXTS = [
    "hello there",
    "<|im_start|>user\nthe thing in the inn<|im_end|>\n<|im_start|>assistant\n",
    "  two  spaces, tabs\tand\nnew lines ",
    "café ☃ 😀 ünïcode",
    "<|im_end|><|im_end|>x",
]
PROMPT = "<|im_start|>user\nwrite the thing<|im_end|>\n<|im_start|>assistant\n"


@pytest.fixture(scope="module")
def numpy_model(tiny_dir):
    return Llama2Model(tiny_dir / "tiny-llama2.bin", tiny_dir / "tokenizer.bin")


@pytest.fixture(scope="module")
def gguf_vocab(tiny_dir):
    require_module("gguf", "local", "python3 -m pip install -e '.[dev]' (gguf reads the tiny GGUF's vocabulary)")
    import gguf
    reader = gguf.GGUFReader(tiny_dir / "tiny.gguf")
    metadata = {}
    for name, field in reader.fields.items():
        if name.startswith("tokenizer.ggml."):
            metadata[name] = field.contents()
    return PieceVocab.from_gguf_metadata(metadata)


@pytest.fixture(scope="module")
def llama_cpp_model(tiny_dir):
    require_extra("llama")
    import llama_cpp

    return llama_cpp.Llama(str(tiny_dir / "tiny.gguf"), n_ctx=4096, logits_all=True, verbose=False)


@pytest.mark.parametrize("text", TEXTS)
def test_gguf_vocabulary_tokenizes_like_llama_cpp(text, gguf_vocab, llama_cpp_model):
    assert gguf_vocab.encode(text) == llama_cpp_model.tokenize(text.encode(), special=True)


@pytest.mark.parametrize("text", TEXTS)
def test_llama2_tokenizer_reads_special_markers_as_plain_text_like_ctransformers(text, numpy_model, tiny_dir):
    require_extra("ggml")
    from elelem_lsp.providers.local.ggml import GgmlModel

    from local_extras import ggml_library

    reference = GgmlModel(tiny_dir / "tiny.gguf", "llama", ggml_library(), 4096, 1)
    assert numpy_model.encode(text) == reference.encode(text)


def test_tokens_decode_back_to_the_text(numpy_model, gguf_vocab):
    text = "café ☃ 😀 the inn"
    for vocab in (numpy_model.vocab, gguf_vocab):
        ids = vocab.encode(text)
        assert vocab.decode(ids) == " " + text  # SentencePiece's leading space
    emoji = numpy_model.vocab.encode("😀", add_bos=False)
    assert [numpy_model.vocab.pieces[i] for i in emoji] == [" ", "<0xF0>", "<0x9F>", "<0x98>", "<0x80>"]
    assert numpy_model.vocab.encode("the", add_bos=False) == [numpy_model.vocab.pieces.index(" the")]


def test_llama2_tokenizer_short_of_pieces_is_a_clear_error(tiny_dir):
    with pytest.raises(ValueError, match="fewer than the model's 9999 pieces"):
        PieceVocab.from_llama2_tokenizer(tiny_dir / "tokenizer.bin", 9999)


def test_a_truncated_checkpoint_is_a_clear_error(tiny_dir, tmp_path):
    broken = tmp_path / "broken.bin"
    broken.write_bytes((tiny_dir / "tiny-llama2.bin").read_bytes()[:-100])
    with pytest.raises(ValueError, match="holds .* weights; a model with the header .* needs"):
        Llama2Model(broken, tiny_dir / "tokenizer.bin")


def reference_logits(numpy_model: Llama2Model, ids: list[int]) -> np.ndarray:
    return numpy_model.forward(ids, 0)


def test_candle_computes_the_same_logits_as_numpy(numpy_model, tiny_dir):
    require_extra("candle")
    from elelem_lsp.providers.local.candle import CandleLlama

    model = CandleLlama(tiny_dir / "tiny.gguf")
    ids = model.encode(PROMPT)
    expected = reference_logits(numpy_model, ids)
    np.testing.assert_allclose(model.forward(ids, 0), expected, atol=1e-4)
    # one token at a time through the KV cache gives the same scores as the whole prompt at once
    for position, token in enumerate(ids):
        stepped = model.forward([token], position)
    np.testing.assert_allclose(stepped, expected, atol=1e-4)


def test_candle_on_q8_stays_close_to_f32(numpy_model, tiny_dir):
    require_extra("candle")
    from elelem_lsp.providers.local.candle import CandleLlama

    model = CandleLlama(tiny_dir / "tiny-q8.gguf")
    ids = model.encode(PROMPT)
    expected = reference_logits(numpy_model, ids)
    assert np.abs(model.forward(ids, 0) - expected).max() < 0.1 * expected.std()


def test_llama_cpp_computes_the_same_logits_as_numpy(numpy_model, llama_cpp_model):
    ids = llama_cpp_model.tokenize(PROMPT.encode(), special=True)
    llama_cpp_model.reset()
    llama_cpp_model.eval(ids)
    actual = np.asarray(llama_cpp_model.scores[len(ids) - 1])
    expected = reference_logits(numpy_model, ids)
    assert np.abs(actual - expected).max() < 0.01 * expected.std()  # llama.cpp keeps F16 keys and values
    assert actual.argmax() == expected.argmax()


def test_candle_reads_a_gguf_without_an_output_matrix_like_llama_cpp(tmp_path):
    require_extra("candle")
    require_extra("llama")
    import llama_cpp

    from elelem_lsp.providers.local.candle import CandleLlama
    from tiny_models import write_gguf

    path = write_gguf(tmp_path / "tied.gguf", tie_embeddings=True)
    model = CandleLlama(path)
    reference = llama_cpp.Llama(str(path), n_ctx=4096, logits_all=True, verbose=False)
    ids = model.encode(PROMPT)
    reference.eval(ids)
    expected = np.asarray(reference.scores[len(ids) - 1])
    actual = model.forward(ids, 0)
    assert np.abs(actual - expected).max() < 0.01 * expected.std()
    assert actual.argmax() == expected.argmax()


def test_ctransformers_computes_the_same_logits_as_numpy(numpy_model, tiny_dir):
    require_extra("ggml")
    from elelem_lsp.providers.local.ggml import GgmlModel

    from local_extras import ggml_library

    model = GgmlModel(tiny_dir / "tiny.gguf", "llama", ggml_library(), 4096, 1)
    ids = model.encode(PROMPT)
    expected = reference_logits(numpy_model, ids)
    actual = model.forward(ids, 0)
    assert np.abs(actual - expected).max() < 0.01 * expected.std()
    assert actual.argmax() == expected.argmax()


class CountingModel:
    """The numpy model, counting the tokens each forward pass evaluates."""

    def __init__(self, model: Llama2Model) -> None:
        self.model = model
        self.context_length = model.context_length
        self.stop_ids = model.stop_ids
        self.encode, self.piece = model.encode, model.piece
        self.evaluated: list[int] = []

    def forward(self, ids, position):
        self.evaluated.append(len(ids))
        return self.model.forward(ids, position)


def test_the_cache_of_a_shared_prompt_prefix_is_reused(numpy_model):
    counting = CountingModel(numpy_model)
    loads = []
    generator = Generator(lambda: loads.append(1) or counting)
    never = threading.Event()
    prompt_length, first = generator.generate(PROMPT, lambda text: False, never, temperature=0, max_tokens=5)
    assert prompt_length == len(numpy_model.encode(PROMPT))
    assert counting.evaluated[0] == prompt_length and len(counting.evaluated) == 5  # prompt, then 4 tokens

    counting.evaluated.clear()
    longer = PROMPT + "the reply<|im_end|>\n<|im_start|>user\nmore<|im_end|>\n<|im_start|>assistant\n"
    generator.generate(longer, lambda text: False, never, temperature=0, max_tokens=5)
    assert counting.evaluated[0] < len(numpy_model.encode(longer)) - prompt_length + 5  # only the new part
    assert loads == [1]  # loaded once, kept warm

    counting.evaluated.clear()
    _, again = generator.generate(PROMPT, lambda text: False, never, temperature=0, max_tokens=5)
    assert again == first  # greedy: same tokens, whatever the cache held before


def test_the_generator_stops_when_the_text_stream_says_so(numpy_model):
    generator = Generator(lambda: numpy_model)
    seen: list[str] = []
    generator.generate(PROMPT, lambda text: seen.append(text) or len(seen) == 3, threading.Event(),
                       temperature=0, max_tokens=50)
    assert len(seen) == 3


def test_the_generator_stops_at_an_end_token(numpy_model):
    _, free = Generator(lambda: numpy_model).generate(PROMPT, lambda text: False, threading.Event(),
                                                      temperature=0, max_tokens=6)
    ending = CountingModel(numpy_model)
    ending.stop_ids = frozenset([free[3]])  # as if the fourth token were EOS
    _, stopped = Generator(lambda: ending).generate(PROMPT, lambda text: False, threading.Event(),
                                                    temperature=0, max_tokens=6)
    assert stopped == free[:3]


class ScriptedModel:
    """A stand-in TokenModel whose scores always favour the next token of a script.

    Random weights never write a tool call; this drives the real token loop,
    UTF-8 decoding and <tool_call> reading with one, token by token.
    """

    def __init__(self, vocab: PieceVocab, script: str) -> None:
        self.vocab = vocab
        self.script = vocab.encode(script, add_bos=False)[1:]  # without SentencePiece's leading space
        self.context_length = 4096
        self.stop_ids = frozenset([vocab.eos_id])
        self.prompt_length = 0

    def encode(self, prompt: str) -> list[int]:
        ids = self.vocab.encode(prompt)
        self.prompt_length = len(ids)
        return ids

    def piece(self, token: int) -> bytes:
        return self.vocab.piece_bytes(token)

    def forward(self, ids, position):
        step = position + len(ids) - self.prompt_length
        scores = np.zeros(len(self.vocab), dtype=np.float32)
        scores[self.script[step] if 0 <= step < len(self.script) else self.vocab.eos_id] = 10.0
        return scores


async def test_a_tool_call_written_token_by_token_becomes_a_doing_event(numpy_model):
    from elelem_lsp.providers.local.generation import LocalProvider

    script = 'Let me look… <tool_call>{"name": "read", "arguments": {"path": "README.md"}}</tool_call>'
    model = ScriptedModel(numpy_model.vocab, script)
    assert len(model.script) > 40  # many tokens, several bytes of "…" among them
    provider = LocalProvider(lambda: model, temperature=0, max_tokens=200)
    events: list[dict] = []
    await provider.fetch([{"role": "user", "content": "what is in the readme?"}],
                         [{"type": "function", "function": {"name": "read", "description": "Read file",
                                                            "parameters": {"type": "object"}}}], events.append)
    assert [e["type"] for e in events][-1] == "usage"  # the token counts come last
    events.pop()
    assert [e["type"] for e in events][-1] == "doing"
    assert "".join(e["text"] for e in events if e["type"] == "saying") == "Let me look… "
    assert events[-1]["name"] == "read" and events[-1]["arguments"] == {"path": "README.md"}
    assert sum(e["type"] == "saying" for e in events) > 5  # streamed, not saved up
