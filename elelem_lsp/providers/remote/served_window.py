"""The window a model server says its model has: Ollama's ``/api/show``, vLLM's ``/v1/models``
(``max_model_len``) and llama.cpp's ``/props`` (``n_ctx``).

Bridges a provider's optional ``context_window()`` (which the session asks before a turn, to size
the budget and the prompt) to the server's own figure instead of the family's published window.
Each lookup is made once per server and model and remembered; one that fails (no such endpoint, an
old server, no answer) is remembered as None and logged, and the turn goes on with what is known.
Ollama also runs the model with the window it is sent (``num_ctx``), so that figure is bounded by
``memory_cap``: a model that could take 128k tokens is not asked for more memory than the machine has.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from ...agent.messages import ProviderError
from .http import Transport, origin, request_json

log = logging.getLogger(__name__)

KV_BYTES_PER_TOKEN = 128 * 1024  # a 7-8B model's keys and values at f16 (32 layers, 8 heads of 128)
MEMORY_SHARE = 4  # the window's cache may take a quarter of the machine's memory
FALLBACK_CAP = 32_768  # where the memory cannot be read
SMALLEST_CAP = 4_096  # however little the memory: Ollama's own default

_looked_up: dict[tuple[str, str], int | None] = {}


def memory_cap() -> int:
    """The most tokens of window to ask a local server for: what a quarter of this machine's memory
    holds of a mid-sized model's cache."""
    try:
        memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):  # not a POSIX system
        return FALLBACK_CAP
    return max(SMALLEST_CAP, memory // MEMORY_SHARE // KV_BYTES_PER_TOKEN)


def whole_number(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


async def remembered(key: tuple[str, str], look_up: Any) -> int | None:
    """``look_up()``'s window for ``key`` (a server and a model), asked once; None when it failed."""
    if key not in _looked_up:
        try:
            _looked_up[key] = await look_up()
        except ProviderError as error:
            log.info("could not learn the window of %s from %s: %s", key[1] or "the model", origin(key[0]), error)
            _looked_up[key] = None
    return _looked_up[key]


async def ollama_window(host: str, model: str, transport: Transport | None = None) -> int | None:
    """The context length ``/api/show`` gives for ``model`` (its ``model_info``'s
    ``<architecture>.context_length``), None when it gives none."""

    async def look_up() -> int | None:
        shown = await request_json("POST", f"{host}/api/show", body={"model": model}, transport=transport)
        info = shown.get("model_info") if isinstance(shown, dict) else None
        lengths = [whole_number(v) for k, v in (info or {}).items() if k.endswith(".context_length")]
        return next((length for length in lengths if length), None)

    return await remembered((host, model), look_up)


async def openai_window(base_url: str, model: str, headers: dict[str, str], transport: Transport | None = None) -> int | None:
    """What an OpenAI-compatible server publishes of its window: the model's ``max_model_len`` in
    ``/models`` (vLLM), else ``n_ctx`` in ``/props`` at the server's root (llama.cpp's llama-server)."""

    async def look_up() -> int | None:
        listing = await request_json("GET", f"{base_url}/models", headers=headers, transport=transport)
        models = listing.get("data") if isinstance(listing, dict) else None
        for entry in models or ():
            if isinstance(entry, dict) and entry.get("id") == model and whole_number(entry.get("max_model_len")):
                return int(entry["max_model_len"])
        props = await request_json("GET", f"{origin(base_url)}/props", headers=headers, transport=transport)
        props = props if isinstance(props, dict) else {}
        return whole_number((props.get("default_generation_settings") or {}).get("n_ctx")) or whole_number(props.get("n_ctx"))

    return await remembered((base_url, model), look_up)
