"""The four local providers generating with the tiny model: streaming, greedy, limits, tools, cancel."""

from __future__ import annotations

import asyncio
import re
import time
from importlib import import_module
from typing import Any

import pytest

from local_extras import PROVIDERS, require_extra
from elelem_lsp.agent.messages import ProviderError
from elelem_lsp.providers import implementation

HELLO = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "hi"}]
PICK = {"type": "function", "function": {
    "name": "pick", "description": "Pick a speed",
    "parameters": {"type": "object", "properties": {"speed": {"enum": ["fast", "slow"]}},
                   "required": ["speed"], "additionalProperties": False}}}


def build(name: str, **options: Any) -> Any:
    require_extra(name)
    return import_module(implementation(name)).factory(**options)


async def fetch(provider: Any, messages: list[dict] = HELLO, tools: list[dict] | None = None) -> list[dict]:
    """The events of one fetch but its token counts (``usage``, tested on its own)."""
    events: list[dict] = []
    await provider.fetch(messages, tools or [], events.append)
    return [event for event in events if event["type"] != "usage"]


def said(events: list[dict]) -> str:
    return "".join(e["text"] for e in events if e["type"] == "saying")


def tokens_evaluated(provider: Any) -> int:
    """How many tokens the provider's model holds in its cache."""
    generator = getattr(provider, "generator", None)
    return generator.cached_tokens if generator is not None else provider.llm.n_tokens


@pytest.mark.parametrize("name", PROVIDERS)
async def test_streams_saying_per_token_and_greedy_repeats(name, local_env):
    provider = build(name, temperature=0, max_tokens=12)
    first = await fetch(provider)
    second = await fetch(provider)  # same provider: the model stayed loaded
    assert all(e["type"] == "saying" for e in first)
    assert len(first) > 3, "the reply should arrive as several events, not one at the end"
    assert said(first) and said(first) == said(second)
    again = await fetch(build(name, temperature=0, max_tokens=12))  # a fresh build gives the same reply
    assert said(again) == said(first)


@pytest.mark.parametrize("name", PROVIDERS)
async def test_max_tokens_cuts_the_reply_short(name, local_env):
    short = await fetch(build(name, temperature=0, max_tokens=4))
    longer = await fetch(build(name, temperature=0, max_tokens=16))
    assert len(short) <= 5  # one event per token at most, plus a held-back character
    # greedy: the short reply is the start of the long one (a cut character shows as U+FFFD)
    assert said(longer).startswith(said(short).rstrip("\ufffd"))
    assert len(said(short)) < len(said(longer))


@pytest.mark.parametrize("name", PROVIDERS)
async def test_temperature_above_zero_samples(name, local_env):
    provider = build(name, temperature=2.0, max_tokens=24)
    replies = {said(await fetch(provider)) for _ in range(3)}
    assert len(replies) > 1


@pytest.mark.parametrize("name", PROVIDERS)
async def test_generation_runs_off_the_event_loop(name, local_env):
    # llama-cpp-python slows down (quadratically) on the tiny model's invalid UTF-8: fewer tokens there
    provider = build(name, temperature=0, max_tokens=100 if name == "llama" else 300)
    await fetch(provider)  # warm: the next fetch is all generation
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.001)
            ticks += 1

    ticker = asyncio.create_task(tick())
    started = time.monotonic()
    fetches = 0
    while fetches == 0 or time.monotonic() - started < 1.0:  # long enough to tell the two apart
        await fetch(provider)
        fetches += 1
    elapsed = time.monotonic() - started
    ticker.cancel()
    # Run on the loop, generation would leave the ticker a turn or two per fetch; off the loop it
    # ticks every few milliseconds (GIL switches included), far more than once per 25 ms.
    assert ticks >= elapsed / 0.025, f"the loop turned {ticks} times in {elapsed:.3f}s ({fetches} fetches)"


@pytest.mark.parametrize("name", PROVIDERS)
async def test_cancelling_stops_generation_between_tokens(name, local_env):
    provider = build(name, temperature=0, max_tokens=3000)
    events: list[dict] = []
    first = asyncio.Event()
    at_first: list[int] = []

    def emit(event: dict) -> None:
        events.append(event)
        if not first.is_set():
            at_first.append(tokens_evaluated(provider))
            first.set()

    task = asyncio.create_task(provider.fetch(HELLO, [], emit))
    await asyncio.wait_for(first.wait(), 60)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(0.3)
    settled = tokens_evaluated(provider)
    await asyncio.sleep(0.3)
    assert tokens_evaluated(provider) == settled, "generation went on after the cancel"
    assert settled - at_first[0] < 200, f"{settled - at_first[0]} tokens were generated after the first"
    delivered = len(events)
    await asyncio.sleep(0.1)
    assert len(events) == delivered  # nothing reaches the agent after the cancel

    provider.max_tokens = 5  # the provider is free for the next turn
    assert said(await asyncio.wait_for(fetch(provider), 30))


async def test_llama_forced_tool_gives_a_doing_event(local_env):
    provider = build("llama", temperature=0, max_tokens=64, tool_choice="pick")
    events = await fetch(provider, tools=[PICK])
    calls = [e for e in events if e["type"] == "doing"]
    assert len(calls) == 1
    assert calls[0]["name"] == "pick" and calls[0]["id"]
    assert calls[0]["arguments"]["speed"] in ("fast", "slow")


async def test_llama_forcing_an_unknown_tool_is_an_error(local_env):
    provider = build("llama", temperature=0, max_tokens=8, tool_choice="nosuch")
    with pytest.raises(Exception, match="nosuch"):
        await fetch(provider, tools=[PICK])


async def test_llama_takes_the_model_path_from_model(local_env, monkeypatch):
    path = local_env["ELELEM_LLAMA_MODEL"]
    monkeypatch.delenv("ELELEM_LLAMA_MODEL")
    assert said(await fetch(build("llama", model=path, temperature=0, max_tokens=4)))
    with pytest.raises(ProviderError, match="no such file"):
        build("llama", model=path + ".missing")


@pytest.mark.parametrize("name, variable", [
    ("llama", "ELELEM_LLAMA_MODEL"), ("ggml", "ELELEM_GGML_MODEL"),
    ("candle", "ELELEM_CANDLE_MODEL"), ("llama2", "ELELEM_LLAMA2_MODEL"), ("llama2", "ELELEM_LLAMA2_TOKENIZER"),
])
def test_a_missing_model_setting_names_the_variable(name, variable, local_env, monkeypatch):
    monkeypatch.delenv(variable)
    with pytest.raises(ProviderError, match=f"{variable} is not set"):
        build(name)
    monkeypatch.setenv(variable, "/nonexistent/model")
    with pytest.raises(ProviderError, match="no such file"):
        build(name)


@pytest.mark.parametrize("name", PROVIDERS)
async def test_a_prompt_longer_than_the_context_is_a_clear_error(name, local_env):
    provider = build(name, temperature=0, max_tokens=4)
    huge = [{"role": "user", "content": "word " * 20000}]
    with pytest.raises(Exception, match="(more than the model's context|exceed context window) of 4096"):
        await fetch(provider, huge)


@pytest.mark.parametrize("options, message", [
    ({"max_tokens": 0}, "max_tokens"), ({"temperature": -1}, "temperature"),
])
def test_bad_options_are_refused(options, message, local_env):
    with pytest.raises(ValueError, match=message):
        build("llama2", **options)


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("ELELEM_GGML_THREADS", "many", "ELELEM_GGML_THREADS must be a whole number, got 'many'"),
        ("ELELEM_GGML_THREADS", "0", "ELELEM_GGML_THREADS must be positive, got '0'"),
        ("ELELEM_GGML_CTX", "2.5", "ELELEM_GGML_CTX must be a whole number, got '2.5'"),
    ],
)
def test_a_bad_thread_count_or_context_is_refused(local_env, monkeypatch, name, value, message):
    monkeypatch.setenv(name, value)
    with pytest.raises(ProviderError, match=re.escape(message)):
        build("ggml")


async def test_a_quantized_gguf_runs_on_candle(local_env, tiny_dir, monkeypatch):
    monkeypatch.setenv("ELELEM_CANDLE_MODEL", str(tiny_dir / "tiny-q8.gguf"))
    provider = build("candle", temperature=0, max_tokens=8)
    assert said(await fetch(provider)) == said(await fetch(provider))


@pytest.mark.parametrize("name", ["llama2", "candle", "ggml"])
async def test_the_llama2_chat_template_can_be_chosen(name, local_env, monkeypatch):
    chatml = said(await fetch(build(name, temperature=0, max_tokens=8)))
    monkeypatch.setenv(f"ELELEM_{name.upper()}_TEMPLATE", "llama2")
    inst = said(await fetch(build(name, temperature=0, max_tokens=8)))
    assert inst and inst != chatml  # another prompt, another greedy reply
    monkeypatch.setenv(f"ELELEM_{name.upper()}_TEMPLATE", "alpaca")
    with pytest.raises(ProviderError, match="unknown chat template"):
        build(name)


def test_a_missing_extra_says_how_to_install_it_from_the_repository(monkeypatch):
    import sys

    from elelem_lsp.providers.local.generation import require_module

    monkeypatch.setitem(sys.modules, "ctransformers", None)
    with pytest.raises(ProviderError) as error:
        require_module("ctransformers", "ggml")
    assert str(error.value) == (
        "the ggml provider needs its extra: in the elelem-lsp repository, "
        "pip install '.[ggml]' (or pipx install --force '.[ggml]')"
    )


@pytest.mark.parametrize("name", PROVIDERS)
async def test_a_local_provider_reports_its_context_and_counts_with_its_tokenizer(name, local_env):
    from elelem_lsp.agent.budget import estimate_tokens

    provider = build(name, temperature=0, max_tokens=8)
    text = "tokens counted by the model's own vocabulary"
    if name != "llama":  # llama.cpp's context is its n_ctx setting, known before loading
        assert provider.context_tokens is None and provider.count_tokens(text) == estimate_tokens(text)
    await fetch(provider)  # loads the model
    context = provider.generator.model.context_length if name != "llama" else provider.context
    assert provider.context_tokens == context - 8  # room kept for the reply
    counted = provider.count_tokens(text)
    assert counted > 0 and counted != estimate_tokens(text)  # the tiny byte-level vocabulary: about one a byte


@pytest.mark.parametrize("name", ["ggml", "candle", "llama2"])
async def test_usage_counts_the_prompt_and_the_reply_in_the_models_tokens(name, local_env):
    provider = build(name, temperature=0, max_tokens=6)
    events: list[dict] = []
    await provider.fetch(HELLO, [], events.append)
    [usage] = [e for e in events if e["type"] == "usage"]
    assert events[-1] is usage  # once, after the reply
    assert usage["inputTokens"] == len(provider.generator.model.encode(provider.template.render(HELLO, [])))
    assert 1 <= usage["outputTokens"] <= 6
    # what the model evaluated: the prompt and the reply, the last token sampled but not yet fed back
    assert usage["inputTokens"] + usage["outputTokens"] - tokens_evaluated(provider) in (0, 1)


@pytest.mark.parametrize("name", PROVIDERS)
async def test_images_are_refused_by_name_before_the_model_loads(name, local_env):
    provider = build(name)
    looking = [{"role": "user", "content": "look", "images": [{"mimeType": "image/png", "data": "iVBORw0KGgo="}]}]
    with pytest.raises(ProviderError, match=f'^provider "{name}" cannot take images; use one that can'):
        await provider.fetch(looking, [], lambda event: None)
    generator = getattr(provider, "generator", None)
    assert (generator.loaded_model if generator else provider._llm) is None
