"""The human provider where people are (a pseudo-terminal, an editor's elelem/input), and a
declared ``openai-chat`` provider from settings, through the real server."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pexpect

from .fake_model_server import Reply, model_requests, openai_chunk, sse

READ_RESULT = '{"path":"README.md","total_lines":1,"lines":[1,1],"content":"1\\t# hello","ok":true}'


def test_human_answers_on_the_terminal(project):
    child = pexpect.spawn(
        sys.executable, ["-m", "elelem_lsp", "ask", "-p", "human", "what is in the readme?"],
        cwd=str(project), encoding="utf-8", timeout=30,
    )
    try:
        child.expect_exact("what is in the readme?")
        child.sendline("A heading that says hello, café.")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0, child.before
    assert "A heading that says hello, café." in child.before


def test_human_without_a_terminal_is_an_error_not_a_hang(project):
    run = subprocess.run(
        [sys.executable, "-m", "elelem_lsp", "ask", "-p", "human", "anyone?"],
        cwd=project, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
    )
    assert run.returncode == 1
    assert run.stdout == ""
    assert run.stderr.startswith("Error: ")


def spawn_human(project, command, *args):
    return pexpect.spawn(
        sys.executable, ["-m", "elelem_lsp", command, "-p", "human", *args],
        cwd=str(project), encoding="utf-8", timeout=30, env={**os.environ, "TERM": "dumb"},
    )


def test_the_question_and_the_reply_are_on_lines_of_their_own(project):
    child = spawn_human(project, "ask", "what is in the readme?")
    child.expect_exact("your reply> ")
    assert child.before.replace("\r\n", "\n").endswith("\nwhat is in the readme?\n") or child.before.replace(
        "\r\n", "\n") == "what is in the readme?\n"
    child.sendline("a heading")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert child.before.replace("\r\n", "\n") == "a heading\na heading\n"  # the typed line, then the reply


def test_ctrl_c_while_the_human_provider_waits_cancels_the_turn_at_once(project):
    child = spawn_human(project, "ask", "anyone?")
    child.expect_exact("your reply> ")
    started = time.monotonic()
    child.sendintr()
    child.expect(pexpect.EOF)
    child.close()
    assert time.monotonic() - started < 5
    assert child.exitstatus == 130
    assert "elelem: cancelled" in child.before
    assert "Traceback" not in child.before and "Error" not in child.before


def test_in_chat_ctrl_c_at_the_reply_cue_cancels_and_the_conversation_goes_on(project):
    child = spawn_human(project, "chat")
    child.expect_exact("elelem> ")
    child.sendline("first question")
    child.expect_exact("your reply> ")
    child.sendintr()
    child.expect_exact("elelem: cancelled")
    child.expect_exact("elelem> ")
    child.sendline("second question")
    child.expect_exact("your reply> ")
    child.sendline("second answer")
    child.expect_exact("elelem> ")
    assert "second answer" in child.before
    child.sendline("/context")
    child.expect_exact("elelem> ")
    assert "[user] first question" in child.before and "[assistant] second answer" in child.before
    assert "Traceback" not in child.before
    child.sendeof()
    child.expect(pexpect.EOF)


async def test_human_answers_through_elelem_input(project, start_editor):
    editor = await start_editor(project, settings={"provider": "human"})
    prompts: list[dict] = []

    @editor.client.feature("elelem/input")
    def answer(params):
        prompts.append(params)
        return {"text": "Typed in the editor: it says hello."}

    result = await editor.ask("what is in the readme?")
    assert result["reply"] == "Typed in the editor: it says hello."
    assert result["error"] is None and result["provider"] == "human"
    assert [getattr(p, "prompt", None) or p.get("prompt") for p in prompts] == ["what is in the readme?"]
    assert {"type": "saying", "text": "Typed in the editor: it says hello."} in editor.events()


async def test_human_in_an_editor_without_elelem_input_gets_a_clear_error(project, start_editor):
    editor = await start_editor(project, settings={"provider": "human"})
    result = await editor.ask("anyone there?")
    assert result["reply"].startswith("Error: ")
    assert "elelem/input" in result["reply"]


async def test_declared_openai_chat_provider_round_trip(project, start_editor, fake_server, monkeypatch):
    monkeypatch.setenv("LOCAL_MODEL_KEY", "sk-local-123")
    declared = {
        "name": "local", "type": "openai-chat", "model": "deepseek-llm-7b-chat",
        "endpoint": f"{fake_server.url}/v1/chat/completions", "apiKeyEnv": "LOCAL_MODEL_KEY", "maxTokens": 512,
    }
    editor = await start_editor(project, settings={"provider": "local", "providers": [declared]},
                                env={"LOCAL_MODEL_KEY": "sk-local-123"})
    result = await editor.ask("what is in the readme?")
    assert result["reply"] == f"the tool said: {READ_RESULT}", result
    first, second = model_requests(fake_server.requests)  # a server of one's own is also asked its window
    assert first.headers["authorization"] == "Bearer sk-local-123"
    assert (first.json["model"], first.json["temperature"], first.json["max_tokens"]) == ("deepseek-llm-7b-chat", 0.7, 512)
    assert second.json["messages"][-1] == {"role": "tool", "tool_call_id": "call_Hx4Ej0", "content": READ_RESULT}
    doing = [e for e in editor.events() if e["type"] == "doing"]
    assert doing == [{"type": "doing", "id": "call_Hx4Ej0", "name": "read", "arguments": {"path": "README.md"}, "title": "Read README.md"}]


async def test_declared_provider_of_unknown_type_names_the_supported_ones(project, start_editor):
    declared = {"name": "odd", "type": "claude-chat", "model": "m", "endpoint": "http://127.0.0.1:9/x"}
    editor = await start_editor(project, settings={"provider": "odd", "providers": [declared]})
    result = await editor.ask("hi")
    assert "unknown provider type: \"claude-chat\". Supported: openai-chat" in result["reply"]


async def test_every_remote_provider_and_preset_is_listed(project, start_editor):
    editor = await start_editor(project, settings={"provider": "stub"})
    listed = await editor.command("elelem.providers", {})
    available = set(listed["available"])
    assert {"openai", "anthropic", "vertex", "ollama", "openai-chat", "human", "groq", "openrouter", "mistral",
            "deepseek", "together", "fireworks", "cerebras", "gemini", "lmstudio", "llamacpp", "vllm"} <= available


async def test_a_dropped_stream_ends_the_turn_and_the_session_goes_on(project, start_editor, fake_server):
    fake_server.queue(Reply([sse(openai_chunk({"content": "half an ans"}))], drop=True))
    env = {"OPENAI_BASE_URL": f"{fake_server.url}/v1", "OPENAI_API_KEY": "sk-test-key"}
    editor = await start_editor(project, settings={"provider": "openai"}, env=env)
    broken = await editor.ask("what is in the readme?", token="t1")
    assert broken["reply"].startswith(f"Error: the connection to {fake_server.url} dropped mid-answer")
    assert broken["error"]
    assert editor.progress["t1"][-1]["message"].startswith("Error: the connection")
    again = await editor.ask("what is in the readme?", token="t2")
    assert again["reply"] == f"the tool said: {READ_RESULT}" and not again["error"]
