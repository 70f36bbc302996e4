"""What each provider sends: URL, headers and the body byte for byte (httpx.MockTransport).

The expected bodies are written out as the APIs document them, not built by the
code under test, so a changed key, order or escaping shows up here.
"""

from __future__ import annotations

import httpx
import pytest

from elelem_lsp.providers.remote.anthropic import AnthropicProvider
from elelem_lsp.providers.remote.openai_chat import OpenAIGenericProvider
from elelem_lsp.providers.remote.ollama import OllamaProvider
from elelem_lsp.providers.remote.openai import OpenAIProvider
from elelem_lsp.providers.remote.presets import factory as preset_factory
from elelem_lsp.providers.remote.vertex import VertexProvider

MESSAGES = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "what is in café.md?"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "call_1", "name": "read", "arguments": {"path": "café.md"}},
            {"id": "call_2", "name": "list", "arguments": {"path": "."}},
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": '{"ok":true,"content":"# Café"}'},
    {"role": "tool", "tool_call_id": "call_2", "content": '{"ok":true,"entries":["café.md"]}'},
]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read",
            "description": "Read file",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        },
    }
]

OPENAI_DONE = b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
ANTHROPIC_DONE = b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
OLLAMA_DONE = b'{"message":{"role":"assistant","content":""},"done":true}\n'


class Capture:
    """A MockTransport that records requests and answers each with ``body``."""

    def __init__(self, *bodies: bytes, content_type: str = "text/event-stream") -> None:
        self.bodies = list(bodies)
        self.requests: list[httpx.Request] = []
        self.transport = httpx.MockTransport(self.answer)
        self.content_type = content_type

    def answer(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        body = self.bodies.pop(0) if len(self.bodies) > 1 else self.bodies[0]
        return httpx.Response(200, headers={"content-type": self.content_type}, content=body)

    @property
    def last(self) -> httpx.Request:
        return self.requests[-1]


OPENAI_MESSAGES = (
    r'[{"role":"system","content":"You are terse."},'
    r'{"role":"user","content":"what is in café.md?"},'
    r'{"role":"assistant","content":"","tool_calls":['
    r'{"id":"call_1","type":"function","function":{"name":"read","arguments":"{\"path\":\"café.md\"}"}},'
    r'{"id":"call_2","type":"function","function":{"name":"list","arguments":"{\"path\":\".\"}"}}]},'
    r'{"role":"tool","tool_call_id":"call_1","content":"{\"ok\":true,\"content\":\"# Café\"}"},'
    r'{"role":"tool","tool_call_id":"call_2","content":"{\"ok\":true,\"entries\":[\"café.md\"]}"}]'
)
OPENAI_TOOLS = (
    r'[{"type":"function","function":{"name":"read","description":"Read file",'
    r'"parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}}]'
)


async def test_openai_sends_the_chat_completions_body():
    capture = Capture(OPENAI_DONE)
    provider = OpenAIProvider(
        "gpt-test", base_url="https://api.example.com/v1/", api_key="sk-secret",
        temperature=0.2, max_tokens=64, transport=capture.transport,
    )
    await provider.fetch(MESSAGES, TOOLS, lambda e: None)
    request = capture.last
    assert request.method == "POST"
    assert str(request.url) == "https://api.example.com/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-secret"
    assert request.headers["content-type"] == "application/json"
    assert request.headers["accept"] == "text/event-stream"
    expected = (
        '{"model":"gpt-test","messages":' + OPENAI_MESSAGES + ',"tools":' + OPENAI_TOOLS
        + ',"stream":true,"stream_options":{"include_usage":true},"temperature":0.2,"max_tokens":64}'
    )
    assert request.content == expected.encode()


async def test_openai_leaves_out_what_is_not_set():
    capture = Capture(OPENAI_DONE)
    provider = OpenAIProvider("m", base_url="http://127.0.0.1:9/v1", transport=capture.transport)
    await provider.fetch([{"role": "user", "content": "hi"}], [], lambda e: None)
    assert capture.last.content == b'{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true}}'
    assert "authorization" not in capture.last.headers


async def test_preset_uses_its_url_key_and_model(monkeypatch):
    monkeypatch.setenv("GROQ_API_KEY", "gsk-secret")
    monkeypatch.delenv("GROQ_MODEL", raising=False)
    monkeypatch.delenv("GROQ_BASE_URL", raising=False)
    capture = Capture(OPENAI_DONE)
    provider = preset_factory("groq")
    provider.transport = capture.transport
    await provider.fetch([{"role": "user", "content": "hi"}], [], lambda e: None)
    assert str(capture.last.url) == "https://api.groq.com/openai/v1/chat/completions"
    assert capture.last.headers["authorization"] == "Bearer gsk-secret"
    assert capture.last.content == (
        b'{"model":"llama-3.3-70b-versatile","messages":[{"role":"user","content":"hi"}],"stream":true,'
        b'"stream_options":{"include_usage":true}}'
    )


async def test_local_preset_without_a_model_asks_the_server(monkeypatch):
    monkeypatch.delenv("VLLM_MODEL", raising=False)
    monkeypatch.setenv("VLLM_BASE_URL", "http://gpu-box:8000/v1")
    listing = b'{"object":"list","data":[{"id":"Qwen/Qwen3-8B","object":"model"}]}'
    capture = Capture(listing, OPENAI_DONE)
    provider = preset_factory("vllm")
    provider.transport = capture.transport
    await provider.fetch([{"role": "user", "content": "hi"}], [], lambda e: None)
    assert [(r.method, str(r.url)) for r in capture.requests] == [
        ("GET", "http://gpu-box:8000/v1/models"),
        ("POST", "http://gpu-box:8000/v1/chat/completions"),
    ]
    assert capture.last.content.startswith(b'{"model":"Qwen/Qwen3-8B",')


async def test_openai_chat_posts_to_the_full_endpoint_with_the_types_defaults():
    capture = Capture(OPENAI_DONE)
    provider = OpenAIGenericProvider(
        "deepseek-llm-7b-chat", "http://127.0.0.1:8081/v1/chat/completions", "not-needed", transport=capture.transport
    )
    await provider.fetch([{"role": "user", "content": "hi"}], [], lambda e: None)
    assert str(capture.last.url) == "http://127.0.0.1:8081/v1/chat/completions"
    assert capture.last.headers["authorization"] == "Bearer not-needed"
    assert capture.last.content == (
        b'{"model":"deepseek-llm-7b-chat","messages":[{"role":"user","content":"hi"}],'
        b'"stream":true,"stream_options":{"include_usage":true},"temperature":0.7,"max_tokens":300}'
    )


async def test_openai_chat_sends_its_own_temperature_and_max_tokens_with_the_system_prompt():
    capture = Capture(OPENAI_DONE)
    provider = OpenAIGenericProvider("gpt-4", "https://api.example.com/v1/chat/completions", "sk-x", 0.1, 50,
                                     transport=capture.transport)
    await provider.fetch([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}], [], lambda e: None)
    assert capture.last.content == (
        b'{"model":"gpt-4","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"hi"}],'
        b'"stream":true,"stream_options":{"include_usage":true},"temperature":0.1,"max_tokens":50}'
    )


# the last two user messages, the last tool and the system prompt end in a prompt-caching breakpoint
CACHED = r'"cache_control":{"type":"ephemeral"}'
ANTHROPIC_SYSTEM = r'[{"type":"text","text":"You are terse.",' + CACHED + "}]"
ANTHROPIC_MESSAGES = (
    r'[{"role":"user","content":[{"type":"text","text":"what is in café.md?",' + CACHED + "}]},"
    r'{"role":"assistant","content":['
    r'{"type":"tool_use","id":"call_1","name":"read","input":{"path":"café.md"}},'
    r'{"type":"tool_use","id":"call_2","name":"list","input":{"path":"."}}]},'
    r'{"role":"user","content":['
    r'{"type":"tool_result","tool_use_id":"call_1","content":"{\"ok\":true,\"content\":\"# Café\"}"},'
    r'{"type":"tool_result","tool_use_id":"call_2","content":"{\"ok\":true,\"entries\":[\"café.md\"]}",' + CACHED + "}]}]"
)
ANTHROPIC_TOOLS = (
    r'[{"name":"read","description":"Read file",'
    r'"input_schema":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]},' + CACHED + "}]"
)


async def test_anthropic_sends_the_messages_body():
    capture = Capture(ANTHROPIC_DONE)
    provider = AnthropicProvider(
        "claude-test", api_key="sk-ant-secret", base_url="https://api.example.com",
        temperature=0.2, max_tokens=1024, transport=capture.transport,
    )
    await provider.fetch(MESSAGES, TOOLS, lambda e: None)
    request = capture.last
    assert str(request.url) == "https://api.example.com/v1/messages"
    assert request.headers["x-api-key"] == "sk-ant-secret"
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in request.headers
    expected = (
        '{"model":"claude-test","max_tokens":1024,"system":' + ANTHROPIC_SYSTEM + ',"messages":' + ANTHROPIC_MESSAGES
        + ',"tools":' + ANTHROPIC_TOOLS + ',"stream":true,"temperature":0.2}'
    )
    assert request.content == expected.encode()


async def test_anthropic_thinking_budget_is_sent_and_signed_thinking_goes_back_with_the_calls():
    first = b"".join(
        b"event: %s\ndata: %s\n\n" % (e.split(b'"')[3], e)
        for e in [
            b'{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}',
            b'{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Read it."}}',
            b'{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCkYIARgC"}}',
            b'{"type":"content_block_stop","index":0}',
            b'{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"read","input":{}}}',
            b'{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\\"path\\":\\"a\\"}"}}',
            b'{"type":"message_stop"}',
        ]
    )
    capture = Capture(first, ANTHROPIC_DONE)
    provider = AnthropicProvider("c", api_key="k-123", thinking_budget=2048, transport=capture.transport)
    events: list[dict] = []
    await provider.fetch([{"role": "user", "content": "go"}], [], events.append)
    assert capture.last.content == (
        b'{"model":"c","max_tokens":10240,"messages":[{"role":"user","content":[{"type":"text","text":"go",'
        b'"cache_control":{"type":"ephemeral"}}]}],"stream":true,'
        b'"thinking":{"type":"enabled","budget_tokens":2048}}'
    )
    assert events == [
        {"type": "thinking", "text": "Read it."},
        {"type": "doing", "id": "toolu_1", "name": "read", "arguments": {"path": "a"}},
    ]
    follow_up = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "toolu_1", "name": "read", "arguments": {"path": "a"}}]},
        {"role": "tool", "tool_call_id": "toolu_1", "content": "{}"},
    ]
    await provider.fetch(follow_up, [], lambda e: None)
    assert (
        b'{"role":"assistant","content":[{"type":"thinking","thinking":"Read it.","signature":"EqQBCkYIARgC"},'
        b'{"type":"tool_use","id":"toolu_1","name":"read","input":{"path":"a"}}]}'
    ) in capture.last.content
    await provider.fetch([{"role": "user", "content": "go"}, {"role": "assistant", "content": "done"},
                          {"role": "user", "content": "next turn"}], [], lambda e: None)
    assert provider.signed_thinking == {}  # a finished turn's thinking is not kept


async def test_vertex_sends_the_body_without_model_to_stream_raw_predict():
    capture = Capture(ANTHROPIC_DONE)

    async def token() -> str:
        return "ya29.token-from-fake-source"

    provider = VertexProvider(
        "claude-sonnet-4-5@20250929", project="proj-1", region="us-east5", token=token,
        max_tokens=1024, transport=capture.transport,
    )
    await provider.fetch(MESSAGES, TOOLS, lambda e: None)
    request = capture.last
    assert str(request.url) == (
        "https://us-east5-aiplatform.googleapis.com/v1/projects/proj-1/locations/us-east5"
        "/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict"
    )
    assert request.headers["authorization"] == "Bearer ya29.token-from-fake-source"
    assert "x-api-key" not in request.headers and "anthropic-version" not in request.headers
    expected = (
        '{"anthropic_version":"vertex-2023-10-16","max_tokens":1024,"system":' + ANTHROPIC_SYSTEM + ',"messages":'
        + ANTHROPIC_MESSAGES + ',"tools":' + ANTHROPIC_TOOLS + ',"stream":true}'
    )
    assert request.content == expected.encode()


def test_vertex_global_region_uses_the_global_host():
    provider = VertexProvider("m@1", project="p", region="global", token=None)
    assert provider.url.startswith("https://aiplatform.googleapis.com/v1/projects/p/locations/global/")


async def test_ollama_sends_the_api_chat_body():
    capture = Capture(OLLAMA_DONE, content_type="application/x-ndjson")
    provider = OllamaProvider(
        "qwen3:8b", host="gpu-box", temperature=0.2, max_tokens=64, num_ctx=8192, transport=capture.transport
    )
    await provider.fetch(MESSAGES, TOOLS, lambda e: None)
    assert str(capture.last.url) == "http://gpu-box:11434/api/chat"
    expected = (
        r'{"model":"qwen3:8b","messages":[{"role":"system","content":"You are terse."},'
        r'{"role":"user","content":"what is in café.md?"},'
        r'{"role":"assistant","content":"","tool_calls":['
        r'{"function":{"name":"read","arguments":{"path":"café.md"}}},'
        r'{"function":{"name":"list","arguments":{"path":"."}}}]},'
        r'{"role":"tool","content":"{\"ok\":true,\"content\":\"# Café\"}","tool_name":"read"},'
        r'{"role":"tool","content":"{\"ok\":true,\"entries\":[\"café.md\"]}","tool_name":"list"}],'
        r'"tools":' + OPENAI_TOOLS + r',"stream":true,"options":{"temperature":0.2,"num_predict":64,"num_ctx":8192}}'
    )
    assert capture.last.content == expected.encode()


@pytest.mark.parametrize(
    "host, url",
    [
        ("localhost:11434", "http://localhost:11434/api/chat"),
        ("0.0.0.0", "http://0.0.0.0:11434/api/chat"),
        ("https://ollama.example.com", "https://ollama.example.com:443/api/chat"),
        ("http://127.0.0.1:9999/", "http://127.0.0.1:9999/api/chat"),
    ],
)
def test_ollama_host_forms(host, url):
    assert OllamaProvider("m", host=host).url == url


@pytest.mark.parametrize("value, sent", [("true", b'"think":true'), ("False", b'"think":false'), ("high", b'"think":"high"')])
async def test_ollama_think_setting_is_sent(monkeypatch, value, sent):
    from elelem_lsp.providers.remote.ollama import factory

    monkeypatch.setenv("OLLAMA_THINK", value)
    monkeypatch.setenv("OLLAMA_NUM_CTX", "4096")
    capture = Capture(OLLAMA_DONE, content_type="application/x-ndjson")
    provider = factory(model="qwen3:8b")
    provider.transport = capture.transport
    await provider.fetch([{"role": "user", "content": "hi"}], [], lambda e: None)
    assert capture.last.content == (
        b'{"model":"qwen3:8b","messages":[{"role":"user","content":"hi"}],"stream":true,' + sent + b',"options":{"num_ctx":4096}}'
    )


def test_ollama_think_setting_is_checked(monkeypatch):
    from elelem_lsp.agent.messages import ProviderError
    from elelem_lsp.providers.remote.ollama import factory

    monkeypatch.setenv("OLLAMA_THINK", "maybe")
    with pytest.raises(ProviderError, match="OLLAMA_THINK must be true, false, low, medium or high, got 'maybe'"):
        factory()
