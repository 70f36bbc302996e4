"""Which local-model extras are installed, and how a test says so when one is missing."""

from __future__ import annotations

from pathlib import Path

from optional_parts import require_module

EXTRAS = {"llama": "llama_cpp", "ggml": "ctransformers", "candle": "candle", "llama2": "numpy"}
PROVIDERS = list(EXTRAS)


def require_extra(provider: str) -> None:
    """Skip the test, saying which extra to install, when ``provider``'s package is missing."""
    module = EXTRAS[provider]
    require_module(module, "local", f"python3 -m pip install -e '.[{provider}]' (the {provider} extra)")


def ggml_library() -> str:
    """ctransformers' build for this CPU, named so it skips its slow probe."""
    flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    return "avx2" if " avx2" in flags else "avx" if " avx" in flags else "basic"
