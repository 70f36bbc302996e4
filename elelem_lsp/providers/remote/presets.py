"""OpenAI-compatible services by name: each preset is a base URL, a key variable and a model.

Bridges ``-p groq`` (and the others) to the ``openai`` provider. Every preset
reads ``<NAME>_API_KEY``, ``<NAME>_BASE_URL`` and ``<NAME>_MODEL``; the model
is overridable by ``--model``. Local servers (LM Studio, llama-server, vLLM)
need no key, and without a model they use the first one the server lists.
A preset declares whether its default model takes images; ``<NAME>_IMAGES``
(true/false) says so for the model actually used. Every preset asks for the
usage of a stream with ``stream_options``, except Mistral's, which sends usage
unasked and is not sent a field its API does not document.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Preset:
    base_url: str
    model: str | None  # None: ask the server's /models
    local: bool = False
    images: bool = False  # whether the default model reads images
    stream_usage: bool = True  # whether the API takes stream_options.include_usage


PRESETS: dict[str, Preset] = {
    "groq": Preset("https://api.groq.com/openai/v1", "llama-3.3-70b-versatile"),
    "openrouter": Preset("https://openrouter.ai/api/v1", "openrouter/auto", images=True),
    "mistral": Preset("https://api.mistral.ai/v1", "mistral-large-latest", stream_usage=False),
    "deepseek": Preset("https://api.deepseek.com/v1", "deepseek-chat"),
    "together": Preset("https://api.together.xyz/v1", "meta-llama/Llama-3.3-70B-Instruct-Turbo"),
    "fireworks": Preset("https://api.fireworks.ai/inference/v1", "accounts/fireworks/models/llama-v3p3-70b-instruct"),
    "cerebras": Preset("https://api.cerebras.ai/v1", "llama-3.3-70b"),
    "gemini": Preset("https://generativelanguage.googleapis.com/v1beta/openai", "gemini-2.5-flash", images=True),
    "lmstudio": Preset("http://localhost:1234/v1", None, local=True),
    "llamacpp": Preset("http://localhost:8080/v1", None, local=True),
    "vllm": Preset("http://localhost:8000/v1", None, local=True),
}


def variable(preset: str, suffix: str) -> str:
    return f"{preset.upper()}_{suffix}"


def factory(
    preset: str,
    model: str | None = None,
    temperature: float | None = None,
    max_tokens: int | None = None,
    **_: Any,
) -> Any:
    """The openai provider aimed at the preset's service."""
    # Imported here so that listing the presets at start-up does not import httpx.
    from .http import env
    from .openai import OpenAIProvider, flag

    settings = PRESETS[preset]
    return OpenAIProvider(
        model or env(variable(preset, "MODEL"), settings.model),
        base_url=env(variable(preset, "BASE_URL"), settings.base_url),
        api_key=env(variable(preset, "API_KEY")),
        key_env=variable(preset, "API_KEY"),
        key_required=not settings.local,
        model_env=variable(preset, "MODEL"),
        temperature=temperature,
        max_tokens=max_tokens,
        name=preset,
        images=flag(variable(preset, "IMAGES"), settings.images),
        images_hint=f"set {variable(preset, 'IMAGES')}=true if its model reads them",
        stream_usage=settings.stream_usage,
        window_lookup=settings.local,  # a server of one's own says the window it was started with
    )
