"""The plain logic behind MCP tools, without a server: settings and trust, tool results as the
model reads them, schema checks, and how an SDK failure is put in words."""

from __future__ import annotations

import pytest
from mcp.types import CallToolResult, TextContent, Tool

from elelem_lsp.agent.toolbox import encode
from elelem_lsp.agent.tools.execute import OUTPUT_CAP
from elelem_lsp.host.mcp import Connection, content_text, describe_error, outcome, schema_problem
from elelem_lsp.host.settings import HttpServer, StdioServer, parse_settings, within_trust


def test_each_shape_of_server_is_read_with_its_defaults():
    settings, problems = parse_settings({"mcpServers": {
        "fs": {"command": "npx", "args": ["-y", "server"], "env": {"A": "1"}},
        "web": {"url": "https://example.test/mcp", "headers": {"Authorization": "Bearer x"}, "callTimeout": 5},
    }})
    assert problems == []
    assert settings.mcp_servers == {
        "fs": StdioServer(command="npx", args=["-y", "server"], env={"A": "1"}),
        "web": HttpServer(url="https://example.test/mcp", headers={"Authorization": "Bearer x"}, callTimeout=5),
    }
    assert (settings.mcp, settings.allow_mcp_tools) == ("ask", [])


@pytest.mark.parametrize(
    ("server", "problem"),
    [
        ({}, "command: Field required"),
        ({"command": ""}, "command: String should have at least 1 character"),
        ({"command": "x", "env": {"A": 1}}, "env.A: Input should be a valid string"),
        ({"url": "file:///etc/passwd"}, "url: String should match pattern '^https?://'"),
        ({"url": "https://x", "startTimeout": 0}, "startTimeout: Input should be greater than 0"),
        ("npx server", "server: Input should be a valid dictionary"),
    ],
)
def test_a_bad_server_is_left_out_by_name_and_the_good_one_kept(server, problem):
    settings, problems = parse_settings({"mcpServers": {"bad": server, "good": {"command": "x"}}})
    assert list(settings.mcp_servers) == ["good"]
    assert problems[0].startswith("elelem.mcpServers.bad is left out: ")
    assert problem in problems[0]


def test_a_name_that_is_no_tool_name_prefix_is_left_out():
    settings, problems = parse_settings({"mcpServers": {"my server": {"command": "x"}}})
    assert settings.mcp_servers == {}
    assert problems == ["elelem.mcpServers.my server is left out: name: String should match pattern '^[A-Za-z0-9_-]+$'"]


@pytest.mark.parametrize("name", ["db__main", "db_", "__"])
def test_a_name_that_would_route_its_tools_elsewhere_is_left_out(name):
    """``db__main__query`` would go to a server ``db``: a name holds no ``__`` and ends in no ``_``."""
    settings, problems = parse_settings({"mcpServers": {name: {"command": "x"}, "db_main": {"command": "x"}}})
    assert list(settings.mcp_servers) == ["db_main"]
    assert problems == [f"elelem.mcpServers.{name} is left out: name: Value error, a server's name may not hold '__' "
                        "nor end in '_': its tools are called NAME__tool"]


@pytest.mark.parametrize(
    "servers",
    [
        [{"url": "https://example.test/mcp", "headers": {"Authorization": "Bearer s3cret"}}],  # a list, not an object
        "Bearer s3cret",
        {"web": {"url": "ftp://example.test", "headers": {"Authorization": "Bearer s3cret"}}},
        {"web": {"url": "https://example.test", "headers": {"Authorization": "Bearer s3cret", "X-Retry": 3}}},
        {"fs": {"command": "x", "env": {"API_KEY": "s3cret", "N": 1}}},
    ],
)
def test_a_bad_mcp_setting_is_named_and_no_header_or_env_value_is_shown(servers):
    settings, problems = parse_settings({"mcpServers": servers})
    assert settings.mcp_servers == {} and len(problems) == 1
    assert "mcpServers" in problems[0] and "s3cret" not in problems[0]


def test_an_untrusted_folder_keeps_no_server_and_no_allowance():
    settings, _ = parse_settings({"trusted": False, "mcpServers": {"fs": {"command": "x"}}, "allowMcpTools": ["fs"], "mcp": "allow"})
    limited, ignored = within_trust(settings)
    assert (limited.mcp_servers, limited.allow_mcp_tools, limited.mcp) == ({}, [], "ask")
    assert ignored == ["mcpServers", "allowMcpTools", "mcp 'allow' (using 'ask')"]
    denied, _ = within_trust(parse_settings({"trusted": False, "mcp": "deny"})[0])
    assert denied.mcp == "deny"  # what tightens stays


def test_an_error_result_is_ok_false_with_its_text_or_a_sentence():
    assert outcome(CallToolResult(content=[TextContent(type="text", text="no such file")], isError=True)) == {
        "ok": False, "error": "no such file"
    }
    assert outcome(CallToolResult(content=[], isError=True)) == {
        "ok": False, "error": "the tool reported an error and said nothing more"
    }


@pytest.mark.parametrize("text", ["E" * 500_000, '"\n\\' * 100_000, "é\x01" * 100_000], ids=["plain", "escaped", "control"])
def test_a_huge_result_or_error_is_cut_where_its_encoding_fits_the_cap(text):
    """Quotes, line breaks and control characters take more room encoded than as text: the cap holds on what the model reads."""
    answer = outcome(CallToolResult(content=[TextContent(type="text", text=text)]))
    error = outcome(CallToolResult(content=[TextContent(type="text", text=text)], isError=True))
    assert answer["truncated"] is True and text.startswith(answer["content"])
    assert error["ok"] is False and error["truncated"] is True and text.startswith(error["error"])
    for result in (answer, error):
        assert OUTPUT_CAP - 8 <= len(encode(result)) <= OUTPUT_CAP


def test_structured_content_alone_reaches_the_model_and_a_huge_one_is_cut():
    assert outcome(CallToolResult(content=[], structuredContent={"rows": 2})) == {"ok": True, "content": "", "structured": {"rows": 2}}
    huge = outcome(CallToolResult(content=[TextContent(type="text", text="y" * 10)], structuredContent={"blob": "z" * 70_000}))
    assert huge == {"ok": True, "content": "y" * 10, "truncated": True}


def test_an_unknown_content_block_is_a_placeholder():
    class Strange:
        type = "hologram"

    assert content_text(Strange()) == "[hologram content, not shown]"


def connection_with(schema) -> Connection:
    connection = Connection("s", StdioServer(command="x"), root=None)  # type: ignore[arg-type]
    connection.tools = {"t": Tool(name="t", inputSchema=schema)}
    return connection


def test_arguments_are_checked_against_the_servers_schema_and_a_broken_schema_checks_nothing():
    schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}, "tags": {"type": "array", "items": {"type": "string"}}},
              "required": ["n"], "additionalProperties": False}
    validator = connection_with(schema).validator("t")
    assert schema_problem(validator, {"n": 2, "tags": ["a"]}) is None
    assert schema_problem(validator, {"n": 0, "tags": ["a", 3], "x": 1}) == (
        "arguments: Additional properties are not allowed ('x' was unexpected); n: 0 is less than the minimum of 1; "
        "tags.1: 3 is not of type 'string'"
    )
    mixed = connection_with({"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"type": "string"}}},
                                                              "c": {"type": "array", "items": {"type": "string"}}}}).validator("t")
    assert schema_problem(mixed, {"a": {"b": 1}, "c": [2]}) == "a.b: 1 is not of type 'string'; c.0: 2 is not of type 'string'"
    broken = connection_with({"type": "object", "properties": {"n": {"type": "no such type"}}}).validator("t")
    assert broken is None and schema_problem(broken, {"n": "anything"}) is None
    dangling = connection_with({"type": "object", "properties": {"n": {"$ref": "#/$defs/Missing"}}}).validator("t")
    assert schema_problem(dangling, {"n": "anything"}) is None  # a $ref to nothing: the server judges the arguments


def test_an_sdk_failure_is_put_in_one_line():
    assert describe_error(ExceptionGroup("unhandled errors in a TaskGroup", [ExceptionGroup("inner", [ConnectionRefusedError(111, "Connection refused")])])) == "Connection refused"
    assert describe_error(FileNotFoundError(2, "No such file or directory", "/no/server")) == "No such file or directory: /no/server"
    assert describe_error(RuntimeError()) == "RuntimeError"
