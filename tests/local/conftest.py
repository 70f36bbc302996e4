"""Fixtures for the local-model providers: tiny models made on the spot, and their environment.

The models come from tiny_models.py (random weights, a byte-level vocabulary):
one GGUF for llama, ggml and candle, and the same weights as a llama2.c
checkpoint for llama2. A provider's tests skip, naming the extra to install,
only when that extra is missing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from local_extras import ggml_library
from tiny_models import TinyConfig, write_gguf, write_llama2

@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("tiny-models")
    write_gguf(folder / "tiny.gguf", TinyConfig())
    write_gguf(folder / "tiny-q8.gguf", TinyConfig(), quantize_q8=True)
    write_llama2(folder / "tiny-llama2.bin", folder / "tokenizer.bin", TinyConfig())
    return folder


@pytest.fixture(scope="session")
def tiny_env(tiny_dir: Path) -> dict[str, str]:
    """The environment that points every local provider at the tiny model."""
    return {
        "ELELEM_LLAMA_MODEL": str(tiny_dir / "tiny.gguf"),
        "ELELEM_LLAMA_CTX": "4096",  # the tiny model's own context (tiny_models.py)
        "ELELEM_GGML_CTX": "4096",
        "ELELEM_GGML_MODEL": str(tiny_dir / "tiny.gguf"),
        "ELELEM_GGML_LIB": ggml_library(),
        "ELELEM_CANDLE_MODEL": str(tiny_dir / "tiny.gguf"),
        "ELELEM_LLAMA2_MODEL": str(tiny_dir / "tiny-llama2.bin"),
        "ELELEM_LLAMA2_TOKENIZER": str(tiny_dir / "tokenizer.bin"),
    }


@pytest.fixture
def local_env(tiny_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    for name, value in tiny_env.items():
        monkeypatch.setenv(name, value)
    return tiny_env
