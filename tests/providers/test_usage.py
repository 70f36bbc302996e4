"""Token usage: each provider's fake server sends the counts its real API sends, and the
provider emits one ``usage`` event per fetch with those numbers (loopback HTTP, the real wires).
"""

from __future__ import annotations

import pytest

from elelem_lsp.providers.remote.anthropic import AnthropicProvider
from elelem_lsp.providers.remote.ollama import OllamaProvider
from elelem_lsp.providers.remote.openai import OpenAIProvider
from elelem_lsp.providers.remote.presets import factory as preset_factory
from elelem_lsp.providers.remote.vertex import VertexProvider
from .fake_model_server import Reply, anthropic_message, ollama_chat, openai_chunk, openai_text, openai_usage_chunk, sse

ASK = [{"role": "user", "content": "go"}]


def usage(events: list[dict]) -> list[dict]:
    return [event for event in events if event["type"] == "usage"]


# -- OpenAI and the compatible servers -------------------------------------------------------------
async def test_openai_asks_for_usage_and_emits_it_with_the_cached_prompt_tokens(fake_server, events):
    counts = {
        "prompt_tokens": 2006,
        "completion_tokens": 300,
        "total_tokens": 2306,
        "prompt_tokens_details": {"cached_tokens": 1920, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
    }
    body = openai_text(["Hi"])[:-2] + [sse(openai_usage_chunk(counts)), sse("[DONE]")]
    fake_server.queue(Reply(body))
    await OpenAIProvider("gpt-4.1", base_url=f"{fake_server.url}/v1", api_key="sk-test").fetch(ASK, [], events.append)
    assert fake_server.requests[-1].json["stream_options"] == {"include_usage": True}
    assert usage(events) == [{"type": "usage", "inputTokens": 2006, "outputTokens": 300, "cachedInputTokens": 1920}]


async def test_a_stream_without_usage_emits_none(fake_server, events):
    fake_server.queue(Reply([sse(openai_chunk({"content": "ok"}, "stop")), sse("[DONE]")]))
    await OpenAIProvider("m", base_url=f"{fake_server.url}/v1").fetch(ASK, [], events.append)
    assert events == [{"type": "saying", "text": "ok"}]


async def test_mistral_is_not_sent_stream_options_and_its_usage_is_still_read(fake_server, events, monkeypatch):
    monkeypatch.setenv("MISTRAL_API_KEY", "m-test")
    monkeypatch.setenv("MISTRAL_BASE_URL", f"{fake_server.url}/v1")
    # Mistral sends the usage with the finishing chunk, unasked
    final = openai_chunk({"content": "."}, "stop", usage={"prompt_tokens": 9, "total_tokens": 13, "completion_tokens": 4})
    fake_server.queue(Reply([sse(openai_chunk({"content": "Hi"})), sse(final), sse("[DONE]")]))
    await preset_factory("mistral").fetch(ASK, [], events.append)
    assert "stream_options" not in fake_server.requests[-1].json
    assert usage(events) == [{"type": "usage", "inputTokens": 9, "outputTokens": 4}]


async def test_groq_usage_in_x_groq_is_read(fake_server, events, monkeypatch):
    monkeypatch.setenv("GROQ_API_KEY", "gsk-test")
    monkeypatch.setenv("GROQ_BASE_URL", f"{fake_server.url}/v1")
    final = openai_chunk({}, "stop", x_groq={"id": "req_01", "usage": {"prompt_tokens": 41, "completion_tokens": 7}})
    fake_server.queue(Reply([sse(openai_chunk({"content": "Hi"})), sse(final), sse("[DONE]")]))
    await preset_factory("groq").fetch(ASK, [], events.append)
    assert usage(events) == [{"type": "usage", "inputTokens": 41, "outputTokens": 7}]


# -- Anthropic and Vertex --------------------------------------------------------------------------
@pytest.mark.parametrize(
    "delta_usage",
    [
        {"output_tokens": 57},  # the counts message_delta has carried for long
        {"input_tokens": 12, "cache_creation_input_tokens": 300, "cache_read_input_tokens": 2048, "output_tokens": 57},
    ],
)
async def test_anthropic_usage_counts_the_cached_prompt_in(fake_server, events, delta_usage):
    start = {"input_tokens": 12, "cache_creation_input_tokens": 300, "cache_read_input_tokens": 2048, "output_tokens": 1}
    fake_server.queue(Reply(anthropic_message([{"text": ["Hi"]}], start_usage=start, delta_usage=delta_usage)))
    provider = AnthropicProvider("claude-sonnet-4-5", api_key="sk-ant-test", base_url=fake_server.url)
    await provider.fetch(ASK, [], events.append)
    assert usage(events) == [
        {"type": "usage", "inputTokens": 2360, "outputTokens": 57, "cachedInputTokens": 2048, "cacheWriteInputTokens": 300}
    ]


async def test_vertex_emits_the_usage_of_its_anthropic_stream(fake_server, events):
    async def token() -> str:
        return fake_server.expected_token

    provider = VertexProvider("claude-sonnet-4-5@20250929", project="p", base_url=fake_server.url, token=token)
    await provider.fetch(ASK, [], events.append)
    assert usage(events) == [{"type": "usage", "inputTokens": 472, "outputTokens": 89}]


# -- Ollama ----------------------------------------------------------------------------------------
async def test_ollama_usage_comes_from_the_final_line(fake_server, events):
    fake_server.queue(Reply(ollama_chat(["Hel", "lo"]), content_type="application/x-ndjson"))
    await OllamaProvider("qwen3:8b", host=fake_server.url).fetch(ASK, [], events.append)
    assert events[-1] == {"type": "usage", "inputTokens": 26, "outputTokens": 282}
    assert usage(events) == [events[-1]]  # once per fetch, not per line
