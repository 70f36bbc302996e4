"""Streams as the providers read them: real HTTP over loopback from the fake model server.

Each test queues the bytes an API sends (recorded shapes, see fake_model_server)
and checks the events a user would see, or the error the turn would end with.
"""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from elelem_lsp.agent.messages import ProviderError
from elelem_lsp.providers.remote.anthropic import AnthropicProvider
from elelem_lsp.providers.remote.ollama import OllamaProvider
from elelem_lsp.providers.remote.openai import OpenAIProvider
from .fake_model_server import (
    Reply,
    anthropic_error_event,
    anthropic_message,
    json_error,
    ollama_chat,
    ollama_line,
    ndjson,
    openai_chunk,
    openai_text,
    openai_tool_calls,
    sse,
)

ASK = [{"role": "system", "content": "sys"}, {"role": "user", "content": "go"}]
READ = [{"type": "function", "function": {"name": "read", "description": "Read file", "parameters": {"type": "object"}}}]
# {"path": "naïve \"quoted\" café 🙂.md"} as JSON text, cut mid-escape and next to the emoji
PATH_FRAGMENTS = ['{"pa', 'th": "na\\u00', 'efve \\', '"quoted\\" caf\\u00e9 ', "🙂", '.md"}']
PATH = 'naïve "quoted" café 🙂.md'


def openai(server, **options) -> OpenAIProvider:
    return OpenAIProvider("gpt-test", base_url=f"{server.url}/v1", api_key="sk-live-0123456789", **options)


def anthropic(server) -> AnthropicProvider:
    return AnthropicProvider("claude-test", api_key="sk-ant-0123456789", base_url=server.url)


def ollama(server) -> OllamaProvider:
    return OllamaProvider("qwen3:8b", host=server.url)


async def failure(provider, messages=ASK, tools=()) -> str:
    with pytest.raises(ProviderError) as caught:
        await provider.fetch(messages, list(tools), lambda e: None)
    return str(caught.value)


# -- OpenAI ----------------------------------------------------------------------------------------
async def test_openai_text_and_reasoning_arrive_as_deltas_even_cut_mid_utf8(fake_server, events):
    fake_server.queue(Reply(openai_text(["Hé", "llo 🙂", "", " wörld"], reasoning=["think ", "日本"]), cut="utf8"))
    await openai(fake_server).fetch(ASK, [], events.append)
    assert events == [
        {"type": "thinking", "text": "think "},
        {"type": "thinking", "text": "日本"},
        {"type": "saying", "text": "Hé"},
        {"type": "saying", "text": "llo 🙂"},
        {"type": "saying", "text": " wörld"},
        {"type": "usage", "inputTokens": 80, "outputTokens": 17},
    ]


async def test_openai_reasoning_field_of_vllm_and_openrouter_is_thinking(fake_server, events):
    body = [sse(openai_chunk({"reasoning": "hmm"})), sse(openai_chunk({"content": "ok"}, "stop")), sse("[DONE]")]
    fake_server.queue(Reply(body))
    await openai(fake_server).fetch(ASK, [], events.append)
    assert events == [{"type": "thinking", "text": "hmm"}, {"type": "saying", "text": "ok"}]


async def test_openai_tool_calls_interleaved_by_index_are_gathered_and_parsed_once(fake_server, events):
    calls = [("call_a", "read", PATH_FRAGMENTS), ("call_b", "list", ["{", '"path": ".', '"}'])]
    fake_server.queue(Reply(openai_tool_calls(calls, interleave=True), cut="utf8"))
    await openai(fake_server).fetch(ASK, READ, events.append)
    assert events == [
        {"type": "usage", "inputTokens": 80, "outputTokens": 17},
        {"type": "doing", "id": "call_a", "name": "read", "arguments": {"path": PATH}},
        {"type": "doing", "id": "call_b", "name": "list", "arguments": {"path": "."}},
    ]


async def test_openai_tool_call_sent_whole_without_index_gemini_style(fake_server, events):
    chunk = openai_chunk(
        {"tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read", "arguments": '{"path":"a"}'}},
                        {"id": "c2", "type": "function", "function": {"name": "read", "arguments": '{"path":"b"}'}}]},
        "tool_calls",
    )
    fake_server.queue(Reply([sse(chunk), sse("[DONE]")]))
    await openai(fake_server).fetch(ASK, READ, events.append)
    assert [(e["id"], e["arguments"]) for e in events] == [("c1", {"path": "a"}), ("c2", {"path": "b"})]


async def test_openai_no_tool_call_runs_when_the_stream_drops_mid_answer(fake_server, events):
    body = openai_tool_calls([("call_a", "read", PATH_FRAGMENTS)])[:5]
    fake_server.queue(Reply(body, drop=True))
    message = await failure(openai(fake_server), tools=READ)
    assert "dropped mid-answer" in message and "127.0.0.1" in message
    assert events == []


async def test_openai_stream_that_ends_without_finishing_is_an_error(fake_server):
    fake_server.queue(Reply(openai_text(["partial"], done=False)[:2]))
    assert "ended before the model finished" in await failure(openai(fake_server))


async def test_openai_malformed_chunk_is_a_clear_error(fake_server):
    fake_server.queue(Reply([sse(openai_chunk({"content": "a"})), b'data: {"choices": [\n\n']))
    assert await failure(openai(fake_server)) == "malformed chunk in the model's stream: '{\"choices\": ['"


async def test_openai_error_inside_the_stream_raises_its_message(fake_server, events):
    body = [sse(openai_chunk({"content": "Hel"})), sse({"error": {"message": "Provider returned error", "code": 502}})]
    fake_server.queue(Reply(body))
    with pytest.raises(ProviderError, match="reported an error mid-answer: Provider returned error"):
        await openai(fake_server).fetch(ASK, [], events.append)
    assert events == [{"type": "saying", "text": "Hel"}]


async def test_openai_malformed_tool_arguments_are_emitted_as_the_model_sent_them(fake_server, events):
    fake_server.queue(Reply(openai_tool_calls([("c", "read", ['{"path": '])])))
    await openai(fake_server).fetch(ASK, READ, events.append)  # the session answers them ok: false
    assert events == [{"type": "usage", "inputTokens": 80, "outputTokens": 17}, {"type": "doing", "id": "c", "name": "read", "arguments": '{"path": '}]


async def test_a_json_answer_to_a_stream_request_is_a_clear_error(fake_server):
    fake_server.queue(Reply([b'{"object":"chat.completion","choices":[]}'], content_type="application/json"))
    message = await failure(openai(fake_server))
    assert "answered application/json instead of an event stream" in message


# -- HTTP errors -----------------------------------------------------------------------------------
async def test_401_names_the_apis_message_without_the_key(fake_server):
    body = {"error": {"message": "Incorrect API key provided: sk-live-0123456789.", "type": "invalid_request_error",
                      "param": None, "code": "invalid_api_key"}}
    fake_server.queue(json_error(401, body))
    message = await failure(openai(fake_server))
    assert message == "HTTP 401: Incorrect API key provided: ***."
    assert fake_server.requests[0].headers["authorization"] == "Bearer sk-live-0123456789"


async def test_429_says_when_to_retry(fake_server):
    body = {"type": "error", "error": {"type": "rate_limit_error",
            "message": "Number of request tokens has exceeded your per-minute rate limit"}}
    fake_server.queue(json_error(429, body, **{"retry-after": "20"}))
    message = await failure(anthropic(fake_server))
    assert message == "HTTP 429: Number of request tokens has exceeded your per-minute rate limit (retry after 20 s)"


async def test_500_with_a_long_body_is_cut_to_a_readable_length(fake_server):
    fake_server.queue(json_error(500, {"error": {"message": "The server had an error. " * 40, "type": "server_error"}}))
    message = await failure(openai(fake_server))
    assert message.startswith("HTTP 500: The server had an error. The server")
    assert message.endswith("…") and len(message) < 320


async def test_an_html_error_page_is_shown_as_text(fake_server):
    page = b"<html><body><h1>502 Bad Gateway</h1>\n<p>nginx</p></body></html>"
    fake_server.queue(Reply([page], status=502, content_type="text/html"))
    assert await failure(openai(fake_server)) == "HTTP 502: <html><body><h1>502 Bad Gateway</h1> <p>nginx</p></body></html>"


async def test_nobody_listening_is_a_connect_error(unused_tcp_port):
    provider = OpenAIProvider("m", base_url=f"http://127.0.0.1:{unused_tcp_port}/v1")
    assert (await failure(provider)).startswith(f"cannot connect to http://127.0.0.1:{unused_tcp_port}")


async def test_a_silent_server_hits_the_read_timeout(fake_server, monkeypatch):
    monkeypatch.setenv("ELELEM_READ_TIMEOUT", "0.3")
    fake_server.queue(Reply(openai_text(["a", "b"]), stall=3))
    started = time.monotonic()
    message = await failure(openai(fake_server))
    assert "sent nothing for 0.3 s (set ELELEM_READ_TIMEOUT to wait longer)" in message
    assert time.monotonic() - started < 2


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("soon", "ELELEM_READ_TIMEOUT must be a number of seconds, got 'soon'"),
        ("0", "ELELEM_READ_TIMEOUT must be positive, got '0'"),
        ("-5", "ELELEM_READ_TIMEOUT must be positive, got '-5'"),
    ],
)
async def test_a_bad_read_timeout_setting_is_named(monkeypatch, fake_server, value, message):
    monkeypatch.setenv("ELELEM_READ_TIMEOUT", value)
    assert await failure(openai(fake_server)) == message
    assert not fake_server.requests  # refused before any request


async def test_the_public_api_without_a_key_says_which_variable(monkeypatch):
    from elelem_lsp.providers.remote.openai import factory

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert await failure(factory()) == "OPENAI_API_KEY is not set"


async def test_cancelling_the_fetch_closes_the_stream(fake_server, events):
    body = openai_text(["first", *["more"] * 50])
    fake_server.queue(Reply([body[0] + body[1], *body[2:]], stall=1.0))  # a pause after "first"
    task = asyncio.create_task(openai(fake_server).fetch(ASK, [], events.append))
    while not events:
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    deadline = time.monotonic() + 5
    while not fake_server.aborted and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert fake_server.aborted == ["/v1/chat/completions"]
    assert events == [{"type": "saying", "text": "first"}]


# -- Anthropic -------------------------------------------------------------------------------------
async def test_anthropic_thinking_text_and_tool_use_with_ping_and_signature(fake_server, events):
    blocks = [
        {"thinking": ["The user wants ", "the file 🙂."], "signature": ["EqQBCkYIARgCKkD", "x=="]},
        {"text": ["Reading ", "it."]},
        {"tool_use": ("toolu_01", "read", PATH_FRAGMENTS)},
    ]
    fake_server.queue(Reply(anthropic_message(blocks, stop_reason="tool_use"), cut="utf8"))
    provider = anthropic(fake_server)
    await provider.fetch(ASK, READ, events.append)
    assert events == [
        {"type": "thinking", "text": "The user wants "},
        {"type": "thinking", "text": "the file 🙂."},
        {"type": "saying", "text": "Reading "},
        {"type": "saying", "text": "it."},
        {"type": "usage", "inputTokens": 472, "outputTokens": 89},
        {"type": "doing", "id": "toolu_01", "name": "read", "arguments": {"path": PATH}},
    ]
    assert provider.signed_thinking["toolu_01"] == [
        {"type": "thinking", "thinking": "The user wants the file 🙂.", "signature": "EqQBCkYIARgCKkDx=="}
    ]


async def test_anthropic_tool_use_without_arguments_is_an_empty_object(fake_server, events):
    fake_server.queue(Reply(anthropic_message([{"tool_use": ("toolu_02", "list", [])}], stop_reason="tool_use")))
    await anthropic(fake_server).fetch(ASK, READ, events.append)
    assert events == [{"type": "usage", "inputTokens": 472, "outputTokens": 89}, {"type": "doing", "id": "toolu_02", "name": "list", "arguments": {}}]


async def test_anthropic_error_event_mid_stream_raises_its_message(fake_server, events):
    body = anthropic_message([{"text": ["Partial ", "answer"]}], stop=False)[:5] + [
        anthropic_error_event("overloaded_error", "Overloaded")
    ]
    fake_server.queue(Reply(body))
    with pytest.raises(ProviderError, match="^the model server reported an error mid-answer: Overloaded$"):
        await anthropic(fake_server).fetch(ASK, [], events.append)
    assert events == [{"type": "saying", "text": "Partial "}, {"type": "saying", "text": "answer"}]


async def test_anthropic_drop_before_message_stop(fake_server):
    body = anthropic_message([{"tool_use": ("toolu_03", "read", PATH_FRAGMENTS)}], stop=False)[:6]
    fake_server.queue(Reply(body, drop=True))
    assert "dropped mid-answer" in await failure(anthropic(fake_server), tools=READ)


async def test_anthropic_without_a_key_says_which_variable(fake_server):
    provider = AnthropicProvider("c", base_url=fake_server.url)
    assert await failure(provider) == "ANTHROPIC_API_KEY is not set"
    assert fake_server.requests == []


# -- Ollama ----------------------------------------------------------------------------------------
async def test_ollama_thinking_text_and_tool_calls_in_the_final_line(fake_server, events):
    calls = [
        {"function": {"name": "read", "arguments": {"path": PATH}}},
        {"function": {"index": 1, "name": "list", "arguments": {}}},
    ]
    lines = ollama_chat(["Let me ", "look 🙂"], thinking=["hm", "m"], final_calls=calls)
    fake_server.queue(Reply(lines, content_type="application/x-ndjson", cut="utf8"))
    await ollama(fake_server).fetch(ASK, READ, events.append)
    assert events == [
        {"type": "thinking", "text": "hm"},
        {"type": "thinking", "text": "m"},
        {"type": "saying", "text": "Let me "},
        {"type": "saying", "text": "look 🙂"},
        {"type": "usage", "inputTokens": 26, "outputTokens": 282},
        {"type": "doing", "id": "ollama-2-1", "name": "read", "arguments": {"path": PATH}},
        {"type": "doing", "id": "ollama-2-2", "name": "list", "arguments": {}},
    ]


async def test_ollama_error_line_mid_stream(fake_server):
    lines = ollama_chat(["a"], done=False) + [ndjson({"error": "an error was encountered while running the model"})]
    fake_server.queue(Reply(lines, content_type="application/x-ndjson"))
    message = await failure(ollama(fake_server))
    assert message == "the model server reported an error mid-answer: an error was encountered while running the model"


async def test_ollama_missing_model_is_an_http_error(fake_server):
    fake_server.queue(json_error(404, {"error": "model \"qwen3:8b\" not found, try pulling it first"}))
    assert await failure(ollama(fake_server)) == 'HTTP 404: model "qwen3:8b" not found, try pulling it first'


async def test_ollama_drop_mid_stream(fake_server):
    fake_server.queue(Reply([ndjson(ollama_line({"content": "a"}))], content_type="application/x-ndjson", drop=True))
    assert "dropped mid-answer" in await failure(ollama(fake_server))


async def test_ollama_malformed_line(fake_server):
    fake_server.queue(Reply([b'{"message": {"content": "a"}, "done": fal\n'], content_type="application/x-ndjson"))
    assert (await failure(ollama(fake_server))).startswith("malformed line from http://127.0.0.1:")


# -- the scripted model, as the agent tests use it -------------------------------------------------
@pytest.mark.parametrize("make", [openai, anthropic, ollama])
async def test_scripted_model_calls_read_then_answers_with_the_result(fake_server, make):
    provider = make(fake_server)
    first: list[dict] = []
    await provider.fetch(ASK, READ, first.append)
    [call] = first[-1:]
    assert call["type"] == "doing" and call["name"] == "read" and call["arguments"] == {"path": "README.md"}
    result = json.dumps({"ok": True, "content": "# Zebra notes"})
    follow_up = ASK + [
        {"role": "assistant", "content": "", "tool_calls": [{"id": call["id"], "name": "read", "arguments": call["arguments"]}]},
        {"role": "tool", "tool_call_id": call["id"], "content": result},
    ]
    second: list[dict] = []
    await provider.fetch(follow_up, READ, second.append)
    assert "".join(e["text"] for e in second if e["type"] == "saying") == f"the tool said: {result}"


async def test_tool_calls_without_ids_get_ids_unique_in_the_turn(fake_server):
    chunk = openai_chunk({"tool_calls": [{"index": 0, "function": {"name": "read", "arguments": '{"path":"a"}'}}]}, "tool_calls")
    fake_server.queue(Reply([sse(chunk), sse("[DONE]")]), Reply([sse(chunk), sse("[DONE]")]))
    provider, first, second = openai(fake_server), [], []
    await provider.fetch(ASK, READ, first.append)
    later = ASK + [{"role": "assistant", "content": "", "tool_calls": [{"id": first[0]["id"], "name": "read", "arguments": {"path": "a"}}]},
                   {"role": "tool", "tool_call_id": first[0]["id"], "content": "{}"}]
    await provider.fetch(later, READ, second.append)
    assert (first[0]["id"], second[0]["id"]) == ("call-2-1", "call-4-1")
