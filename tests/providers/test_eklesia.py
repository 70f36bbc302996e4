"""Eklesia's side: openai-chat, provider_by_type, and the query() adapter, over loopback HTTP."""

from __future__ import annotations

import asyncio
import json

import pytest

from elelem_lsp.agent.messages import ProviderError
from elelem_lsp.providers.eklesia import OpenAIGenericProvider, QueryProvider, provider_by_type
from .fake_model_server import Reply

ASK = [{"role": "system", "content": "sys"}, {"role": "user", "content": "hello"}]


def completion(message: dict) -> dict:
    return {
        "id": "chatcmpl-9", "object": "chat.completion", "created": 1700000000, "model": "gpt-4",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", **message}}],
    }


def test_provider_by_type_builds_openai_chat_with_eklesias_defaults():
    provider = provider_by_type("openai-chat", "gpt-4", "http://127.0.0.1:8081/v1/chat/completions", "k", None, None)
    assert isinstance(provider, OpenAIGenericProvider)
    assert (provider.model, provider.url, provider.api_key) == ("gpt-4", "http://127.0.0.1:8081/v1/chat/completions", "k")
    assert (provider.temperature, provider.max_tokens) == (0.7, 300)
    tuned = provider_by_type("openai-chat", "gpt-4", "http://h/v1/chat/completions", None, 0.1, 50)
    assert (tuned.temperature, tuned.max_tokens) == (0.1, 50)


def test_provider_by_type_names_the_supported_types():
    with pytest.raises(ProviderError, match='^unknown provider type: "claude-chat". Supported: openai-chat$'):
        provider_by_type("claude-chat", "m", "http://h", None)


@pytest.mark.parametrize("model, endpoint, missing", [("", "http://h/v1/chat/completions", "a model"), ("m", "", "an endpoint")])
def test_openai_chat_needs_model_and_endpoint(model, endpoint, missing):
    with pytest.raises(ProviderError, match=f'type "openai-chat" needs {missing}'):
        provider_by_type("openai-chat", model, endpoint, None)


async def test_openai_chat_streams_a_tool_round_trip_from_the_fake_server(fake_server):
    provider = provider_by_type("openai-chat", "local", f"{fake_server.url}/v1/chat/completions", "not-needed")
    tools = [{"type": "function", "function": {"name": "read", "description": "Read", "parameters": {"type": "object"}}}]
    first: list[dict] = []
    await provider.fetch(ASK, tools, first.append)
    assert first == [{"type": "doing", "id": "call_Hx4Ej0", "name": "read", "arguments": {"path": "README.md"}}]
    assert fake_server.requests[0].json["temperature"] == 0.7


async def test_query_adapter_over_openai_chat_uses_a_whole_response(fake_server, events):
    answer = completion({"content": "Bonjour, café."})
    fake_server.queue(Reply([json.dumps(answer).encode()], content_type="application/json"))
    provider = OpenAIGenericProvider("gpt-4", f"{fake_server.url}/v1/chat/completions", "sk-1")
    await QueryProvider(provider).fetch(ASK, [], events.append)
    assert events == [{"type": "saying", "text": "Bonjour, café."}]
    sent = fake_server.requests[0].json
    assert "stream" not in sent and sent["messages"] == ASK


class SyncQuery:
    """An Eklesia-style provider whose query is a plain function."""

    def __init__(self, response):
        self.response = response
        self.calls: list[tuple] = []

    def query(self, messages, temperature=0.7):
        self.calls.append((messages, temperature))
        return self.response


async def test_query_adapter_accepts_a_plain_query_and_passes_the_temperature(events):
    target = SyncQuery(completion({"content": "typed answer", "reasoning_content": "why"}))
    await QueryProvider(target, temperature=0.3).fetch(ASK, [], events.append)
    assert events == [{"type": "thinking", "text": "why"}, {"type": "saying", "text": "typed answer"}]
    assert target.calls == [(ASK, 0.3)]


async def test_query_adapter_turns_tool_calls_into_doing_events(events):
    class AsyncQuery:
        async def query(self, messages, temperature=0.7):
            await asyncio.sleep(0)
            call = {"id": "c1", "type": "function", "function": {"name": "read", "arguments": '{"path":"é.md"}'}}
            return completion({"content": None, "tool_calls": [call]})

    await QueryProvider(AsyncQuery()).fetch(ASK, [], events.append)
    assert events == [{"type": "doing", "id": "c1", "name": "read", "arguments": {"path": "é.md"}}]


async def test_query_adapter_rejects_a_response_without_choices():
    with pytest.raises(ProviderError, match="query\\(\\) returned no choices: \\{'error': 'nope'\\}"):
        await QueryProvider(SyncQuery({"error": "nope"})).fetch(ASK, [], lambda e: None)


def test_query_adapter_needs_a_query_method():
    with pytest.raises(ProviderError, match="object has no query"):
        QueryProvider(object())
