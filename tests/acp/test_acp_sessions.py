"""ACP sessions: cancellation, bad requests, prompts with resources, provider and model, plugin trust."""

from __future__ import annotations

import asyncio
import json
import os
import re
import statistics
import time
from pathlib import Path

import pytest
from acp import RequestError, resource_block, embedded_text_resource, resource_link_block, text_block, image_block

from scaffold import write_user_settings
from elelem_lsp.host.conversations import conversations_dir
from scaffold import wait_until, write_script

SLOW = [[{"type": "saying", "text": "starting"}, {"type": "sleep", "seconds": 30}, {"type": "saying", "text": "never"}]]
CANCELS = 20
CANCEL_MEDIAN = 0.05  # seconds, from session/cancel sent to the prompt's answer; the bound


async def test_cancel_ends_the_turn_cancelled_within_50ms_median(scripted_project: Path, start_agent):
    write_script(scripted_project, SLOW * CANCELS)  # each cancelled turn takes one fetch of the script
    agent = await start_agent(scripted_project)
    times = []
    for _ in range(CANCELS):
        seen = len(agent.client.updates)
        prompt = asyncio.ensure_future(agent.prompt("go"))
        await wait_until(lambda: "starting" in agent.client.text(since=seen), "the first chunk")
        sent = time.perf_counter()
        await agent.conn.cancel(session_id=agent.session_id)
        answer = await asyncio.wait_for(prompt, 10)
        times.append(time.perf_counter() - sent)
        assert answer.stop_reason == "cancelled"
        assert "never" not in agent.client.text(since=seen)
    # The median, not the worst: two shared cores may stall any single one.
    assert statistics.median(times) < CANCEL_MEDIAN, f"cancel took {sorted(times)}"
    write_script(scripted_project, [[{"type": "saying", "text": "still here"}]])
    assert (await agent.prompt("again")).stop_reason == "end_turn"  # the session goes on


@pytest.mark.parametrize("terminal", [True, False], ids=["client-terminal", "own-subprocess"])
async def test_cancel_kills_the_command_it_started(scripted_project: Path, home: Path, start_agent, terminal):
    # Without the sandbox: the pid is the host's (in the sandbox, its PID namespace has its own numbers).
    write_user_settings(home, {"provider": "scripted", "execute": "allow", "sandbox": "off"})
    write_script(scripted_project, [[{"type": "doing", "id": "x1", "name": "execute",
                                      "arguments": {"command": "echo $$ > pid; sleep 30; touch finished"}}]])
    agent = await start_agent(scripted_project, terminal=terminal)
    prompt = asyncio.ensure_future(agent.prompt("run"))
    pid_file = scripted_project / "pid"
    await wait_until(lambda: pid_file.exists() and pid_file.read_text().strip(), "the command to start")
    pid = int(pid_file.read_text())
    await agent.conn.cancel(session_id=agent.session_id)
    assert (await asyncio.wait_for(prompt, 10)).stop_reason == "cancelled"

    def gone() -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"  # a zombie waits for its reaper only

    await wait_until(gone, "the command to be killed")
    if terminal:
        [term] = agent.client.terminals.values()
        await wait_until(lambda: term.killed and term.released, "terminal/kill and terminal/release")
    assert not (scripted_project / "finished").exists()


async def test_bad_requests_get_clear_errors_and_the_agent_keeps_serving(scripted_project: Path, start_agent):
    agent = await start_agent(scripted_project)
    with pytest.raises(RequestError) as unknown:
        await agent.prompt("hi", session_id="no-such-session")
    assert unknown.value.code == -32602 and "sessionId" in str(unknown.value)
    with pytest.raises(RequestError) as malformed:
        await agent.raw("session/prompt", {"sessionId": agent.session_id, "prompt": "not a list"})
    assert malformed.value.code == -32602 and "prompt" in str(malformed.value.data)
    with pytest.raises(RequestError) as missing:
        await agent.raw("session/new", {"mcpServers": []})
    assert missing.value.code == -32602 and "cwd" in str(missing.value.data)
    for cwd, words in (("relative/dir", "absolute"), (str(scripted_project / "README.md"), "not a folder")):
        with pytest.raises(RequestError) as bad_cwd:
            await agent.conn.new_session(cwd=cwd, mcp_servers=[])
        assert bad_cwd.value.code == -32602 and "cwd" in str(bad_cwd.value) and words in str(bad_cwd.value)
    with pytest.raises(RequestError) as image:
        await agent.prompt([text_block("look"), image_block("AAAA", "image/png")])
    assert image.value.code == -32602 and "prompt[1]" in str(image.value) and "image" in str(image.value)
    with pytest.raises(RequestError) as empty:
        await agent.prompt("   ")
    assert "prompt" in str(empty.value)
    with pytest.raises(RequestError) as method:
        await agent.raw("session/teleport", {})
    assert method.value.code == -32601
    with pytest.raises(RequestError) as option:
        await agent.conn.set_config_option(config_id="colour", session_id=agent.session_id, value="red")
    assert option.value.code == -32602 and "configId" in str(option.value)
    write_script(scripted_project, [[{"type": "saying", "text": "fine"}]])
    assert (await agent.prompt("hello")).stop_reason == "end_turn"
    assert agent.client.text() == "fine"


async def test_a_busy_session_refuses_a_second_prompt(scripted_project: Path, start_agent):
    write_script(scripted_project, SLOW)
    agent = await start_agent(scripted_project)
    first = asyncio.ensure_future(agent.prompt("go"))
    await wait_until(lambda: "starting" in agent.client.text(), "the first turn to start")
    with pytest.raises(RequestError) as busy:
        await agent.prompt("and this")
    assert "already running" in str(busy.value) and "elelem.cancel" not in str(busy.value)  # no LSP command names
    await agent.conn.cancel(session_id=agent.session_id)
    assert (await first).stop_reason == "cancelled"


ECHO_PROMPT = [[{"type": "say_tool_result"}]]  # the first fetch's last message is the prompt


async def test_resource_links_and_embedded_resources_become_the_prompt(scripted_project: Path, tmp_path: Path, start_agent):
    (scripted_project / "src").mkdir()
    (scripted_project / "src" / "app.py").write_text("def main():\n    return '```'\n")
    outside = tmp_path / "secret.txt"
    outside.write_text("do not attach")
    write_script(scripted_project, ECHO_PROMPT)
    agent = await start_agent(scripted_project, fs=False)
    await agent.prompt([
        text_block("explain"),
        resource_link_block("app.py", (scripted_project / "src" / "app.py").as_uri()),
        resource_link_block("secret.txt", outside.as_uri()),
        resource_link_block("docs", "https://example.com/docs"),
        resource_block(embedded_text_resource((scripted_project / "sel.py").as_uri(), "x = 1  # the selection")),
    ])
    prompt = agent.client.text()
    assert prompt.startswith("explain")
    assert "src/app.py:\n````\ndef main():\n    return '```'\n````" in prompt  # a fence longer than the file's
    assert "do not attach" not in prompt and f"[secret.txt]({outside.as_uri()})" in prompt
    assert "[docs](https://example.com/docs)" in prompt
    assert "sel.py:\n```\nx = 1  # the selection\n```" in prompt
    # stored apart: the words (links outside the workspace among them) and the attached files
    [stored] = [json.loads(line) for line in next(conversations_dir().rglob("*.jsonl")).read_text().splitlines()]
    assert stored["prompt"] == f"explain\n\n[secret.txt]({outside.as_uri()})\n\n[docs](https://example.com/docs)"
    assert stored["context"].startswith("src/app.py:\n````") and stored["context"].endswith("x = 1  # the selection\n```")


async def test_provider_and_model_are_config_options_and_slash_commands(scripted_project: Path, start_agent):
    agent = await start_agent(scripted_project)
    provider, model = agent.new.config_options
    assert (provider.id, provider.current_value) == ("provider", "scripted")
    assert {"scripted", "stub", "openai"} <= {o.value for o in provider.options}
    assert (model.id, model.category, model.current_value) == ("model", "model", "default")
    await wait_until(lambda: agent.client.of("available_commands_update"), "the slash commands")
    [commands] = agent.client.of("available_commands_update")
    assert [c.name for c in commands.available_commands] == ["provider", "model", "reset", "compact", "rewind", "tools", "context"]

    changed = await agent.conn.set_config_option(config_id="provider", session_id=agent.session_id, value="stub")
    assert changed.config_options[0].current_value == "stub"
    await agent.prompt("hi")
    assert "done." in agent.client.text()  # the stub's reply

    with pytest.raises(RequestError) as unknown:
        await agent.conn.set_config_option(config_id="provider", session_id=agent.session_id, value="nonesuch")
    assert "nonesuch" in str(unknown.value)

    seen = len(agent.client.updates)
    await agent.prompt("/provider scripted tiny-1")
    assert "provider: scripted (model tiny-1)" in agent.client.text(since=seen)
    [update] = agent.client.of("config_option_update")[-1:]
    assert [o.current_value for o in update.config_options] == ["scripted", "tiny-1"]
    selection = resource_block(embedded_text_resource((scripted_project / "a.py").as_uri(), "x = 1"))
    await agent.prompt([text_block("/model tiny-2"), selection])  # the command is the words, not the selection
    [update] = agent.client.of("config_option_update")[-1:]
    assert update.config_options[1].current_value == "tiny-2"
    seen = len(agent.client.updates)
    await agent.prompt("/tools")
    assert agent.client.text(since=seen) == "tools: read, write, edit, execute, list, grep, plan"
    seen = len(agent.client.updates)
    await agent.prompt("/context")
    assert re.fullmatch(
        r"full prompt: fixed part [\d,]+ tokens, 1 earlier turns [\d,]+ tokens, room left [\d,]+ of 32,000",
        agent.client.text(since=seen),
    )
    seen = len(agent.client.updates)
    await agent.prompt("/provider")
    assert "* scripted" in agent.client.text(since=seen)
    seen = len(agent.client.updates)
    await agent.prompt("/provider nonesuch")
    assert "/provider:" in agent.client.text(since=seen) and "nonesuch" in agent.client.text(since=seen)


async def test_the_model_option_offers_the_providers_known_models(scripted_project: Path, home: Path, start_agent):
    write_user_settings(home, {"provider": "openai"})
    agent = await start_agent(scripted_project)
    model = agent.new.config_options[1]
    assert model.current_value == "default"
    assert {"default", "gpt-4.1", "gpt-4o", "o3"} <= {o.value for o in model.options}
    changed = await agent.conn.set_config_option(config_id="provider", session_id=agent.session_id, value="groq")
    assert "llama-3.3-70b-versatile" in {o.value for o in changed.config_options[1].options}


async def test_max_steps_ends_with_max_turn_requests_and_a_provider_error_goes_on(scripted_project: Path, home: Path, start_agent):
    write_user_settings(home, {"provider": "scripted", "maxSteps": 2})
    call = {"type": "doing", "id": "", "name": "list", "arguments": {}}
    write_script(scripted_project, [[call], [call], [call]])
    agent = await start_agent(scripted_project)
    assert (await agent.prompt("loop")).stop_reason == "max_turn_requests"
    assert "maxSteps" in agent.client.text()
    write_script(scripted_project, [[{"type": "raise", "message": "the model fell over"}]])
    seen = len(agent.client.updates)
    assert (await agent.prompt("again")).stop_reason == "end_turn"
    assert agent.client.text(since=seen) == "Error: the model fell over"
    write_script(scripted_project, [[{"type": "saying", "text": "Half a"}, {"type": "raise", "message": "cut off"}]])
    seen = len(agent.client.updates)
    await agent.prompt("once more")
    assert agent.client.text(since=seen) == "Half a\n\nError: cut off"  # the error is not glued to the reply
    write_script(scripted_project, [[{"type": "saying", "text": "recovered"}]])
    await agent.prompt("and again")
    assert agent.client.text().endswith("recovered")


async def test_workspace_plugins_are_asked_about_through_request_permission(scripted_project: Path, start_agent):
    write_script(scripted_project, [[{"type": "saying", "text": "scripted speaking"}]])
    agent = await start_agent(scripted_project, args=())
    agent.client.permission_answers = ["allow_always"]
    await agent.prompt("hi")
    [(call, options)] = agent.client.permission_requests
    assert ".agents/plugins" in call.title and "scripted.py" in call.title
    assert agent.client.text().endswith("scripted speaking")
    card = agent.client.tool_updates(call.tool_call_id)
    assert [u.status for u in card] == ["pending", "completed"]  # the question's card ends once answered

    again = await start_agent(scripted_project, args=())  # "always" was remembered for these files
    await again.prompt("hi")
    assert again.client.permission_requests == []
    assert again.client.text().endswith("scripted speaking")


async def test_cancel_while_the_plugins_question_waits_ends_the_prompt_and_the_question_is_asked_again(
    scripted_project: Path, home: Path, start_agent
):
    write_user_settings(home, {"provider": "stub"})
    agent = await start_agent(scripted_project, args=())
    assert "scripted" not in {o.value for o in agent.new.config_options[0].options}  # the plugins are not loaded yet
    agent.client.permission_answers = ["hold", "allow_once"]
    prompt = asyncio.ensure_future(agent.prompt("hi"))
    await wait_until(lambda: agent.client.held is not None, "the plugins question")
    await agent.conn.cancel(session_id=agent.session_id)
    assert (await asyncio.wait_for(prompt, 10)).stop_reason == "cancelled"  # the question still waits
    agent.client.held.set_result("cancelled")  # as a client answers its questions once it cancelled the turn

    assert (await agent.prompt("hi again")).stop_reason == "end_turn"
    assert len(agent.client.permission_requests) == 2  # a cancelled question was no refusal
    assert "done." in agent.client.text()
    [update] = agent.client.of("config_option_update")  # the plugin's provider can be picked now
    assert "scripted" in {o.value for o in update.config_options[0].options}
    first, second = (call.tool_call_id for call, _ in agent.client.permission_requests)
    assert first != second
    assert [u.status for u in agent.client.tool_updates(first)] == ["pending", "failed"]


async def test_refused_plugins_do_not_load(scripted_project: Path, start_agent):
    agent = await start_agent(scripted_project, args=())
    agent.client.permission_answers = ["reject_once"]
    await agent.prompt("hi")
    assert len(agent.client.permission_requests) == 1
    assert 'unknown provider: "scripted"' in agent.client.text()
    await agent.prompt("hi again")
    assert len(agent.client.permission_requests) == 1  # asked once per session


async def test_only_protocol_messages_reach_stdout(scripted_project: Path, start_agent):
    noisy = scripted_project / ".agents" / "plugins" / "noisy.py"
    noisy.write_text(
        "import os, elelem_lsp\n"
        "class Noisy:\n"
        "    def fetch(self, messages, tools, emit):\n"
        "        print('a stray print'); os.system('echo a stray child')\n"
        "        emit({'type': 'saying', 'text': 'quiet reply'})\n"
        "@elelem_lsp.configure\n"
        "def setup(config):\n"
        "    config.provider('noisy', lambda **_: Noisy())\n"
    )
    agent = await start_agent(scripted_project)
    await agent.conn.set_config_option(config_id="provider", session_id=agent.session_id, value="noisy")
    assert (await agent.prompt("hi")).stop_reason == "end_turn"
    assert agent.client.text() == "quiet reply"
    await wait_until(lambda: "a stray child" in agent.log(), "the child's output on stderr")
    assert "a stray print" in agent.log()
