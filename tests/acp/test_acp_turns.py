"""``elelem-lsp acp`` end to end: a real subprocess, the package's client-side connection, the scripted provider."""

from __future__ import annotations

from pathlib import Path

from acp import PROTOCOL_VERSION

from scaffold import write_script


async def test_initialize_says_what_the_agent_supports(scripted_project: Path, start_agent):
    agent = await start_agent(scripted_project, new_session=False)
    assert agent.init.protocol_version == PROTOCOL_VERSION
    capabilities = agent.init.agent_capabilities
    assert capabilities.load_session is True
    assert capabilities.prompt_capabilities.embedded_context is True
    assert capabilities.prompt_capabilities.image is False
    assert agent.init.agent_info.name == "elelem-lsp"
    assert [method.id for method in agent.init.auth_methods] == ["environment"]  # keys from the environment
    newer = await agent.conn.initialize(protocol_version=PROTOCOL_VERSION + 6)
    assert newer.protocol_version == PROTOCOL_VERSION  # ours, for the client to judge


async def test_a_text_turn_streams_thinking_and_the_reply(scripted_project: Path, start_agent):
    write_script(scripted_project, [[
        {"type": "thinking", "text": "reading "}, {"type": "thinking", "text": "the question"},
        {"type": "saying", "text": "Hello"}, {"type": "saying", "text": ", world"},
    ]])
    agent = await start_agent(scripted_project)
    answer = await agent.prompt("hi")
    assert answer.stop_reason == "end_turn"
    assert agent.client.text("agent_thought_chunk") == "reading the question"
    assert agent.client.text() == "Hello, world"
    kinds = [u.session_update for _, u in agent.client.updates]
    assert kinds.index("agent_thought_chunk") < kinds.index("agent_message_chunk")
