"""The <tool_call> text protocol on scripted model text, and the ChatML prompts it builds."""

from __future__ import annotations

import json

import pytest

from optional_parts import require_module
from elelem_lsp.agent.messages import check_event
from elelem_lsp.providers.local.tool_text import ToolCallStream, chatml_prompt, describe_tools, parse_call

READ = {"type": "function", "function": {"name": "read", "description": "Read file",
                                         "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                                                        "required": ["path"]}}}


def stream(pieces: list[str]) -> tuple[list[dict], bool]:
    """Feed ``pieces`` as a model would stream them; the events and whether a stop was seen."""
    events: list[dict] = []
    parser = ToolCallStream(events.append)
    stopped = False
    for piece in pieces:
        if parser.feed(piece):
            stopped = True
            break
    parser.close()
    return events, stopped


def said(events: list[dict]) -> str:
    return "".join(e["text"] for e in events if e["type"] == "saying")


def doings(events: list[dict]) -> list[tuple[str, dict]]:
    return [(e["name"], e["arguments"]) for e in events if e["type"] == "doing"]


def test_plain_text_streams_as_it_arrives():
    events, stopped = stream(["Hel", "lo", " there"])
    assert [e["text"] for e in events] == ["Hel", "lo", " there"]
    assert not stopped


def test_a_call_split_across_many_tokens_becomes_one_doing():
    text = 'Let me look.\n<tool_call>\n{"name": "read", "arguments": {"path": "README.md"}}\n</tool_call>'
    pieces = [text[i : i + 3] for i in range(0, len(text), 3)]  # every tag cut in pieces
    events, _ = stream(pieces)
    assert doings(events) == [("read", {"path": "README.md"})]
    assert said(events) == "Let me look.\n"
    assert "<" not in said(events)  # no partial tag leaked as text
    assert all(check_event(e) for e in events)  # well-formed for the agent


def test_a_call_one_character_at_a_time_with_text_after():
    text = 'a<tool_call>{"name":"grep","arguments":{"pattern":"x<y"}}</tool_call>b'
    events, _ = stream(list(text))
    assert doings(events) == [("grep", {"pattern": "x<y"})]
    assert said(events) == "ab"
    kinds = [e["type"] for e in events]
    assert kinds.index("doing") > 0 and kinds[-1] == "saying"  # in the order written


def test_two_calls_in_one_reply_keep_their_order_and_distinct_ids():
    events, _ = stream([
        '<tool_call>{"name": "read", "arguments": {"path": "a"}}</tool_call>\n',
        '<tool_call>{"name": "read", "arguments": {"path": "b"}}</tool_call>',
    ])
    calls = [e for e in events if e["type"] == "doing"]
    assert [c["arguments"]["path"] for c in calls] == ["a", "b"]
    assert calls[0]["id"] != calls[1]["id"]


def test_the_end_marker_stops_the_reply_even_when_split():
    events, stopped = stream(["done", "<|im", "_end|>", "garbage after"])
    assert stopped
    assert said(events) == "done"
    events, stopped = stream(["done<|im_end|>\n<|im_start|>user"])  # in the same piece as what follows
    assert stopped and said(events) == "done"


def test_the_end_marker_inside_a_call_ends_the_reply_and_shows_the_call_as_text():
    events, stopped = stream(['<tool_call>{"name": "read"', "<|im_end|>after"])
    assert stopped and doings(events) == []
    assert said(events) == '<tool_call>{"name": "read"'


def test_a_lone_angle_bracket_is_text_once_it_cannot_be_a_tag():
    events, _ = stream(["x <", " y"])
    assert said(events) == "x < y"


def test_a_call_that_is_not_json_is_shown_as_text():
    events, _ = stream(["<tool_call>{not json}</tool_call>"])
    assert doings(events) == []
    assert said(events) == "<tool_call>{not json}</tool_call>"


def test_an_unfinished_call_at_the_end_is_shown_as_text():
    events, _ = stream(['<tool_call>{"name": "read", "argu'])
    assert doings(events) == []
    assert said(events) == '<tool_call>{"name": "read", "argu'


@pytest.mark.parametrize("body, expected", [
    ('{"name": "read", "arguments": "{\\"path\\": \\"a\\"}"}', ("read", {"path": "a"})),
    ('{"name": "read", "parameters": {"path": "a"}}', ("read", {"path": "a"})),
    ('{"name": "list"}', ("list", {})),
    ('{"arguments": {}}', None),
    ('["read"]', None),
    ('{"name": "read", "arguments": [1]}', None),
])
def test_parse_call_accepts_the_shapes_models_write(body, expected):
    assert parse_call(body) == expected


def test_chatml_prompt_carries_tools_calls_and_results():
    messages = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "what is in README.md?"},
        {"role": "assistant", "content": "",
         "tool_calls": [{"id": "c1", "name": "read", "arguments": {"path": "README.md"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": '{"content":"# hi","ok":true}'},
    ]
    prompt = chatml_prompt(messages, [READ])
    assert prompt.startswith("<|im_start|>system\nYou are a coding agent.\n\n# Tools")
    assert json.dumps(READ) in prompt
    call = '{"name": "read", "arguments": {"path": "README.md"}}'
    assert f"<|im_start|>assistant\n<tool_call>\n{call}\n</tool_call><|im_end|>" in prompt
    assert '<|im_start|>user\n<tool_response>\n{"content":"# hi","ok":true}\n</tool_response><|im_end|>' in prompt
    assert prompt.endswith("<|im_end|>\n<|im_start|>assistant\n")


def test_without_tools_there_is_no_tool_section_and_no_system_turn_is_invented():
    prompt = chatml_prompt([{"role": "user", "content": "hi"}], [])
    assert prompt == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    assert "# Tools" in describe_tools([READ])


def test_the_tiny_models_template_renders_what_chatml_prompt_writes():
    """Our prompt is the same text a Qwen-style GGUF template renders for the same conversation."""
    require_module("jinja2", "local", "python3 -m pip install -e '.[llama]' (llama-cpp-python brings jinja2)")
    import jinja2
    from tiny_models import CHAT_TEMPLATE

    from elelem_lsp.providers.local.tool_text import write_arguments
    from elelem_lsp.providers.shaping import chat_message

    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "read it"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "name": "read", "arguments": {"path": "a"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": '{"ok":true}'},
    ]
    environment = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)
    environment.policies["json.dumps_kwargs"] = {"sort_keys": False}
    rendered = environment.from_string(CHAT_TEMPLATE).render(
        messages=[chat_message(m, write_arguments) for m in messages], tools=[READ], add_generation_prompt=True
    )
    assert rendered == chatml_prompt(messages, [READ])


def test_llama2_template_writes_inst_turns_with_the_system_prompt_first():
    from elelem_lsp.providers.local.tool_text import llama2_prompt

    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "read it"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "name": "read", "arguments": {"path": "a"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": '{"ok":true}'},
    ]
    prompt = llama2_prompt(messages, [])
    assert prompt == (
        "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nread it [/INST] "
        '<tool_call>\n{"name": "read", "arguments": {"path": "a"}}\n</tool_call> </s>'
        '<s>[INST] <tool_response>\n{"ok":true}\n</tool_response> [/INST]'
    )
    assert llama2_prompt([{"role": "user", "content": "hi"}], []) == "[INST] hi [/INST]"


def test_an_unknown_template_name_is_refused_with_the_known_ones():
    from elelem_lsp.agent.messages import ProviderError
    from elelem_lsp.providers.local.tool_text import template_named

    assert template_named(None) is template_named("chatml")
    with pytest.raises(ProviderError, match="unknown chat template 'alpaca'; known: chatml, llama2"):
        template_named("alpaca")


def test_llama2_template_stops_at_the_next_inst():
    from elelem_lsp.providers.local.tool_text import TEMPLATES

    events: list[dict] = []
    parser = ToolCallStream(events.append, TEMPLATES["llama2"].stops)
    assert not parser.feed("an answer ")
    assert parser.feed("[IN") is False and parser.feed("ST] more")
    parser.close()
    assert said(events) == "an answer "
