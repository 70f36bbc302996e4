"""The local providers fill the hole with their model's own FIM tokens: a tiny random model
built here whose vocabulary holds Qwen2.5-Coder's, through the real local path.

The vocabulary is tiny_models.py's (tests/local) with the three FIM markers added as control
tokens; each provider's test skips, naming the extra, when that extra is missing.
"""

from __future__ import annotations

import sys
from importlib import import_module
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "local"))

import tiny_models  # noqa: E402
from local_extras import PROVIDERS, ggml_library, require_extra  # noqa: E402

from elelem_lsp.providers import implementation  # noqa: E402

FIM_TOKENS = ["<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>", "<|endoftext|>"]


@pytest.fixture(scope="module")
def fim_model(tmp_path_factory) -> dict[str, str]:
    """The tiny model with FIM tokens, as a GGUF and a llama2.c checkpoint; the environment naming them."""
    folder = tmp_path_factory.mktemp("tiny-fim")
    plain = tiny_models.vocabulary
    tiny_models.vocabulary = lambda: plain() + [(token, 0.0, tiny_models.CONTROL) for token in FIM_TOKENS]
    try:
        tiny_models.write_gguf(folder / "fim.gguf")
        tiny_models.write_llama2(folder / "fim.bin", folder / "tokenizer.bin")
    finally:
        tiny_models.vocabulary = plain
    return {
        "ELELEM_LLAMA_MODEL": str(folder / "fim.gguf"),
        "ELELEM_LLAMA_CTX": "2048",
        "ELELEM_GGML_MODEL": str(folder / "fim.gguf"),
        "ELELEM_GGML_CTX": "2048",
        "ELELEM_GGML_LIB": ggml_library(),
        "ELELEM_CANDLE_MODEL": str(folder / "fim.gguf"),
        "ELELEM_LLAMA2_MODEL": str(folder / "fim.bin"),
        "ELELEM_LLAMA2_TOKENIZER": str(folder / "tokenizer.bin"),
    }


def evaluated(provider) -> list[int]:
    """The token ids the model was run on: the prompt, then what it wrote."""
    if hasattr(provider, "generator"):
        return list(provider.generator._cached)
    return list(provider.llm.input_ids[: provider.llm.n_tokens])


def token_id(provider, token: str) -> int:
    if hasattr(provider, "generator"):
        model = provider.generator.model
        [found] = model.encode(token)[len(model.encode("")) :]
        return found
    [found] = provider.llm.tokenize(token.encode(), add_bos=False, special=True)
    return found


# llama.cpp and candle read special tokens out of the prompt's text; ctransformers' tokenizer and
# llama2.c's tokenizer.bin (which has no token kinds) spell them out character by character.
READS_SPECIALS = ["llama", "candle"]


def build(name: str, fim_model: dict[str, str], monkeypatch):
    require_extra(name)
    for variable, value in fim_model.items():
        monkeypatch.setenv(variable, value)
    return import_module(implementation(name)).factory(temperature=0, max_tokens=8)


@pytest.mark.parametrize("name", READS_SPECIALS)
async def test_a_local_model_is_asked_with_its_fim_tokens(name, fim_model, folder, monkeypatch):
    provider = build(name, fim_model, monkeypatch)
    folder.use(name, provider)
    folder.configure(maxTokens=8)

    await folder.complete("a.py", "def f(x):\n    return |\n")

    assert folder.failures == []
    assert folder.engine.folders["folder"].routes.current.name == "fim-tokens"
    ids = evaluated(provider)
    prefix, suffix, middle = (token_id(provider, token) for token in FIM_TOKENS[:3])
    assert prefix in ids and suffix in ids and middle in ids
    assert ids.index(prefix) < ids.index(suffix) < ids.index(middle)  # prefix, suffix, then the middle it writes
    assert folder.engine.counts("folder")["requests"] == 1


@pytest.mark.parametrize("name", [name for name in PROVIDERS if name not in READS_SPECIALS])
async def test_a_local_model_whose_tokenizer_cannot_take_fim_tokens_is_asked_the_chat_way(name, fim_model, folder, monkeypatch):
    provider = build(name, fim_model, monkeypatch)
    folder.use(name, provider)
    await folder.complete("a.py", "x = |")
    assert folder.failures == [] and folder.engine.folders["folder"].routes.current.name == "chat"
    assert folder.engine.counts("folder")["requests"] == 1
