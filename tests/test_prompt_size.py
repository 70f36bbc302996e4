"""The fixed part of a request sized to its window: lean tool schemas, the compact prompt of a small
window (at most 2,000 characters as sent, the core tools, optional ones only while there is room),
the full one of a large window, and the ``prompt`` setting that chooses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from elelem_lsp.agent.lean_schema import lean_schema
from elelem_lsp.agent.session import Session
from elelem_lsp.agent.toolbox import Toolbox
from elelem_lsp.agent.workspace import Workspace
from navigating_workspace import workspace_and_toolbox

CORE = ["read", "write", "edit", "execute", "list", "grep"]
NAVIGATION = ["diagnostics", "definition", "references", "symbols"]


class Recording:
    def __init__(self) -> None:
        self.sent: list[tuple[list, list]] = []

    async def fetch(self, messages, tools, emit):
        self.sent.append(([dict(m) for m in messages], tools))
        emit({"type": "saying", "text": "done " + "r" * 300})


def as_sent(messages: list, tools: list) -> str:
    """The fixed part of a request as the APIs' clients send it: the system prompt and the tools' JSON."""
    return messages[0]["content"] + json.dumps(tools, ensure_ascii=False, separators=(",", ":"))


def names(tools: list) -> list[str]:
    return [tool["function"]["name"] for tool in tools]


def every_key(value, found=None) -> list[str]:
    found = [] if found is None else found
    if isinstance(value, dict):
        for key, item in value.items():
            found.append(key)
            every_key(item, found)
    elif isinstance(value, list):
        for item in value:
            every_key(item, found)
    return found


async def one_turn(root: Path, budget: int | None, setting: str = "auto", editor: bool = False) -> tuple[list, list, Session]:
    provider = Recording()
    workspace, toolbox = workspace_and_toolbox(root, "editor" if editor else "terminal", editor)
    session = Session(provider, workspace, toolbox=toolbox)
    session.context_setting = budget
    session.prompt_setting = setting
    await session.turn("what is in the readme?")
    messages, tools = provider.sent[-1]
    return messages, tools, session


def test_tool_schemas_have_no_titles_or_references_and_keep_every_limit():
    definitions = {d["function"]["name"]: d["function"]["parameters"] for d in Toolbox().definitions()}
    for schema in definitions.values():
        keys = every_key(schema)
        assert "title" not in keys and "$ref" not in keys and "$defs" not in keys
    entry = definitions["plan"]["properties"]["entries"]["items"]  # was a $ref to $defs/PlanEntry
    assert entry["properties"]["content"] == {"minLength": 1, "type": "string"}
    assert entry["properties"]["status"]["enum"] == ["pending", "in_progress", "completed"]
    assert entry["properties"]["priority"]["default"] == "medium"
    assert definitions["grep"]["properties"]["context"] == {
        "default": 0, "description": "Lines to show before and after each match", "maximum": 10, "minimum": 0, "type": "integer",
    }
    assert definitions["execute"]["properties"]["timeout"]["maximum"] == 3600


def test_a_server_schema_is_made_lean_but_a_property_named_title_and_a_recursive_reference_stay():
    schema = {
        "title": "noteArguments", "type": "object", "required": ["title", "tree"],
        "properties": {
            "title": {"title": "Title", "type": "string", "maxLength": 80},
            "tree": {"$ref": "#/$defs/Node"},
            "tag": {"$ref": "#/$defs/Tag", "description": "one tag"},
        },
        "$defs": {
            "Tag": {"title": "Tag", "enum": ["a", "b"], "default": "a"},
            "Node": {"title": "Node", "type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}},
        },
    }
    lean = lean_schema(schema)
    assert lean["properties"]["title"] == {"type": "string", "maxLength": 80}
    assert lean["properties"]["tag"] == {"enum": ["a", "b"], "default": "a", "description": "one tag"}
    assert lean["properties"]["tree"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
    assert "Node" in lean["$defs"] and "title" not in lean
    assert schema["properties"]["title"]["title"] == "Title"  # the server's own schema is left as it was


@pytest.mark.parametrize("budget", [2000, 4096, 6000])
async def test_a_small_window_gets_the_compact_prompt_within_2000_characters(tmp_path, budget):
    messages, tools, session = await one_turn(tmp_path, budget)
    core = [tool for tool in tools if tool["function"]["name"] in CORE]
    assert len(as_sent(messages, core)) <= 2000, as_sent(messages, core)  # the compact form itself
    if budget == 2000:  # no room for anything optional: the whole fixed part as sent
        assert tools == core and len(as_sent(messages, tools)) <= 2000
    assert session.prompt_mode == "compact"
    assert names(tools)[:6] == CORE
    assert all(len(tool["function"]["description"]) < 80 for tool in tools)  # one line each
    assert "description" not in every_key([tool["function"]["parameters"] for tool in tools])


async def test_a_large_window_gets_the_full_prompt_and_every_tool(tmp_path):
    messages, tools, session = await one_turn(tmp_path, 32_000)
    assert session.prompt_mode == "full"
    assert names(tools) == [*CORE, "plan"]
    assert "How to work:" in messages[0]["content"]
    read = tools[0]["function"]
    assert "offset" in read["description"] and read["parameters"]["properties"]["path"]["description"]
    assert len(as_sent(messages, tools)) > 4000


async def test_optional_tools_are_offered_only_while_the_fixed_part_is_within_a_quarter_of_the_window(tmp_path):
    _, at_2000, _ = await one_turn(tmp_path, 2000, editor=True)
    _, at_6000, session = await one_turn(tmp_path, 6000, editor=True)
    _, at_32000, _ = await one_turn(tmp_path, 32_000, editor=True)
    assert names(at_2000) == CORE  # no room: the history keeps its share
    assert len(names(at_6000)) > len(CORE) and names(at_6000)[:6] == CORE
    assert names(at_32000) == [*CORE, "plan", *NAVIGATION]
    fixed = len(as_sent([{"content": ""}], at_6000))
    assert fixed / 3 <= 6000 / 4  # by the estimate, three characters a token
    assert session.tools_left_out == [name for name in ["plan", *NAVIGATION] if name not in names(at_6000)]


@pytest.mark.parametrize(("budget", "setting", "mode"), [(32_000, "compact", "compact"), (2000, "full", "full"), (8192, "auto", "full")])
async def test_the_prompt_setting_chooses_the_mode_whatever_the_window(tmp_path, budget, setting, mode):
    messages, tools, session = await one_turn(tmp_path, budget, setting)
    assert session.prompt_mode == mode
    assert ("plan" in names(tools)) == (mode == "full" or budget > 6000)
    assert ("How to work:" in messages[0]["content"]) == (mode == "full")


async def test_a_long_agents_md_is_cut_to_a_quarter_of_a_small_window_with_a_marker(tmp_path):
    (tmp_path / "AGENTS.md").write_text("Always answer in haiku. " + "rule " * 6000)  # about 10,000 tokens
    provider = Recording()
    session = Session(provider, Workspace(tmp_path))
    session.context_setting = 4096
    for n in range(4):
        await session.turn(f"question {n} " + "q" * 200)
    messages, tools = provider.sent[-1]
    system = messages[0]["content"]
    assert "Always answer in haiku." in system and "cut to fit the context window]" in system
    assert len(system) // 3 <= 4096 // 4 + 400  # AGENTS.md's quarter and the compact prompt's own lines
    asked = [m["content"].split()[1] for m in messages if m["role"] == "user"]
    assert asked[-3:] == ["1", "2", "3"]  # the latest turns still fit beside it
