"""Images in prompts: each provider's request body over loopback, checked against the official
SDKs' request types (openai, anthropic) and Ollama's documented /api/chat shape, and the
refusals a person sees before any request is sent.
"""

from __future__ import annotations

import base64
from typing import Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, TypeAdapter

from elelem_lsp.agent.messages import ProviderError
from elelem_lsp.providers import build_declared
from elelem_lsp.agent.images import MAX_FILE, takes_images
from elelem_lsp.providers.remote.anthropic import AnthropicProvider
from elelem_lsp.providers.remote.ollama import OllamaProvider
from elelem_lsp.providers.remote.openai import OpenAIProvider
from elelem_lsp.providers.remote.presets import factory as preset_factory
from elelem_lsp.providers.remote.vertex import VertexProvider
from optional_parts import import_required
from scaffold import png

from .test_requests import MESSAGES

# the official SDKs' request types check the bodies sent (the dev extra has them)
openai_types = import_required("openai.types.chat", "dev", "python3 -m pip install -e '.[dev]'")
anthropic_types = import_required("anthropic.types", "dev", "python3 -m pip install -e '.[dev]'")
from openai.types.chat.completion_create_params import CompletionCreateParamsStreaming  # noqa: E402


@pytest.fixture
def picture(tmp_path):
    path = tmp_path / "shot.png"
    path.write_bytes(png())
    return path


def asking(picture, text: str = "what is in this picture?") -> list[dict[str, Any]]:
    """A conversation whose prompt holds an image by reference, as a stored conversation keeps it."""
    return [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": text, "images": [{"mimeType": "image/png", "path": str(picture)}]},
    ]


def plain(value: Any) -> Any:
    """A validated value as plain data: lazily validated iterables read through (which validates
    them), SDK models dumped with only the fields that were given."""
    if isinstance(value, BaseModel):
        return plain(value.model_dump(exclude_unset=True))
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple) or type(value).__name__ == "ValidatorIterator":
        return [plain(item) for item in value]
    return value


def as_sdk_type(sdk_type: Any, value: Any) -> Any:
    """``value`` validated as ``sdk_type``; equal to ``value`` only when the type knows every key."""
    adapter = TypeAdapter(sdk_type)  # alive while the lazy iterables are read: they use its definitions
    return plain(adapter.validate_python(value))


def encoded(picture) -> str:
    return base64.b64encode(picture.read_bytes()).decode()


# -- OpenAI and the compatible servers -------------------------------------------------------------
async def test_openai_sends_the_image_as_a_data_url_content_part(fake_server, picture, events):
    provider = OpenAIProvider("gpt-4.1", base_url=f"{fake_server.url}/v1", api_key="sk-test")
    messages = asking(picture)
    await provider.fetch(messages, [], events.append)
    body = fake_server.requests[-1].json
    assert as_sdk_type(CompletionCreateParamsStreaming, body) == body
    assert body["messages"][1] == {
        "role": "user",
        "content": [
            {"type": "text", "text": "what is in this picture?"},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{encoded(picture)}"}},
        ],
    }
    assert as_sdk_type(openai_types.ChatCompletionUserMessageParam, body["messages"][1]) == body["messages"][1]
    assert messages[1]["images"] == [{"mimeType": "image/png", "path": str(picture)}]  # the reference, not the bytes
    assert "".join(e["text"] for e in events if e["type"] == "saying") == "no tools, no reading."


async def test_a_text_only_conversation_is_sent_as_before(fake_server):
    provider = OpenAIProvider("gpt-4.1", base_url=f"{fake_server.url}/v1", api_key="sk-test")
    await provider.fetch([{"role": "user", "content": "hi"}], [], lambda e: None)
    assert fake_server.requests[-1].json["messages"] == [{"role": "user", "content": "hi"}]


async def test_an_image_given_as_base64_is_sent_the_same(fake_server, picture):
    provider = OpenAIProvider("gpt-4.1", base_url=f"{fake_server.url}/v1", api_key="sk-test")
    inline = [{"role": "user", "content": "", "images": [{"mimeType": "image/png", "data": encoded(picture)}]}]
    await provider.fetch(inline, [], lambda e: None)
    sent = fake_server.requests[-1].json["messages"][0]
    assert sent["content"] == [{"type": "image_url", "image_url": {"url": f"data:image/png;base64,{encoded(picture)}"}}]
    assert as_sdk_type(openai_types.ChatCompletionUserMessageParam, sent) == sent


async def test_preset_without_vision_refuses_by_name_before_any_request(fake_server, picture, monkeypatch):
    monkeypatch.setenv("GROQ_API_KEY", "gsk-test")
    monkeypatch.setenv("GROQ_BASE_URL", f"{fake_server.url}/v1")
    monkeypatch.delenv("GROQ_IMAGES", raising=False)
    provider = preset_factory("groq")
    assert not takes_images(provider)
    with pytest.raises(ProviderError) as refused:
        await provider.fetch(asking(picture), [], lambda e: None)
    assert str(refused.value) == 'provider "groq" cannot take images; set GROQ_IMAGES=true if its model reads them'
    assert fake_server.requests == []


async def test_preset_declared_to_take_images_sends_them(fake_server, picture, monkeypatch):
    monkeypatch.setenv("GROQ_API_KEY", "gsk-test")
    monkeypatch.setenv("GROQ_BASE_URL", f"{fake_server.url}/v1")
    monkeypatch.setenv("GROQ_IMAGES", "true")
    provider = preset_factory("groq", model="meta-llama/llama-4-scout-17b-16e-instruct")
    assert takes_images(provider)
    await provider.fetch(asking(picture), [], lambda e: None)
    assert fake_server.requests[-1].json["messages"][1]["content"][1]["type"] == "image_url"


@pytest.mark.parametrize("preset, takes", [("gemini", True), ("openrouter", True), ("deepseek", False), ("vllm", False)])
def test_presets_declare_whether_they_take_images(preset, takes, monkeypatch):
    monkeypatch.delenv(f"{preset.upper()}_IMAGES", raising=False)
    assert takes_images(preset_factory(preset)) is takes


def test_an_images_setting_that_is_not_true_or_false_is_named(monkeypatch):
    monkeypatch.setenv("GEMINI_IMAGES", "yes")
    with pytest.raises(ProviderError, match="GEMINI_IMAGES must be true or false, got 'yes'"):
        preset_factory("gemini")


async def test_declared_openai_chat_takes_images_only_when_declared(fake_server, picture):
    endpoint = f"{fake_server.url}/v1/chat/completions"
    with pytest.raises(ProviderError, match='provider "openai-chat" cannot take images; its declaration does not say'):
        await build_declared("openai-chat", "local", endpoint, None).fetch(asking(picture), [], lambda e: None)
    assert fake_server.requests == []
    await build_declared("openai-chat", "local", endpoint, None, images=True).fetch(asking(picture), [], lambda e: None)
    sent = fake_server.requests[-1].json["messages"][1]
    assert as_sdk_type(openai_types.ChatCompletionUserMessageParam, sent) == sent


# -- Anthropic and Vertex --------------------------------------------------------------------------
async def test_anthropic_sends_a_base64_image_block_before_the_text(fake_server, picture, events):
    provider = AnthropicProvider("claude-sonnet-4-5", api_key="sk-ant-test", base_url=fake_server.url)
    await provider.fetch(asking(picture), [], events.append)
    body = fake_server.requests[-1].json
    assert as_sdk_type(anthropic_types.MessageCreateParams, body) == body
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": encoded(picture)}},
                {"type": "text", "text": "what is in this picture?", "cache_control": {"type": "ephemeral"}},  # a breakpoint
            ],
        }
    ]
    assert "".join(e["text"] for e in events if e["type"] == "saying") == "no tools, no reading."


async def test_vertex_sends_the_image_as_anthropic_does(fake_server, picture):
    async def token() -> str:
        return fake_server.expected_token

    provider = VertexProvider("claude-sonnet-4-5@20250929", project="p", base_url=fake_server.url, token=token)
    await provider.fetch(asking(picture), [], lambda e: None)
    request = fake_server.requests[-1]
    assert request.path.endswith("/models/claude-sonnet-4-5@20250929:streamRawPredict")
    [message] = request.json["messages"]
    assert as_sdk_type(anthropic_types.MessageParam, message) == message
    assert message["content"][0]["source"] == {"type": "base64", "media_type": "image/png", "data": encoded(picture)}


# -- Ollama: the shape of its API documentation (docs/api.md, "Chat request (with images)") -------
class OllamaMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: Literal["system", "user", "assistant", "tool"]
    content: str
    images: list[str] | None = None  # base64, no data: prefix
    thinking: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_name: str | None = None


class OllamaChatRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str
    messages: list[OllamaMessage]
    tools: list[dict[str, Any]] | None = None
    stream: bool | None = None
    think: bool | Literal["low", "medium", "high"] | None = None
    format: str | dict[str, Any] | None = None
    options: dict[str, Any] | None = None
    keep_alive: str | int | None = None


async def test_ollama_sends_the_images_as_base64_on_the_message(fake_server, picture, events):
    provider = OllamaProvider("llava", host=fake_server.url)
    await provider.fetch(asking(picture), [], events.append)
    body = fake_server.requests[-1].json
    assert OllamaChatRequest.model_validate(body).model_dump(exclude_unset=True) == body
    assert body["messages"][1] == {"role": "user", "content": "what is in this picture?", "images": [encoded(picture)]}
    assert base64.b64decode(body["messages"][1]["images"][0]) == picture.read_bytes()


# -- what is refused, and who takes images at all --------------------------------------------------
async def test_an_image_over_the_limit_is_refused_before_any_request(fake_server, tmp_path):
    big = tmp_path / "big.png"
    big.write_bytes(png() + b"\x00" * MAX_FILE)
    provider = AnthropicProvider("claude-sonnet-4-5", api_key="sk-ant-test", base_url=fake_server.url)
    with pytest.raises(ProviderError, match=r"big.png is 3.75 MiB, more than the 3.75 MiB a provider takes: scale it down"):
        await provider.fetch(asking(big), [], lambda e: None)
    assert fake_server.requests == []


@pytest.mark.parametrize(
    "image, message",
    [
        ({"mimeType": "image/bmp", "data": "Qk0="}, "images must be PNG, JPEG, GIF or WebP, got image/bmp"),
        ({"mimeType": "image/png", "data": "not base64!"}, "an image's data is not base64"),
        ({"mimeType": "image/png", "path": "/nonexistent/shot.png"}, "the image /nonexistent/shot.png cannot be read"),
        ({"mimeType": "image/png"}, "an image needs its data (base64) or the path of its file"),
    ],
)
async def test_a_bad_image_gets_a_clear_error_and_no_request(fake_server, image, message):
    provider = OllamaProvider("llava", host=fake_server.url)
    with pytest.raises(ProviderError) as refused:
        await provider.fetch([{"role": "user", "content": "look", "images": [image]}], [], lambda e: None)
    assert str(refused.value).startswith(message)
    assert fake_server.requests == []


def test_the_image_providers_declare_it_and_the_others_do_not():
    from elelem_lsp.providers.human import HumanProvider

    assert takes_images(OpenAIProvider("m"))
    assert takes_images(AnthropicProvider("m"))
    assert takes_images(VertexProvider("m", project="p", token=None))
    assert takes_images(OllamaProvider("m"))
    assert not takes_images(HumanProvider())
    assert not takes_images(object())  # a plugin provider says nothing: no images


# -- an image a tool gave (read of an image file) ---------------------------------------------------
def read_a_picture(picture) -> list[dict[str, Any]]:
    """The turn of test_requests (read and list ran), in which ``read`` gave an image."""
    read_result = {**MESSAGES[3], "images": [{"mimeType": "image/png", "path": str(picture)}]}
    return [*MESSAGES[:3], read_result, MESSAGES[4]]


async def test_openai_puts_a_tool_results_images_in_a_user_message_after_the_results(fake_server, picture):
    provider = OpenAIProvider("gpt-4.1", base_url=f"{fake_server.url}/v1", api_key="sk-test")
    await provider.fetch(read_a_picture(picture), [], lambda e: None)
    body = fake_server.requests[-1].json
    assert as_sdk_type(CompletionCreateParamsStreaming, body) == body
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant", "tool", "tool", "user"]
    assert body["messages"][3]["content"] == MESSAGES[3]["content"]
    assert body["messages"][5]["content"] == [
        {"type": "text", "text": "The images of the tool results above."},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{encoded(picture)}"}},
    ]


async def test_anthropic_puts_a_tool_results_image_in_its_tool_result(fake_server, picture):
    provider = AnthropicProvider("claude-sonnet-4-5", api_key="sk-ant-test", base_url=fake_server.url)
    await provider.fetch(read_a_picture(picture), [], lambda e: None)
    body = fake_server.requests[-1].json
    assert as_sdk_type(anthropic_types.MessageCreateParams, body) == body
    assert body["messages"][2]["content"][0] == {
        "type": "tool_result",
        "tool_use_id": "call_1",
        "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": encoded(picture)}},
            {"type": "text", "text": MESSAGES[3]["content"]},
        ],
    }


async def test_ollama_puts_a_tool_results_image_on_the_tool_message(fake_server, picture):
    await OllamaProvider("qwen2.5vl", host=fake_server.url).fetch(read_a_picture(picture), [], lambda e: None)
    body = fake_server.requests[-1].json
    assert OllamaChatRequest.model_validate(body).model_dump(exclude_unset=True) == body
    assert body["messages"][3] == {
        "role": "tool",
        "content": MESSAGES[3]["content"],
        "tool_name": "read",
        "images": [encoded(picture)],
    }
