"""Fixtures for the local-model providers: tiny models made on the spot, and their environment.

The models come from tiny_models.py (random weights, a byte-level vocabulary):
one GGUF for llama, ggml and candle, and the same weights as a llama2.c
checkpoint for llama2. A provider's tests skip, naming the extra to install,
only when that extra is missing.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tiny_models import TinyConfig, write_gguf, write_llama2

EXTRAS = {"llama": "llama_cpp", "ggml": "ctransformers", "candle": "candle", "llama2": "numpy"}
PROVIDERS = list(EXTRAS)


def require_extra(provider: str) -> None:
    """Skip the test, saying which extra to install, when ``provider``'s package is missing."""
    module = EXTRAS[provider]
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"the {provider} extra is not installed ({module} missing): pip install 'elelem-lsp[{provider}]'")


def ggml_library() -> str:
    """ctransformers' build for this CPU, named so it skips its slow probe."""
    flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    return "avx2" if " avx2" in flags else "avx" if " avx" in flags else "basic"


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
