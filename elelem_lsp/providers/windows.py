"""Known context windows: how many tokens a model takes, by the name a provider sends it under.

Bridges a model name to the default of the ``contextTokens`` budget when neither the setting
nor the provider (its optional ``context_tokens``, as the local models have) says. A name is
matched by the first family it contains at a word's start, so ``openrouter/anthropic/claude-3.5-sonnet`` and
``claude-sonnet-4-5@20250929`` both find ``claude``. The figures are the vendors' published windows.
"""

from __future__ import annotations

import re

# most specific first: "gpt-4o" before "gpt-4", "gpt-4.1" before "gpt-4"
KNOWN_WINDOWS: tuple[tuple[str, int], ...] = (
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-4", 8_192),
    ("gpt-5", 400_000),
    ("gpt-3.5", 16_385),
    ("gpt-oss", 131_072),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4", 200_000),
    ("claude", 200_000),
    ("gemini", 1_048_576),
    ("llama3", 8_192),
    ("llama-3", 8_192),
    ("llama2", 4_096),
    ("llama-2", 4_096),
    ("mistral", 32_768),
    ("mixtral", 32_768),
    ("qwen", 32_768),
    ("deepseek", 65_536),
)


def model_window(model: str | None) -> int | None:
    """The known window of ``model``, None for a model we know nothing of."""
    if not model:
        return None
    name = model.lower()
    return next((tokens for family, tokens in KNOWN_WINDOWS if re.search(rf"(^|[^a-z0-9]){re.escape(family)}", name)), None)
