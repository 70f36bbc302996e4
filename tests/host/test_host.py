"""The host and its folder agents with an in-memory front end: folders, settings resolution and
its messages, the provider choice and its notice, turns (one at a time, cancellable, the face
told the progress token that names one), and the transcript a plain client is shown."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from scaffold import add_plugin, write_script

from elelem_lsp.host import stored
from elelem_lsp.host.frontend import BadRequest, Refused
from elelem_lsp.host.host import Host

from .memory_frontend import MemoryFrontend

SCRIPTED = {"workspacePlugins": True, "provider": "scripted"}


def host_for(root: Path, settings=None, **frontend_options) -> tuple[Host, MemoryFrontend]:
    frontend = MemoryFrontend(settings_by_folder={root.as_uri(): settings}, **frontend_options)
    host = Host(frontend)
    host.sync_folders({root.as_uri(): root})
    return host, frontend


def test_a_path_belongs_to_the_innermost_folder(tmp_path):
    outer, inner = tmp_path / "outer", tmp_path / "outer" / "inner"
    inner.mkdir(parents=True)
    host = Host(MemoryFrontend())
    host.sync_folders({outer.as_uri(): outer, inner.as_uri(): inner})
    assert host.agent_for(inner / "a.py").root == inner
    assert host.agent_for(outer / "a.py").root == outer
    assert host.agent_for(outer).root == outer
    assert host.agent_for(None).root == outer
    with pytest.raises(BadRequest, match="^uri: file:///elsewhere is not inside a workspace folder$"):
        host.agent_for(tmp_path / "elsewhere.py", "file:///elsewhere")


async def test_a_folder_that_leaves_has_its_turn_cancelled(project):
    add_plugin(project, "scripted")
    write_script(project, [[{"type": "sleep", "seconds": 30}]])
    host, _ = host_for(project, SCRIPTED)
    folder = host.agents[project.as_uri()]
    turn = asyncio.ensure_future(folder.turn("wait"))
    while folder.running is None:
        await asyncio.sleep(0.01)
    host.sync_folders({})
    result = await asyncio.wait_for(turn, 10)
    assert result["cancelled"] is True and host.agents == {}


@pytest.mark.parametrize(
    ("raw", "warning"),
    [
        ({"maxSteps": 0}, "invalid value for elelem.maxSteps: 0; using 50"),
        ({"execute": "sometimes"}, "invalid value for elelem.execute: 'sometimes'; using 'ask'"),
        ({"contextTokens": 10}, "invalid value for elelem.contextTokens: 10; using None"),
        ({"compaction": "squash"}, "invalid value for elelem.compaction: 'squash'; using 'drop'"),
        ({"history": "sometimes"}, "invalid value for elelem.history: 'sometimes'; using True"),
        ("not an object", "elelem settings must be an object, got str; using defaults"),
        ({"trusted": False, "execute": "allow", "allowCommands": ["rm"]},
         "is not trusted, so these settings are ignored: execute 'allow' (using 'ask'), allowCommands"),
    ],
)
async def test_bad_or_untrusted_settings_are_reported_once_and_defaults_used(project, raw, warning):
    host, frontend = host_for(project, raw)
    folder = host.agents[project.as_uri()]
    for _ in range(3):
        await folder.refresh_settings()
    [(level, text)] = frontend.messages
    assert level == "warning" and warning in text
    assert folder.settings.execute == "ask" and folder.settings.max_steps == 50


async def test_settings_are_fetched_each_time_unless_the_front_end_keeps_them(project):
    host, frontend = host_for(project, {"maxSteps": 5})
    folder = host.agents[project.as_uri()]
    await folder.refresh_settings()
    await folder.refresh_settings()
    assert frontend.settings_asked == 2
    frontend.keeping = True
    frontend.settings_by_folder[project.as_uri()] = {"maxSteps": 9}
    await folder.refresh_settings()
    assert folder.settings.max_steps == 5 and frontend.settings_asked == 2
    await host.settings_changed()
    assert folder.settings.max_steps == 9 and frontend.settings_asked == 3


async def test_the_environments_pick_is_told_once_with_the_front_ends_hint(project):
    host, frontend = host_for(project)
    folder = host.agents[project.as_uri()]
    first = await folder.turn("hi")
    second = await folder.turn("again")
    assert first["provider"] == second["provider"] == "stub" and first["error"] is None
    [(level, text)] = frontend.messages
    assert level == "info" and "'stub' (a demo that needs no model)" in text
    assert text.endswith(frontend.provider_hint)


async def test_a_turn_streams_its_events_and_ends_done(project):
    add_plugin(project, "scripted")
    write_script(project, [[{"type": "saying", "text": "Reading."},
                            {"type": "doing", "id": "r", "name": "read", "arguments": {"path": "README.md"}}],
                           [{"type": "saying", "text": "It says hello."}]])
    host, frontend = host_for(project, SCRIPTED)
    result = await host.agents[project.as_uri()].turn("what is in it?", token="t1")
    assert result == {"reply": "It says hello.", "provider": "scripted", "model": None, "steps": 2,
                      "cancelled": False, "error": None, "stopReason": "end", "checkpoint": None,
                      "text": "done — scripted · 2 steps"}  # the footer every client ends the turn with
    [progress] = frontend.progress
    assert progress.token == "t1" and progress.ended == "done"
    kinds = [e["type"] for e in progress.events]
    assert kinds == ["saying", "doing", "result", "saying", "usage"]
    assert frontend.messages == []


async def test_an_unknown_provider_ends_the_turn_with_its_error(project):
    host, frontend = host_for(project, {"provider": "nosuch"})
    result = await host.agents[project.as_uri()].turn("hi")
    assert result["reply"].startswith('Error: unknown provider: "nosuch"') and result["error"]
    assert result["stopReason"] == "error"
    assert result["text"] == "failed — nosuch · 0 steps"
    assert frontend.progress == []


async def test_one_turn_at_a_time_and_cancelling_it(project):
    add_plugin(project, "scripted")
    host, frontend = host_for(project, SCRIPTED)
    folder = host.agents[project.as_uri()]
    for n, token in enumerate(("tok", None)):
        write_script(project, [[{"type": "saying", "text": f"partial {n}"}, {"type": "sleep", "seconds": 30}]])
        started: list[object] = []
        turn = asyncio.ensure_future(folder.turn("wait", token=token, on_start=started.append))
        while not (frontend.progress and frontend.progress[-1].events):
            await asyncio.sleep(0.01)
        assert started == [frontend.progress[-1].token]  # the face's name for the turn, else its progress's
        assert token is None or started == [token]
        with pytest.raises(Refused, match=f"a turn is already running.*; wait for it or {frontend.cancel_hint}$"):
            await folder.turn("second", token="other", on_start=started.append)
        assert frontend.progress[-1].ended and frontend.progress[-1].ended.startswith("Error: a turn is already running")
        with pytest.raises(Refused, match="cancel it before starting a new conversation"):
            await stored.new_conversation(folder)
        assert len(started) == 1 and not folder.running.done()
        assert folder.cancel() is True
        result = await asyncio.wait_for(turn, 10)
        assert result["cancelled"] is True and result["reply"] == f"partial {n}"  # what was said is kept
        assert result["stopReason"] == "cancelled"
        assert result["text"] == "cancelled — scripted · 1 step"
        assert frontend.progress[-2].ended == "cancelled"
        assert folder.cancel() is False  # nothing left running
    assert (await stored.new_conversation(folder))["reset"] is True


async def test_a_plain_client_is_shown_the_reply_and_the_transcript(project, home):
    add_plugin(project, "scripted")
    write_script(project, [[{"type": "saying", "text": "All " + "words " * 100}]])
    host, frontend = host_for(project, SCRIPTED, is_plain=True, shows_files=True)
    await host.agents[project.as_uri()].turn("explain")
    [(level, text)] = frontend.messages
    assert level == "info" and text.startswith("elelem: All words") and text.endswith("…")
    [path] = frontend.shown
    assert path.read_text().startswith(f"# elelem · {project.name}\n\n> explain") and home in path.parents


async def test_a_plain_client_that_cannot_open_files_gets_only_the_message(project, home):
    host, frontend = host_for(project, is_plain=True, shows_files=False)
    await host.agents[project.as_uri()].turn("hi")
    assert frontend.shown == [] and any(text.startswith("elelem: ") for _, text in frontend.messages)
    assert not list(home.rglob("*.md"))


async def test_every_session_shares_the_hosts_one_toolbox(tmp_path, home):
    """One set of built-in tools and definitions for all; each folder's view adds only its MCP servers."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    host = Host(MemoryFrontend())
    host.sync_folders({a.as_uri(): a, b.as_uri(): b})
    for folder in host.agents.values():
        await folder.turn("hi")
    assert {id(f.session.toolbox.tools) for f in host.agents.values()} == {id(host.toolbox.tools)}
    assert {id(f.session.toolbox.definitions()) for f in host.agents.values()} == {id(host.toolbox.definitions())}
    assert [f.session.toolbox.sources[1:] for f in host.agents.values()] == [(f.mcp,) for f in host.agents.values()]
    assert {t["name"] for t in host.tools()["tools"]} >= {"read", "write", "edit", "execute", "list", "grep"}


async def test_selecting_an_unknown_provider_is_refused_and_keeps_the_choice(project):
    host, _ = host_for(project)
    folder = host.agents[project.as_uri()]
    with pytest.raises(Refused, match='unknown provider: "nosuch"'):
        await folder.select_provider("nosuch", None)
    assert folder.provider_choice.choice().name == "stub"
    assert await folder.select_provider("stub", "m") == {"provider": "stub", "model": "m"}
    assert (await folder.providers())["source"] == "selected"


async def test_a_selected_provider_outlives_a_change_of_the_plugin_settings(project):
    add_plugin(project, "scripted")
    host, frontend = host_for(project, {"workspacePlugins": False})
    folder = host.agents[project.as_uri()]
    await folder.select_provider("stub", "m")
    assert "scripted" not in (await folder.providers())["available"]
    frontend.settings_by_folder[project.as_uri()] = {"workspacePlugins": True}
    info = await folder.providers()
    assert "scripted" in info["available"]  # the plugins were loaded again
    assert (info["provider"], info["model"], info["source"]) == ("stub", "m", "selected")


@pytest.mark.parametrize(("key", "picked"), [(None, "stub"), ("OPENAI_API_KEY", "openai"), ("ANTHROPIC_API_KEY", "anthropic")])
async def test_without_a_provider_setting_the_environment_picks_and_the_listing_says_so(project, monkeypatch, key, picked):
    """(`elelem-lsp providers` prints this listing: tests/test_cli.py.)"""
    if key:
        monkeypatch.setenv(key, "sk-x")
    host, _ = host_for(project, {})
    info = await host.agents[project.as_uri()].providers()
    assert (info["provider"], info["source"]) == (picked, "environment")
    assert {"stub", "openai", "anthropic"} <= set(info["available"])
