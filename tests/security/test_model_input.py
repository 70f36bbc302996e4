"""What the model sends: malformed tool-call arguments and typeless in-stream errors.

Small local models and some gateways send broken JSON, raw control characters
inside strings, or JSON that is not an object. None of it ends the turn: the
model gets an ``ok: false`` result that says what was wrong, tries again, and
the step limit still applies. Each wire (OpenAI, Anthropic, Ollama) is played
by the fake model server through the real language server.
"""

from __future__ import annotations

import json

import pytest

from elelem_lsp.agent.messages import tool_arguments
from providers.fake_model_server import (
    Reply,
    anthropic_message,
    last_tool_result,
    model_requests,
    ndjson,
    ollama_chat,
    ollama_line,
    openai_chunk,
    openai_tool_calls,
    sse,
)

from .model_server import fake_server, provider_env  # noqa: F401 (fixture)

READ_RESULT = {"path": "README.md", "total_lines": 1, "lines": [1, 1], "content": "1\t# hello", "ok": True}
GOOD = '{"path": "README.md"}'
CONTROL = "a raw control character (U+000A) inside a string at character 14; escape it (\\n for a newline, \\t for a tab)"
MALFORMED = {
    "broken JSON": ('{"path": ', "not valid JSON (Expecting value at character 9)"),
    "raw newline inside a string": ('{"path": "READ\nME.md"}', CONTROL),
    "a JSON array": ('["README.md"]', "expected a JSON object of named arguments, got an array"),
    "a JSON string": ('"README.md"', "expected a JSON object of named arguments, got a string"),
}


def call(wire: str, arguments: str) -> Reply:
    """One ``read`` call whose argument text is ``arguments``, cut in three, in the wire's shape."""
    third = max(1, len(arguments) // 3)
    parts = [arguments[:third], arguments[third : 2 * third], arguments[2 * third :]]
    if wire == "openai":
        return Reply(openai_tool_calls([("call_1", "read", parts)]))
    if wire == "anthropic":
        return Reply(anthropic_message([{"tool_use": ("toolu_1", "read", parts)}], stop_reason="tool_use"))
    # Ollama sends arguments whole: an object when the model's JSON was one, else the text it wrote
    try:
        whole = json.loads(arguments)
    except ValueError:
        whole = None
    whole = whole if isinstance(whole, dict) else arguments
    return Reply(ollama_chat([], final_calls=[{"function": {"name": "read", "arguments": whole}}]), content_type="application/x-ndjson")


def tool_results(server, wire: str) -> list[dict]:
    """The tool result each model request carried, in order (requests without one skipped)."""
    found = [last_tool_result(wire, request.json) for request in model_requests(server.requests)]
    return [json.loads(result) for result in found if result is not None]


@pytest.mark.parametrize("wire", ["openai", "anthropic", "ollama"])
async def test_malformed_arguments_are_an_ok_false_result_and_the_model_tries_again(wire, project, fake_server, start_editor):
    editor = await start_editor(project, settings={"provider": wire}, env=provider_env(wire, fake_server.url))
    for number, (name, (arguments, problem)) in enumerate(MALFORMED.items()):
        fake_server.queue(call(wire, arguments), call(wire, GOOD))
        token = f"turn-{number}"
        result = await editor.ask("read the readme", token=token)
        assert result["error"] is None and result["steps"] == 3, (name, result)
        assert result["reply"] == f"the tool said: {json.dumps(READ_RESULT, separators=(',', ':'))}", name
        bad, good = tool_results(fake_server, wire)[-2:]
        assert bad == {"ok": False, "error": f"invalid arguments for read: {problem}"}, name
        assert good == READ_RESULT
        outcomes = [e for e in editor.events(token) if e["type"] == "result"]
        assert [o["ok"] for o in outcomes] == [False, True]
        assert outcomes[0]["error"] == bad["error"]


async def test_the_step_limit_still_ends_a_model_that_never_gets_it_right(project, fake_server, start_editor):
    editor = await start_editor(project, settings={"provider": "openai", "maxSteps": 3}, env=provider_env("openai", fake_server.url))
    fake_server.queue(*[call("openai", '{"path": ') for _ in range(5)])
    result = await editor.ask("read the readme")
    assert result["steps"] == 3 and result["reply"].startswith("Error: stopped after 3 steps")
    assert len(model_requests(fake_server.requests)) == 3  # a server of one's own is also asked its window
    assert all(r == {"ok": False, "error": "invalid arguments for read: not valid JSON (Expecting value at character 9)"}
               for r in tool_results(fake_server, "openai"))
    again = await editor.ask("hello")  # the session goes on
    assert again["error"] is None


TYPELESS = {
    "openai": Reply([sse(openai_chunk({"content": "Hel"})), sse({"error": {"message": "Upstream rate limit", "code": 429}})]),
    "anthropic": Reply([sse({"error": {"type": "overloaded_error", "message": "Upstream rate limit"}})]),
    "ollama": Reply([ndjson(ollama_line({"content": "Hel"})), ndjson({"error": "Upstream rate limit"})], content_type="application/x-ndjson"),
}


@pytest.mark.parametrize("wire", ["openai", "anthropic", "ollama"])
async def test_a_typeless_error_in_the_stream_is_the_servers_message(wire, project, fake_server, start_editor):
    editor = await start_editor(project, settings={"provider": wire}, env=provider_env(wire, fake_server.url))
    fake_server.queue(TYPELESS[wire])
    result = await editor.ask("hi")
    assert result["reply"] == "Error: the model server reported an error mid-answer: Upstream rate limit"
    assert editor.progress["turn-1"][-1] == {"kind": "end", "message": result["reply"]}
    assert (await editor.ask("again", token="turn-2"))["error"] is None


# -- the check itself, as a plain function -----------------------------------------------------
@pytest.mark.parametrize(
    "value, expected",
    [
        ({"path": "a"}, ({"path": "a"}, None)),
        ('{"path": "a"}', ({"path": "a"}, None)),
        ("", ({}, None)),
        ("  \n", ({}, None)),
        ('{"path": "a\tb"}', ({}, "a raw control character (U+0009) inside a string at character 11; escape it (\\n for a newline, \\t for a tab)")),
        ('{"path": "a"', ({}, "not valid JSON (Expecting ',' delimiter at character 12)")),
        ('{"path": "a"} trailing', ({}, "not valid JSON (Extra data at character 14)")),
        ("[" * 100_000 + "]" * 100_000, ({}, "JSON nested too deeply")),
        ("3", ({}, "expected a JSON object of named arguments, got a number")),
        ("null", ({}, "expected a JSON object of named arguments, got null")),
        ("true", ({}, "expected a JSON object of named arguments, got true or false")),
        (["a"], ({}, "expected a JSON object of named arguments, got an array")),
        (7, ({}, "expected a JSON object of named arguments, got a number")),
        ({1: "a"}, ({}, "argument names must be strings")),
    ],
)
def test_tool_arguments_say_what_was_wrong(value, expected):
    assert tool_arguments(value) == expected
