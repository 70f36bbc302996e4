"""The openai-chat type and declared providers: build_declared (Eklesia's provider_by_type), over loopback HTTP."""

from __future__ import annotations

import subprocess
import sys

import pytest

from elelem_lsp.agent.messages import ProviderError
from elelem_lsp.providers import build_declared, provider_by_type
from elelem_lsp.providers.remote.openai_chat import OpenAIGenericProvider, ProviderTypeError
from .fake_model_server import Reply, json_error, openai_text

ASK = [{"role": "system", "content": "sys"}, {"role": "user", "content": "hello"}]


def test_provider_by_type_builds_openai_chat_with_its_defaults():
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
    assert first == [
        {"type": "usage", "inputTokens": 80, "outputTokens": 17},
        {"type": "doing", "id": "call_Hx4Ej0", "name": "read", "arguments": {"path": "README.md"}},
    ]
    assert fake_server.requests[0].json["temperature"] == 0.7


async def test_openai_chat_streams_the_reply_and_sends_the_conversation_in_the_chat_shape(fake_server):
    fake_server.queue(Reply(openai_text(["Bonjour, ", "café."])))
    provider = provider_by_type("openai-chat", "gpt-4", f"{fake_server.url}/v1/chat/completions", "sk-1", 0.2, None)
    conversation = [*ASK, {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "name": "read", "arguments": {"path": "é.md"}}]},
                    {"role": "tool", "tool_call_id": "c1", "content": '{"ok":true}'}]
    events: list[dict] = []
    await provider.fetch(conversation, [], events.append)
    assert "".join(e["text"] for e in events if e["type"] == "saying") == "Bonjour, café."
    sent = fake_server.requests[0].json
    assert (sent["stream"], sent["temperature"], sent["max_tokens"]) == (True, 0.2, 300)
    assert sent["messages"][:2] == ASK
    assert sent["messages"][2]["tool_calls"] == [
        {"id": "c1", "type": "function", "function": {"name": "read", "arguments": '{"path":"é.md"}'}}]
    assert sent["messages"][3] == {"role": "tool", "tool_call_id": "c1", "content": '{"ok":true}'}


async def test_openai_chat_failure_is_a_provider_error_with_the_apis_message(fake_server):
    fake_server.queue(json_error(404, {"error": {"message": "no such model: gpt-5"}}))
    provider = provider_by_type("openai-chat", "gpt-5", f"{fake_server.url}/v1/chat/completions", None)
    with pytest.raises(ProviderError, match="^HTTP 404: no such model: gpt-5$"):
        await provider.fetch(ASK, [], lambda event: None)


def test_build_declared_is_the_public_factory_of_declared_providers():
    provider = build_declared("openai-chat", "gpt-4", "http://127.0.0.1:8081/v1/chat/completions", "k")
    assert isinstance(provider, OpenAIGenericProvider)
    assert (provider.model, provider.url, provider.temperature, provider.max_tokens) == (
        "gpt-4", "http://127.0.0.1:8081/v1/chat/completions", 0.7, 300)
    tuned = build_declared("openai-chat", "m", "http://h/v1/chat/completions", None, 0, 1)
    assert (tuned.temperature, tuned.max_tokens) == (0, 1)


@pytest.mark.parametrize("arguments, message", [
    (("claude-chat", "m", "http://h", None), 'unknown provider type: "claude-chat". Supported: openai-chat'),
    (("openai-chat", None, "http://h", None), 'type "openai-chat" needs a model'),
    (("openai-chat", "m", None, None), 'type "openai-chat" needs an endpoint'),
])
def test_build_declared_says_what_is_wrong(arguments, message):
    with pytest.raises(ProviderTypeError, match=message) as raised:
        build_declared(*arguments)
    assert isinstance(raised.value, ValueError)  # the server names the declared provider on ValueError


def test_importing_the_providers_loads_no_http_stack_until_a_declared_provider_is_built():
    script = (
        "import sys\n"
        "from elelem_lsp.providers import build_declared\n"
        "before = 'httpx' in sys.modules\n"
        "build_declared('openai-chat', 'm', 'http://h/v1/chat/completions', None)\n"
        "print(before, 'httpx' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "True"]
