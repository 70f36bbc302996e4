"""A folder agent when something around it fails, in-process: no provider to count or compact
with, images that cannot be kept, a plain client's transcript that cannot be written. Each time
the person gets an answer that says why, and the conversation goes on."""

from __future__ import annotations

import base64
import json
import logging
from pathlib import Path

import pytest

from scaffold import add_plugin, png, write_script

from elelem_lsp.agent.private_files import state_dir
from elelem_lsp.host.conversations import ConversationStore
from elelem_lsp.host.frontend import Refused
from elelem_lsp.host.host import Host

from .memory_frontend import MemoryFrontend

SCRIPTED = {"workspacePlugins": True, "provider": "scripted"}


def agent_for(root: Path, settings: dict, **frontend_options):
    frontend = MemoryFrontend(settings_by_folder={root.as_uri(): settings}, **frontend_options)
    host = Host(frontend)
    host.sync_folders({root.as_uri(): root})
    return host.agents[root.as_uri()], frontend


async def test_without_a_provider_the_context_is_the_empty_history_and_compacting_is_refused(project):
    agent, _ = agent_for(project, {"provider": "nosuch"})
    context = await agent.context()
    # 32,000 tokens: the budget for a model whose window is not known (docs/settings.md)
    assert (context["messages"], context["tokens"], context["budget"]) == ([], 0, 32_000)
    assert context["usage"]["contextTokens"] == 0
    with pytest.raises(Refused, match='unknown provider: "nosuch"'):
        await agent.compact()


async def test_images_that_cannot_be_kept_go_as_they_are_and_the_person_is_told_once(project, tmp_path):
    add_plugin(project, "scripted")
    write_script(project, [[{"type": "record"}, {"type": "saying", "text": "seen"}]] * 2)
    agent, frontend = agent_for(project, {**SCRIPTED, "provider": "scripted-images"})
    folder = ConversationStore(project).directory
    folder.mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    (folder / "images").symlink_to(tmp_path / "elsewhere")  # planted: images are not kept through it
    given = {"mimeType": "image/png", "data": base64.b64encode(png()).decode()}
    for prompt in ("this?", "and this?"):
        assert (await agent.turn(prompt, images=[given]))["reply"] == "seen"
    fetches = [json.loads(line) for line in (project / ".agents/fetches.jsonl").read_text().splitlines()]
    assert [fetch["messages"][-1]["images"] for fetch in fetches] == [[given], [given]]
    assert list((tmp_path / "elsewhere").iterdir()) == []
    [(level, message)] = [m for m in frontend.messages if "symlink" in m[1]]
    assert level == "warning"


async def test_a_plain_clients_transcript_that_cannot_be_written_leaves_the_answer(project, caplog):
    add_plugin(project, "scripted")
    write_script(project, [[{"type": "saying", "text": "the answer"}]])
    agent, frontend = agent_for(project, SCRIPTED, is_plain=True, shows_files=True)
    state_dir().mkdir(parents=True, exist_ok=True)
    (state_dir() / "transcripts").write_text("a file where the folder goes")
    with caplog.at_level(logging.WARNING):
        assert (await agent.turn("hi"))["reply"] == "the answer"
    assert ("info", "elelem: the answer") in frontend.messages and frontend.shown == []
    assert "could not write the transcript" in caplog.text


async def test_a_checkpoint_that_fails_after_the_turn_keeps_its_answer_and_record(project, monkeypatch, caplog):
    add_plugin(project, "scripted")
    write_script(project, [[{"type": "saying", "text": "all done"}]])
    agent, _ = agent_for(project, SCRIPTED)

    async def broken_end(checkpoint):
        raise RuntimeError("the checkpoint store broke")

    monkeypatch.setattr(agent.turn_checkpoints, "end", broken_end)
    with caplog.at_level(logging.ERROR):
        answer = await agent.turn("finish it")
    assert (answer["reply"], answer["checkpoint"]) == ("all done", None)
    assert "the checkpoint store broke" in caplog.text
    assert [message["content"] for message in agent.session.history] == ["finish it", "all done"]


async def test_a_count_that_fails_before_the_turn_leaves_compaction_out_and_the_turn_goes_on(project, monkeypatch, caplog):
    add_plugin(project, "scripted")
    write_script(project, [[{"type": "saying", "text": "answered"}]])
    agent, _ = agent_for(project, {**SCRIPTED, "compaction": "summarize"})
    await agent.ready()
    calls = []

    async def broken_estimate(prompt=None):
        calls.append(prompt)
        raise RuntimeError("the counter broke")

    monkeypatch.setattr(agent.session, "estimate", broken_estimate)
    with caplog.at_level(logging.ERROR):
        answer = await agent.turn("go on")
    assert answer["reply"] == "answered" and calls[0] == "go on"
    assert "could not count the conversation" in caplog.text
