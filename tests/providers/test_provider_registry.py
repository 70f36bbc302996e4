"""Every remote provider is registered under its contract name (docs/contract.md) and reads its settings from the environment."""

from __future__ import annotations

import pytest

from elelem_lsp.agent.messages import ProviderError
from elelem_lsp.agent.registry import Config
from elelem_lsp.providers import register
from elelem_lsp.providers.remote.anthropic import AnthropicProvider
from elelem_lsp.providers.remote.openai_chat import OpenAIGenericProvider
from elelem_lsp.providers.human import HumanProvider
from elelem_lsp.providers.remote.ollama import OllamaProvider
from elelem_lsp.providers.remote.openai import OpenAIProvider
from elelem_lsp.providers.remote.presets import PRESETS
from elelem_lsp.providers.remote.vertex import VertexProvider

VARIABLES = [
    "OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL", "OPENAI_CHAT_ENDPOINT", "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL", "ANTHROPIC_MODEL", "ANTHROPIC_THINKING_BUDGET", "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_REGION", "VERTEX_MODEL", "VERTEX_BASE_URL", "OLLAMA_HOST", "OLLAMA_MODEL",
]


@pytest.fixture
def config(tmp_path, monkeypatch) -> Config:
    for name in VARIABLES + [f"{p.upper()}_{s}" for p in PRESETS for s in ("API_KEY", "BASE_URL", "MODEL")]:
        monkeypatch.delenv(name, raising=False)
    config = Config(builtins=register, plugin_dirs=[tmp_path / "no-plugins"])
    return config


def test_all_names_are_available(config):
    expected = {"openai", "anthropic", "vertex", "ollama", "openai-chat", "human", *PRESETS}
    assert expected <= set(config.names())
    assert set(PRESETS) == {"groq", "openrouter", "mistral", "deepseek", "together", "fireworks", "cerebras",
                            "gemini", "lmstudio", "llamacpp", "vllm"}


def test_vertex_resolves_without_any_plugin_file(config, monkeypatch):
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "proj-9")
    monkeypatch.setenv("GOOGLE_CLOUD_REGION", "europe-west1")
    provider = config.build("vertex", model="claude-opus-4-1@20250805")
    assert isinstance(provider, VertexProvider)
    assert provider.url == (
        "https://europe-west1-aiplatform.googleapis.com/v1/projects/proj-9/locations/europe-west1"
        "/publishers/anthropic/models/claude-opus-4-1@20250805:streamRawPredict"
    )


def test_model_option_beats_the_model_variable(config, monkeypatch):
    monkeypatch.setenv("OPENAI_MODEL", "from-env")
    assert config.build("openai").model == "from-env"
    assert config.build("openai", model="from-flag").model == "from-flag"


def test_each_factory_reads_its_variables(config, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:2")
    monkeypatch.setenv("ANTHROPIC_MODEL", "claude-x")
    monkeypatch.setenv("OLLAMA_HOST", "127.0.0.1:3")
    monkeypatch.setenv("OLLAMA_MODEL", "llama3.2")
    openai = config.build("openai", temperature=0.5, max_tokens=10)
    assert isinstance(openai, OpenAIProvider) and openai.url == "http://127.0.0.1:1/v1/chat/completions"
    assert (openai.temperature, openai.max_tokens) == (0.5, 10)
    anthropic = config.build("anthropic")
    assert isinstance(anthropic, AnthropicProvider) and (anthropic.url, anthropic.model) == ("http://127.0.0.1:2/v1/messages", "claude-x")
    ollama = config.build("ollama")
    assert isinstance(ollama, OllamaProvider) and (ollama.url, ollama.model) == ("http://127.0.0.1:3/api/chat", "llama3.2")
    chat = config.build("openai-chat")
    assert isinstance(chat, OpenAIGenericProvider) and chat.url == "http://127.0.0.1:1/v1/chat/completions"
    assert isinstance(config.build("human"), HumanProvider)


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_presets_read_name_prefixed_variables(config, monkeypatch, name):
    default = config.build(name)
    assert default.url == PRESETS[name].base_url + "/chat/completions"
    assert default.model == PRESETS[name].model
    prefix = name.upper()
    monkeypatch.setenv(f"{prefix}_BASE_URL", "http://127.0.0.1:4/v1")
    monkeypatch.setenv(f"{prefix}_MODEL", "m-env")
    monkeypatch.setenv(f"{prefix}_API_KEY", "k-env")
    tuned = config.build(name)
    assert (tuned.url, tuned.model, tuned.api_key) == ("http://127.0.0.1:4/v1/chat/completions", "m-env", "k-env")
    assert config.build(name, model="m-flag").model == "m-flag"


async def test_hosted_preset_without_a_key_names_the_variable(config):
    with pytest.raises(ProviderError, match="^MISTRAL_API_KEY is not set$"):
        await config.build("mistral").fetch([{"role": "user", "content": "hi"}], [], lambda e: None)


def test_thinking_budget_comes_from_the_environment(config, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_THINKING_BUDGET", "4096")
    provider = config.build("anthropic", max_tokens=8000)
    assert (provider.thinking_budget, provider.max_tokens) == (4096, 8000)
    monkeypatch.setenv("ANTHROPIC_THINKING_BUDGET", "lots")
    with pytest.raises(ProviderError, match="ANTHROPIC_THINKING_BUDGET must be a whole number"):
        config.build("anthropic")
    monkeypatch.setenv("ANTHROPIC_THINKING_BUDGET", "4096")
    with pytest.raises(ProviderError, match=r"max_tokens \(2000\) must be larger than the thinking budget \(4096\)"):
        config.build("anthropic", max_tokens=2000)
