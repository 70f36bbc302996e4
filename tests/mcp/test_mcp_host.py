"""MCP servers behind the host, with an in-memory front end and the SDK-written tool server:
tools offered as NAME__tool, results the model reads, schema checks, permission, timeouts,
cancellation, crashes and restarts, start failures, trust, and no process left behind."""

from __future__ import annotations

import asyncio
import functools
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from scaffold import add_plugin, wait_until, write_script

from elelem_lsp.host.frontend import BadRequest
from elelem_lsp.host.mcp import transport
from elelem_lsp.host.host import Host
from elelem_lsp.host.permission import ALLOW_ONCE, ALLOW_SESSION, DENY

from host.memory_frontend import MemoryFrontend
from mcp_servers import SAY_RESULT, alive, call, calls_seen, read_log, tool_server


def host_for(root: Path, servers: dict[str, Any], script: list, **settings: Any) -> tuple[Host, MemoryFrontend, Any]:
    add_plugin(root, "scripted")
    write_script(root, script)
    raw = {"workspacePlugins": True, "provider": "scripted", "mcpServers": servers, "mcp": "allow", **settings}
    frontend = MemoryFrontend(settings_by_folder={root.as_uri(): raw})
    host = Host(frontend)
    host.sync_folders({root.as_uri(): root})
    return host, frontend, host.agents[root.as_uri()]


def results(frontend: MemoryFrontend, turn: int = -1) -> list[dict[str, Any]]:
    return [e for e in frontend.progress[turn].events if e["type"] == "result"]


def answer(result: dict[str, Any]) -> dict[str, Any]:
    """The tool result the model read (the scripted provider says it as its reply)."""
    return json.loads(result["reply"])


@pytest.fixture
async def stopped_hosts():
    """Hosts to shut down at the end of the test, so no server outlives it."""
    hosts: list[Host] = []
    yield hosts
    for host in hosts:
        await host.shutdown()


async def test_a_tool_answers_as_name__tool_and_the_model_reads_its_result(project, stopped_hosts):
    host, frontend, folder = host_for(project, {"t": tool_server()}, [call("t__echo", text="héllo"), SAY_RESULT])
    stopped_hosts.append(host)
    result = await folder.turn("echo")
    assert answer(result) == {"ok": True, "content": "héllo", "structured": {"result": "héllo"}}
    doing = [e for e in frontend.progress[0].events if e["type"] == "doing"]
    assert doing == [{"type": "doing", "id": "1", "name": "t__echo", "arguments": {"text": "héllo"}, "title": 't: echo text="héllo"'}]
    assert results(frontend) == [{"type": "result", "id": "1", "name": "t__echo", "ok": True, "title": 't: echo text="héllo"', "summary": "1 line"}]
    assert frontend.messages == [] and frontend.questions == []


async def test_the_provider_gets_each_tool_with_the_servers_schema_made_lean(project, stopped_hosts):
    host, _, folder = host_for(project, {"t": tool_server()}, [])
    stopped_hosts.append(host)
    await folder.refresh_settings()
    definitions = await (await folder.ready()).toolbox.offered()
    by_name = {d["function"]["name"]: d["function"] for d in definitions}
    assert {"read", "execute", "t__echo", "t__add", "t__hang"} <= set(by_name)
    assert "t__dotted.name" not in by_name
    assert by_name["t__add"] == {
        "name": "t__add",
        "description": "Add two whole numbers.",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},  # the generated titles gone
            "required": ["a", "b"],
        },
    }
    listed = {t["name"]: t for t in host.tools()["tools"]}
    assert listed["t__echo"]["server"] == "t" and "server" not in listed["read"]


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({"a": "x", "b": 1}, "a: 'x' is not of type 'integer'"),
        ({"a": 1}, "arguments: 'b' is a required property"),
        ({"a": 1.5, "b": [2]}, "a: 1.5 is not of type 'integer'; b: [2] is not of type 'integer'"),
    ],
)
async def test_arguments_that_break_the_schema_are_refused_before_the_call(project, stopped_hosts, tmp_path, arguments, problem):
    log = tmp_path / "calls.log"
    host, frontend, folder = host_for(project, {"t": tool_server(log)}, [call("t__add", **arguments), SAY_RESULT])
    stopped_hosts.append(host)
    result = await folder.turn("add")
    assert answer(result) == {"ok": False, "error": f"invalid arguments for t__add: {problem}"}
    assert calls_seen(log) == []  # the server never saw the call


async def test_images_resources_and_long_texts_become_text_the_model_can_read(project, stopped_hosts):
    script = [call("t__picture"), call("t__flood", "2", size=200_000), SAY_RESULT]
    # a context budget that holds the whole cut result, so the model is handed what the cap left
    host, frontend, folder = host_for(project, {"t": tool_server()}, script, contextTokens=1_000_000)
    stopped_hosts.append(host)
    result = await folder.turn("look")
    flooded = answer(result)
    assert flooded["truncated"] is True and "structured" not in flooded
    assert len(result["reply"]) <= 65536 < len(result["reply"]) + 100  # the whole result as the model read it: at the cap
    assert flooded["content"] == "x" * len(flooded["content"])
    assert results(frontend)[1]["summary"] == "1 line (cut short)"
    write_script(project, [call("t__picture"), SAY_RESULT])
    result = await folder.turn("again")
    assert answer(result) == {"ok": True, "content": "a red pixel\n[image: image/png, 70 bytes, not shown]"}
    write_script(project, [call("t__documents"), SAY_RESULT])
    result = await folder.turn("documents")
    assert answer(result)["content"].splitlines() == [
        "[resource: file:///notes/todo.md (todo)]",
        "[resource: file:///notes/a.md]",
        "# A",
        "",  # the resource's own last line break, kept
        "[resource: file:///a.bin, application/x-bin, not shown]",
    ]


async def test_a_failing_tool_is_an_error_result_and_the_session_goes_on(project, stopped_hosts):
    host, frontend, folder = host_for(project, {"t": tool_server()}, [call("t__fail", message="disk full"), SAY_RESULT])
    stopped_hosts.append(host)
    result = await folder.turn("fail")
    assert answer(result) == {"ok": False, "error": "Error executing tool fail"}
    assert results(frontend)[0]["ok"] is False
    write_script(project, [call("t__echo", text="still here"), SAY_RESULT])
    assert answer(await folder.turn("again"))["content"] == "still here"


async def test_a_hanging_call_times_out_and_is_cancelled_on_the_server(project, stopped_hosts, tmp_path):
    log = tmp_path / "calls.log"
    servers = {"t": tool_server(log, callTimeout=1)}
    host, frontend, folder = host_for(project, servers, [call("t__hang"), SAY_RESULT])
    stopped_hosts.append(host)
    result = await folder.turn("hang")
    assert answer(result) == {"ok": False, "error": "t__hang did not answer within 1s; the call was cancelled"}
    assert frontend.messages == [("error", "elelem: MCP server 't' did not answer a call of hang within 1s; the call was cancelled")]
    await wait_until(lambda: "hang cancelled" in read_log(log), "the server to hear notifications/cancelled")
    write_script(project, [call("t__echo", text="after"), SAY_RESULT])
    assert answer(await folder.turn("again"))["content"] == "after"  # the same server goes on


async def test_garbage_on_the_wire_ends_in_the_call_timeout(project, stopped_hosts):
    host, frontend, folder = host_for(project, {"t": tool_server(callTimeout=2)}, [call("t__garbage"), SAY_RESULT])
    stopped_hosts.append(host)
    result = await folder.turn("garbage")
    unreadable = "Invalid JSON: expected ident at line 1 column 2: 'this is not json'"
    wrote = f"(it wrote what is not JSON-RPC: {unreadable})"
    assert answer(result) == {"ok": False, "error": f"t__garbage did not answer within 2s {wrote}; the call was cancelled"}
    stderr = "; its stderr ends:\ntool_server: writing garbage"
    assert frontend.messages == [
        ("warning", f"elelem: MCP server 't' wrote what is not JSON-RPC where only MCP messages belong ({unreadable}); "
                    f"such lines are skipped{stderr}"),
        ("error", f"elelem: MCP server 't' did not answer a call of garbage within 2s {wrote}; the call was cancelled{stderr}"),
    ]
    write_script(project, [call("t__echo", text="still fine"), SAY_RESULT])
    assert answer(await folder.turn("again"))["content"] == "still fine"  # a stray line breaks nothing else


async def test_a_banner_before_the_handshake_is_skipped_and_the_server_works(project, stopped_hosts):
    servers = {"t": tool_server(env={"TOOL_SERVER_START": "banner"})}
    host, frontend, folder = host_for(project, servers, [call("t__echo", text="after the banner"), SAY_RESULT])
    stopped_hosts.append(host)
    assert answer(await folder.turn("echo"))["content"] == "after the banner"
    [(level, message)] = frontend.messages
    assert level == "warning" and "'tool_server 1.0 ready'" in message


async def test_cancelling_the_turn_cancels_the_call_in_flight(project, stopped_hosts, tmp_path):
    log = tmp_path / "calls.log"
    host, frontend, folder = host_for(project, {"t": tool_server(log)}, [call("t__hang"), SAY_RESULT])
    stopped_hosts.append(host)
    turn = asyncio.ensure_future(folder.turn("hang"))
    await wait_until(lambda: "hang started" in read_log(log), "the call to reach the server", timeout=30)
    assert folder.cancel() is True
    result = await asyncio.wait_for(turn, 10)
    assert result["cancelled"] is True and frontend.progress[0].ended == "cancelled"
    await wait_until(lambda: "hang cancelled" in read_log(log), "the server to hear notifications/cancelled")
    write_script(project, [call("t__echo", text="next turn"), SAY_RESULT])
    assert answer(await folder.turn("again"))["content"] == "next turn"


async def test_a_server_that_crashes_mid_call_is_reported_once_and_restarted_on_next_use(project, stopped_hosts):
    script = [call("t__pid"), call("t__crash", "2"), call("t__pid", "3"), SAY_RESULT]
    host, frontend, folder = host_for(project, {"t": tool_server(), "u": tool_server()}, script)
    stopped_hosts.append(host)
    result = await folder.turn("crash")
    first, crashed, second = results(frontend)
    assert first["ok"] and second["ok"]
    assert crashed["ok"] is False
    assert crashed["error"].startswith('MCP server "t" ended the connection (Connection closed) at a call of crash')
    assert crashed["error"].endswith("; it is started again on its next use")
    [(level, message)] = frontend.messages
    assert level == "error" and message.startswith("elelem: MCP server 't' ended the connection (Connection closed)")
    assert message.endswith("its stderr ends:\ntool_server: crashing as asked")
    new_pid = answer(result)["content"]
    messages = folder.session.history
    assert messages  # the turn completed
    assert alive(int(new_pid))
    status = {s["name"]: s for s in (await folder.mcp_status())["servers"]}
    assert status["t"]["state"] == "ready" and status["u"]["state"] == "ready"


async def test_a_server_killed_between_calls_shows_crashed_and_the_next_call_starts_it_again(project, stopped_hosts):
    host, frontend, folder = host_for(project, {"t": tool_server()}, [call("t__pid"), SAY_RESULT])
    stopped_hosts.append(host)
    first = int(answer(await folder.turn("pid"))["content"])
    os.kill(first, signal.SIGKILL)
    await wait_until(lambda: folder.mcp.connections["t"].state == "crashed", "the server's end to be noticed")
    [status] = (await folder.mcp_status())["servers"]
    assert (status["state"], status["error"], status["tools"]) == ("crashed", "ended its session", [])
    assert frontend.messages == [("error", "elelem: MCP server 't' ended its session; it is started again on its next use")]
    await wait_until(lambda: not alive(first), "the killed server to be reaped")
    write_script(project, [call("t__pid", "2"), SAY_RESULT])
    second = int(answer(await folder.turn("pid"))["content"])
    assert second != first and alive(second)
    assert [r["ok"] for r in results(frontend)] == [True] and len(frontend.messages) == 1
    [status] = (await folder.mcp_status())["servers"]
    assert status["state"] == "ready"


async def test_a_server_that_dies_while_the_person_is_asked_gets_the_call_once_started_again(project, stopped_hosts, tmp_path):
    log = tmp_path / "calls.log"
    host, frontend, folder = host_for(project, {"t": tool_server(log)}, [call("t__echo", text="once"), SAY_RESULT], mcp="ask")
    stopped_hosts.append(host)

    async def kill_then_allow(question: str, options: list[str]) -> str:
        [started] = read_log(log)
        os.kill(int(started.split()[1]), signal.SIGKILL)
        await wait_until(lambda: folder.mcp.connections["t"].state == "crashed", "the server's end to be noticed")
        return ALLOW_ONCE

    frontend.ask_permission = kill_then_allow
    assert answer(await folder.turn("echo"))["content"] == "once"
    assert [line.split()[0] for line in read_log(log)] == ["started", "started", "echo"]  # sent once, to the new process
    assert frontend.messages == [("error", "elelem: MCP server 't' ended its session; it is started again on its next use")]


async def test_counting_the_context_after_a_crash_starts_no_server_and_the_next_turn_does(project, stopped_hosts, tmp_path):
    log = tmp_path / "calls.log"
    host, _, folder = host_for(project, {"t": tool_server(log)}, [call("t__crash"), SAY_RESULT])
    stopped_hosts.append(host)
    await folder.turn("crash")
    connection = folder.mcp.connections["t"]
    assert connection.state == "crashed"  # the turn's end counted the context and left it so
    context = await folder.context()  # as a client's header asks after each turn
    assert connection.state == "crashed" and context["usage"]["contextTokens"] == context["tokens"]
    [started] = [line for line in read_log(log) if line.startswith("started")]
    await wait_until(lambda: not alive(int(started.split()[1])), "the crashed server to be reaped")
    # its last listing is still counted: the next turn starts it again and offers those tools
    counted = {d["function"]["name"] for d in await (await folder.ready()).toolbox.counted()}
    assert {"t__echo", "t__pid"} <= counted and connection.state == "crashed"
    write_script(project, [call("t__pid"), SAY_RESULT])
    second = int(answer(await folder.turn("pid"))["content"])
    assert alive(second) and connection.state == "ready"
    assert [line.split()[0] for line in read_log(log)].count("started") == 2


async def test_a_result_the_sdk_cannot_accept_is_an_error_and_the_server_goes_on(project, stopped_hosts):
    host, frontend, folder = host_for(project, {"t": tool_server()}, [call("t__pid"), SAY_RESULT])
    stopped_hosts.append(host)
    first = answer(await folder.turn("pid"))["content"]
    write_script(project, [call("t__miscount"), call("t__pid", "2"), SAY_RESULT])
    result = await folder.turn("count")
    invalid = "Invalid structured content returned by tool miscount: '7' is not of type 'integer'"
    miscounted, after = results(frontend)
    assert miscounted["ok"] is False and miscounted["error"] == f'MCP server "t" returned an invalid result: {invalid}'
    assert after["ok"] and answer(result)["content"] == first  # the same process answers
    [(level, message)] = frontend.messages
    assert level == "error" and message.startswith(f"elelem: MCP server 't' returned an invalid result to a call of miscount: {invalid}")


async def test_a_chatty_server_keeps_only_the_end_of_its_stderr(project, stopped_hosts, monkeypatch):
    pipes: list[transport.StderrPipe] = []
    opened = transport.StderrPipe.__init__
    monkeypatch.setattr(transport.StderrPipe, "__init__", lambda self: (opened(self), pipes.append(self))[0])
    script = [call("t__chatter", size=5_000_000), call("t__crash", "2"), SAY_RESULT]
    host, frontend, folder = host_for(project, {"t": tool_server()}, script)
    stopped_hosts.append(host)
    await folder.turn("chatter")
    [(level, message)] = frontend.messages
    tail = message.split("its stderr ends:\n")[1]
    assert tail.endswith(f"{'.' * 86}\ntool_server: crashing as asked") and len(tail) <= 1500
    assert len(pipes[0].kept) == 64 * 1024  # not the 5 MB it wrote


async def test_a_server_that_cannot_start_is_reported_and_the_others_go_on(project, stopped_hosts):
    servers = {"broken": tool_server(env={"TOOL_SERVER_START": "fail"}), "t": tool_server()}
    script = [call("broken__echo", text="x"), call("t__echo", "2", text="fine"), SAY_RESULT]
    host, frontend, folder = host_for(project, servers, script)
    stopped_hosts.append(host)
    result = await folder.turn("go")
    assert answer(result)["content"] == "fine"
    broken = results(frontend)[0]
    assert broken["ok"] is False and broken["error"].startswith('MCP server "broken" is not available: could not start: ')
    [(level, message)] = frontend.messages
    assert level == "error" and message.startswith("elelem: MCP server 'broken' could not start: ")
    assert message.endswith("its stderr ends:\ntool_server: cannot start, the database is missing")
    status = {s["name"]: s for s in (await folder.mcp_status())["servers"]}
    assert status["broken"]["state"] == "failed" and status["broken"]["error"].startswith("could not start: ")
    assert status["t"] == {
        "name": "t", "transport": "stdio", "state": "ready", "error": None,
        "tools": ["add", "chatter", "crash", "documents", "echo", "fail", "flood", "garbage", "grow", "hang", "header", "miscount",
                  "picture", "pid", "query", "refuse"],
        "leftOut": ["dotted.name"],  # a name no model API accepts
    }
    write_script(project, [[{"type": "saying", "text": "ok"}]])
    await folder.turn("again")
    assert len(frontend.messages) == 1  # said once, not at every turn


NOT_MCP = "import os, time; open(os.environ['PID_FILE'], 'w').write(str(os.getpid())); print('hello'); time.sleep(60)"


@pytest.mark.parametrize(
    ("config", "error"),
    [
        ({"command": "/nonexistent/mcp-server"}, "could not start: No such file or directory: /nonexistent/mcp-server"),
        ({"command": sys.executable, "args": ["-c", "import sys; sys.exit(4)"]}, "could not start: Connection closed"),
        ("hang", "did not start within 1s"),
        ("not mcp", "did not start within 2s"),
    ],
)
async def test_a_server_that_never_becomes_ready_is_failed_with_the_reason(project, stopped_hosts, tmp_path, config, error):
    pid_file = tmp_path / "pid"
    if config == "hang":  # it never answers the handshake
        config = tool_server(pid_file, env={"TOOL_SERVER_START": "hang"}, startTimeout=1)
    elif config == "not mcp":  # it answers with what is not JSON-RPC
        config = {"command": sys.executable, "args": ["-c", NOT_MCP], "env": {"PID_FILE": str(pid_file)}, "startTimeout": 2}
    host, frontend, folder = host_for(project, {"s": config}, [call("s__echo", text="x"), SAY_RESULT])
    stopped_hosts.append(host)
    result = await folder.turn("go")
    assert answer(result) == {"ok": False, "error": f'MCP server "s" is not available: {error}'}
    assert frontend.messages[0][1].startswith(f"elelem: MCP server 's' {error}")
    assert len(frontend.messages) == 1
    if pid_file.exists():  # the process that never became ready is gone
        pid = int(pid_file.read_text().split()[-1])
        await wait_until(lambda: not alive(pid), "the server that did not start to be stopped")


async def test_no_server_starts_before_a_turn_needs_it(project, stopped_hosts):
    host, frontend, folder = host_for(project, {"t": tool_server()}, [])
    stopped_hosts.append(host)
    await host.prepare()
    assert (await folder.mcp_status())["servers"] == [
        {"name": "t", "transport": "stdio", "state": "stopped", "tools": [], "error": None}
    ]
    assert [t for t in host.tools()["tools"] if "server" in t] == []


@pytest.mark.parametrize(
    ("settings", "answers", "asked", "outcomes"),
    [
        ({"mcp": "ask"}, [ALLOW_ONCE, ALLOW_ONCE], 2, [True, True]),
        ({"mcp": "ask"}, [ALLOW_SESSION, ALLOW_ONCE], 2, [True, True]),  # the session allowance is per tool
        ({"mcp": "ask"}, [DENY, None], 2, [False, False]),
        ({"mcp": "ask", "execute": "deny"}, [ALLOW_ONCE, DENY], 2, [True, False]),  # execute: deny is not MCP's
        ({"mcp": "deny"}, [], 0, [False, False]),
        ({"mcp": "deny", "allowMcpTools": ["t"]}, [], 0, [True, True]),
        ({"mcp": "ask", "allowMcpTools": ["t__echo"]}, [DENY], 1, [True, False]),
    ],
)
async def test_calling_an_mcp_tool_asks_the_person_unless_a_setting_decides(
    project, stopped_hosts, settings, answers, asked, outcomes
):
    script = [call("t__echo", text="one"), call("t__add", "2", a=1, b=2), SAY_RESULT]
    host, frontend, folder = host_for(project, {"t": tool_server()}, script, **settings)
    stopped_hosts.append(host)
    frontend.answers = list(answers)
    await folder.turn("go")
    assert [r["ok"] for r in results(frontend)] == outcomes
    assert len(frontend.questions) == asked
    echo, add = 'elelem wants to call echo {"text": "one"} (MCP server t)', 'elelem wants to call add {"a": 1, "b": 2} (MCP server t)'
    assert frontend.questions == {2: [echo, add], 1: [add if "allowMcpTools" in settings else echo], 0: []}[asked]
    denied = [r["error"] for r in results(frontend) if not r["ok"]]
    reasons = {"deny": "denied by the elelem.mcp setting (and not allowed by elelem.allowMcpTools)"}
    for error in denied:
        assert error.startswith("not allowed to call t__")
        assert error.endswith(reasons.get(settings["mcp"], "the person denied it") if None not in answers
                              else ("the person denied it", "the prompt was dismissed"))


async def test_allow_for_this_session_is_remembered_for_that_tool(project, stopped_hosts):
    script = [call("t__echo", text="one"), call("t__echo", "2", text="two"), call("t__add", "3", a=1, b=2), SAY_RESULT]
    host, frontend, folder = host_for(project, {"t": tool_server()}, script, mcp="ask")
    stopped_hosts.append(host)
    frontend.answers = [ALLOW_SESSION, DENY]
    await folder.turn("go")
    assert [r["ok"] for r in results(frontend)] == [True, True, False]
    assert frontend.questions == [
        'elelem wants to call echo {"text": "one"} (MCP server t)',
        'elelem wants to call add {"a": 1, "b": 2} (MCP server t)',
    ]


async def test_the_question_shows_the_server_the_tool_and_every_argument(project, stopped_hosts):
    script = [call("t__query", path="app.db", sql="DROP TABLE users"), call("t__echo", "2", text="long " * 100), SAY_RESULT]
    host, frontend, folder = host_for(project, {"t": tool_server()}, script, mcp="ask")
    stopped_hosts.append(host)
    frontend.answers = [ALLOW_ONCE, ALLOW_ONCE]
    await folder.turn("go")
    query, echo = frontend.questions
    assert query == 'elelem wants to call query {"path": "app.db", "sql": "DROP TABLE users"} (MCP server t)'
    assert echo == f'elelem wants to call echo {json.dumps({"text": "long " * 100})[:300]}… (MCP server t)'


async def test_an_untrusted_folder_starts_no_server_and_asks_about_every_call(project, home, stopped_hosts, tmp_path):
    add_plugin(home, "scripted")  # the person's own plugin: an untrusted folder's never load
    log = tmp_path / "calls.log"
    settings = {"trusted": False, "mcp": "allow", "allowMcpTools": ["t"]}
    host, frontend, folder = host_for(project, {"t": tool_server(log)}, [call("t__echo", text="x"), SAY_RESULT], **settings)
    stopped_hosts.append(host)
    result = await folder.turn("go")
    assert json.loads(result["reply"])["error"].startswith('unknown tool: "t__echo"')
    [(level, message)] = frontend.messages
    assert level == "warning" and "mcpServers" in message and "allowMcpTools" in message and "mcp 'allow'" in message
    assert folder.settings.mcp == "ask" and folder.mcp.connections == {}
    assert read_log(log) == []


async def test_folder_removal_reload_and_shutdown_leave_no_server_process(project, stopped_hosts):
    host, frontend, folder = host_for(project, {"t": tool_server()}, [call("t__pid"), SAY_RESULT])
    stopped_hosts.append(host)
    first = int(answer(await folder.turn("pid"))["content"])
    assert alive(first)
    host.reload()
    await wait_until(lambda: not alive(first), "the reloaded server to stop", timeout=15)
    second = int(answer(await folder.turn("pid"))["content"])
    assert second != first and alive(second)
    host.sync_folders({})  # the folder left the workspace
    await wait_until(lambda: not alive(second), "the removed folder's server to stop", timeout=15)

    other, _, folder = host_for(project, {"t": tool_server()}, [call("t__pid"), SAY_RESULT])
    third = int(answer(await folder.turn("pid"))["content"])
    await other.shutdown()
    assert not alive(third)  # shutdown waits until the process is gone


async def test_changed_settings_restart_a_server_and_removed_ones_stop_it(project, stopped_hosts):
    host, frontend, folder = host_for(project, {"t": tool_server()}, [call("t__pid"), SAY_RESULT])
    stopped_hosts.append(host)
    first = int(answer(await folder.turn("pid"))["content"])
    raw = frontend.settings_by_folder[project.as_uri()]
    raw["mcpServers"] = {"t": tool_server(env={"CHANGED": "1"})}
    write_script(project, [call("t__pid", "2"), SAY_RESULT])
    second = int(answer(await folder.turn("pid"))["content"])
    assert second != first
    await wait_until(lambda: not alive(first), "the server with the old settings to stop", timeout=15)
    raw["mcpServers"] = {}
    await host.settings_changed()  # the editor says settings changed: no turn needed to stop it
    await wait_until(lambda: not alive(second), "the server no longer configured to stop", timeout=15)
    assert folder.mcp.connections == {}


async def test_a_front_end_attaches_servers_from_its_protocol(project, stopped_hosts):
    host, frontend, folder = host_for(project, {}, [call("acp__echo", text="attached"), SAY_RESULT])
    stopped_hosts.append(host)
    with pytest.raises(BadRequest, match=r"^mcpServers: mcpServers\.acp\.stdio\.command: Field required$"):
        folder.attach_mcp_servers({"acp": {"args": []}})
    with pytest.raises(BadRequest, match=r"^mcpServers: mcpServers\.bad name\.\[key\]"):
        folder.attach_mcp_servers({"bad name": tool_server()})
    folder.attach_mcp_servers({"acp": tool_server()})
    assert answer(await folder.turn("go"))["content"] == "attached"


@pytest.mark.parametrize("handshake", ["2026-07-28", "legacy"])
async def test_a_tool_the_server_adds_while_it_runs_is_offered_on_the_next_request(
    project, stopped_hosts, monkeypatch, handshake
):
    """A changed tool list (on the listen stream, or notifications/tools/list_changed from a server
    on the older initialize handshake) is listed again: the next request offers the new tool."""
    if handshake == "legacy":
        import mcp

        monkeypatch.setattr(mcp, "Client", functools.partial(mcp.Client, mode="legacy"))
    script = [call("t__grow", name="shout"), SAY_RESULT, call("t__shout"), SAY_RESULT]
    host, _, folder = host_for(project, {"t": tool_server()}, script)
    stopped_hosts.append(host)
    await folder.refresh_settings()
    offered = {d["function"]["name"] for d in await (await folder.ready()).toolbox.offered()}
    assert "t__grow" in offered and "t__shout" not in offered

    assert answer(await folder.turn("grow")) == {"ok": True, "content": "added shout", "structured": {"result": "added shout"}}
    await wait_until(lambda: "shout" in folder.mcp.connections["t"].tools, "the changed list to be read", timeout=10)
    offered = {d["function"]["name"] for d in await (await folder.ready()).toolbox.offered()}
    assert "t__shout" in offered and "t__grow" in offered
    assert answer(await folder.turn("shout"))["content"] == "grown"
