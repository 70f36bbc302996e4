"""Prompt caching with Claude: the breakpoints each Messages request carries (anthropic, and vertex
which sends the same body), the official SDK's request type accepting them, and a ten-step turn
through the host against a fake server that bills like the API, its usage and cost counting the
cache's reads and writes at their own prices."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from host.memory_frontend import MemoryFrontend
from optional_parts import import_required
from scaffold import png

from elelem_lsp.host.host import Host
from elelem_lsp.host.settings import parse_settings
from elelem_lsp.providers.prices import cost
from elelem_lsp.providers.remote.anthropic import AnthropicProvider
from elelem_lsp.providers.remote.vertex import VertexProvider

from .prompt_cache import BillingAnthropicServer

# the anthropic SDK (dev extra) checks the request types
anthropic_types = import_required("anthropic.types", "dev", "python3 -m pip install -e '.[dev]'")
from anthropic.types.message_create_params import MessageCreateParamsStreaming  # noqa: E402

from .test_images import as_sdk_type  # noqa: E402

EPHEMERAL = {"type": "ephemeral"}
TOOLS = [
    {"type": "function", "function": {"name": name, "description": f"{name} a file", "parameters": {"type": "object"}}}
    for name in ("read", "write")
]


def breakpoints(body: dict[str, Any]) -> list[str]:
    """Where a request's ``cache_control`` marks are, as ``tools[1]``, ``system[0]``, ``messages[3][0]``."""
    found = [f"tools[{i}]" for i, tool in enumerate(body.get("tools", ())) if "cache_control" in tool]
    system = body.get("system")
    found += [f"system[{i}]" for i, block in enumerate(system if isinstance(system, list) else ()) if "cache_control" in block]
    for m, message in enumerate(body["messages"]):
        blocks = message["content"] if isinstance(message["content"], list) else ()
        found += [f"messages[{m}][{b}]" for b, block in enumerate(blocks) if "cache_control" in block]
    assert all(mark == EPHEMERAL for mark in marks(body)), "only the five-minute ephemeral kind is sent"
    return found


def marks(body: dict[str, Any]) -> list[Any]:
    system = body.get("system")
    blocks = [*body.get("tools", ()), *(system if isinstance(system, list) else ())]
    for message in body["messages"]:
        blocks += message["content"] if isinstance(message["content"], list) else []
    return [block["cache_control"] for block in blocks if "cache_control" in block]


# -- the request body ------------------------------------------------------------------------------
async def test_the_stable_prefix_and_the_conversation_so_far_are_breakpoints(fake_server):
    provider = AnthropicProvider("claude-sonnet-4-5", api_key="k", base_url=fake_server.url)
    messages = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "earlier question"},
        {"role": "assistant", "content": "earlier answer"},
        {"role": "user", "content": "read both"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "name": "read", "arguments": {"path": "a"}},
                                                            {"id": "c2", "name": "read", "arguments": {"path": "b"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "A"},
        {"role": "tool", "tool_call_id": "c2", "content": "B"},
    ]
    await provider.fetch(messages, TOOLS, lambda event: None)
    body = fake_server.requests[-1].json
    # the last tool, the system prompt, this request's end (the second result) and the previous one's (the prompt)
    assert breakpoints(body) == ["tools[1]", "system[0]", "messages[2][0]", "messages[4][1]"]
    assert body["system"] == [{"type": "text", "text": "You are terse.", "cache_control": EPHEMERAL}]
    assert body["messages"][2]["content"] == [{"type": "text", "text": "read both", "cache_control": EPHEMERAL}]
    assert body["messages"][0]["content"] == "earlier question"  # older messages are sent as they were
    assert as_sdk_type(MessageCreateParamsStreaming, body) == body


async def test_a_prompt_with_an_image_marks_its_last_block_and_an_empty_text_is_never_marked(fake_server, tmp_path):
    picture = tmp_path / "dot.png"
    picture.write_bytes(png())
    provider = AnthropicProvider("claude-sonnet-4-5", api_key="k", base_url=fake_server.url)
    await provider.fetch([{"role": "user", "content": "", "images": [{"mimeType": "image/png", "path": str(picture)}]}], [],
                         lambda event: None)
    body = fake_server.requests[-1].json
    assert breakpoints(body) == ["messages[0][0]"]  # the image: the prompt has no text block to mark
    assert body["messages"][0]["content"][0]["type"] == "image"
    assert as_sdk_type(MessageCreateParamsStreaming, body) == body


async def test_vertex_sends_the_same_breakpoints(fake_server):
    async def token() -> str:
        return fake_server.expected_token

    provider = VertexProvider("claude-sonnet-4-5@20250929", project="p", base_url=fake_server.url, token=token)
    await provider.fetch([{"role": "system", "content": "S"}, {"role": "user", "content": "go"}], TOOLS, lambda event: None)
    body = fake_server.requests[-1].json
    assert breakpoints(body) == ["tools[1]", "system[0]", "messages[0][0]"]


async def test_without_caching_no_breakpoint_is_sent(fake_server):
    provider = AnthropicProvider("claude-sonnet-4-5", api_key="k", base_url=fake_server.url, cache_prompts=False)
    await provider.fetch([{"role": "system", "content": "S"}, {"role": "user", "content": "go"}], TOOLS, lambda event: None)
    body = fake_server.requests[-1].json
    assert marks(body) == [] and body["system"] == "S" and body["messages"][0]["content"] == "go"


# -- a ten-step turn through the host, billed as the API bills -------------------------------------
@pytest.fixture
def billing_server():
    server = BillingAnthropicServer(steps=10).start()
    yield server
    server.stop()


def anthropic_host(root: Path, server: BillingAnthropicServer, monkeypatch) -> tuple[Host, MemoryFrontend]:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    frontend = MemoryFrontend(settings_by_folder={root.as_uri(): {"provider": "anthropic", "model": "claude-sonnet-4-5"}})
    host = Host(frontend)
    host.sync_folders({root.as_uri(): root})
    return host, frontend


async def test_a_ten_step_turn_reads_the_conversation_so_far_from_the_cache(project, billing_server, monkeypatch):
    host, frontend = anthropic_host(project, billing_server, monkeypatch)
    result = await host.agents[project.as_uri()].turn("read the readme ten times")
    assert result["error"] is None and result["steps"] == 10, result["reply"]
    bodies = [r.json for r in billing_server.requests]
    assert len(bodies) == 10
    for step, body in enumerate(bodies):
        last = len(body["messages"]) - 1
        expected = [f"tools[{len(body['tools']) - 1}]", "system[0]"]
        expected += [f"messages[{last - 2}][0]"] if step else []  # the previous request's end
        expected += [f"messages[{last}][0]"]
        assert breakpoints(body) == expected, f"request {step + 1}"
        assert len(marks(body)) <= 4
        assert as_sdk_type(MessageCreateParamsStreaming, body) == body

    bills = billing_server.bills
    assert bills[0]["cache_read_input_tokens"] == 0 and bills[0]["cache_creation_input_tokens"] > 1024  # tools and prompt
    for before, bill in zip(bills, bills[1:]):
        # each fetch reads all the one before it cached, and writes only what it adds
        assert bill["cache_read_input_tokens"] == before["cache_read_input_tokens"] + before["cache_creation_input_tokens"]
        assert bill["cache_creation_input_tokens"] < bills[0]["cache_creation_input_tokens"] // 4

    usage = frontend.progress[-1].events[-1]
    assert usage["type"] == "usage"
    read, written = (sum(bill[kind] for bill in bills) for kind in ("cache_read_input_tokens", "cache_creation_input_tokens"))
    uncached, output = sum(bill["input_tokens"] for bill in bills), sum(bill["output_tokens"] for bill in bills)
    counted = (usage["inputTokens"], usage["cachedInputTokens"], usage["cacheWriteInputTokens"])
    assert counted == (uncached + read + written, read, written)
    # claude-sonnet-4-5: $3 per million input tokens, a cache read $0.30, a cache write $3.75, output $15
    assert usage["cost"] == pytest.approx((uncached * 3.0 + read * 0.30 + written * 3.75 + output * 15.0) / 1e6, abs=1e-6)
    assert f"({read:,} cached)" in usage["text"]
    full_price = (usage["inputTokens"] * 3.0 + output * 15.0) / 1e6
    assert usage["cost"] < full_price / 2

    context = (await host.agents[project.as_uri()].context())["usage"]
    assert (context["conversationCachedInputTokens"], context["conversationCacheWriteInputTokens"]) == (read, written)


async def test_the_next_turn_reads_the_earlier_turns_from_the_cache(project, billing_server, monkeypatch):
    billing_server.steps = 1
    host, _ = anthropic_host(project, billing_server, monkeypatch)
    await host.agents[project.as_uri()].turn("first")
    first = billing_server.bills[-1]
    await host.agents[project.as_uri()].turn("second")
    second = billing_server.bills[-1]
    assert second["cache_read_input_tokens"] == first["cache_read_input_tokens"] + first["cache_creation_input_tokens"]


# -- prices ----------------------------------------------------------------------------------------
def test_cache_reads_and_writes_cost_their_prices():
    # Claude: a read a tenth of the input price, a five-minute write a quarter more
    assert cost("claude-sonnet-4-5", 1_000_000, 0, cache_read=600_000, cache_write=300_000) == pytest.approx(
        0.1 * 3.0 + 0.6 * 0.30 + 0.3 * 3.75)
    assert cost("claude-haiku-4-5@20251001", 1_000_000, 0, cache_read=1_000_000) == pytest.approx(0.10)
    # OpenAI's automatic cache: the cached-input price of its pricing page
    assert cost("gpt-4.1", 2_000_000, 0, cache_read=1_000_000) == pytest.approx(2.0 + 0.5)
    # a model whose cache prices are not known pays its input price for them: an upper bound
    assert cost("llama-3.3-70b-versatile", 1_000_000, 0, cache_read=1_000_000) == pytest.approx(0.59)


def test_the_prices_setting_may_give_the_cache_prices():
    settings, problems = parse_settings({"prices": {"my-model": {"input": 2, "output": 4, "cacheRead": 0.5, "cacheWrite": 3}}})
    assert problems == []
    assert cost("my-model", 3_000_000, 0, settings.prices, cache_read=1_000_000, cache_write=1_000_000) == pytest.approx(
        2 + 0.5 + 3)
    settings, problems = parse_settings({"prices": {"my-model": {"input": 2, "output": 4, "cacheRead": -1}}})
    assert len(problems) == 1 and "prices" in problems[0]
