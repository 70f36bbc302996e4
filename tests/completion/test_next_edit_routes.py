"""How next edit asks each kind of provider, against the fake model server over loopback: a Zeta
model gets the prompt untouched (Ollama's raw generate, an OpenAI-compatible /completions), any
other model the form explained through its chat; the answer is read up to the region's end and
the stream closed there."""

from __future__ import annotations

import pytest

from elelem_lsp.nextedit.asking import Tokens, answer, route_of
from elelem_lsp.nextedit.zeta import CHAT_INSTRUCTION, EDITABLE_END, EDITABLE_START
from elelem_lsp.providers.remote.ollama import OllamaProvider
from elelem_lsp.providers.remote.openai import OpenAIProvider
from test_engine import wait_for

PROMPT = "### Instruction:\nrewrite\n\n### Response:\n"
REWRITE = [f"```a.py\n{EDITABLE_START}\n", "x = factor\n", EDITABLE_END, "\n```", "\nand then some chatter"]


@pytest.mark.parametrize(
    ("api", "model", "provider", "route"),
    [
        ("auto", "zeta", "ollama", "raw"),
        ("auto", "hf.co/zed-industries/zeta-GGUF:Q4", "openai", "raw"),
        ("auto", "qwen2.5-coder", "ollama", "chat"),
        ("raw", "qwen2.5-coder", "ollama", "raw"),
        ("chat", "zeta", "ollama", "chat"),
        ("raw", "zeta", "plugin", "chat"),  # a provider without a raw endpoint is asked through its chat
    ],
)
def test_the_route_follows_the_model_and_the_setting(fim, api, model, provider, route):
    built = {
        "ollama": lambda: OllamaProvider(model, host=fim.url),
        "openai": lambda: OpenAIProvider(model, base_url=f"{fim.url}/v1"),
        "plugin": lambda: object(),
    }[provider]()
    assert route_of(api, model, built) == route


async def test_a_zeta_model_on_ollama_gets_the_prompt_as_it_is_and_the_stream_ends_at_the_region(fim):
    fim.answer, fim.delay = REWRITE + ["\n"] * 20, 0.05
    tokens = Tokens()
    text = await answer("raw", OllamaProvider("zeta", host=fim.url), PROMPT, 512, tokens)
    [body] = fim.bodies("/api/generate")
    assert body["prompt"] == PROMPT and body["raw"] is True and body["options"]["num_predict"] == 512
    assert text.endswith(EDITABLE_END) and "chatter" not in text
    await wait_for(lambda: fim.closed == 1, "the stream to be closed after the end marker")
    assert fim.finished == 0


async def test_a_zeta_model_on_an_openai_compatible_server_gets_the_prompt_on_completions(fim):
    fim.answer = REWRITE
    text = await answer("raw", OpenAIProvider("zeta", base_url=f"{fim.url}/v1"), PROMPT, 300, Tokens())
    [body] = fim.bodies("/v1/completions")
    assert body["prompt"] == PROMPT and body["max_tokens"] == 300 and "suffix" not in body
    assert "x = factor" in text


async def test_a_chat_model_is_told_the_form_and_given_no_tools(fim):
    fim.answer = REWRITE
    text = await answer("chat", OpenAIProvider("gpt-coder", base_url=f"{fim.url}/v1"), PROMPT, 300, Tokens())
    [body] = fim.bodies("/v1/chat/completions")
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert body["messages"][0]["content"] == CHAT_INSTRUCTION and body["messages"][1]["content"] == PROMPT
    assert not body.get("tools")
    assert "x = factor" in text and "chatter" not in text
