"""Each local provider completes turns through the real server and the real CLI, on the tiny model."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from local_extras import PROVIDERS, require_extra


def sayings(events: list[dict]) -> str:
    return "".join(e["text"] for e in events if e["type"] == "saying")


@pytest.mark.slow
@pytest.mark.parametrize("name", PROVIDERS)
async def test_a_turn_streams_through_the_server_and_greedy_repeats(name, project, start_editor, tiny_env):
    require_extra(name)
    editor = await start_editor(project, settings={"provider": name, "temperature": 0, "maxTokens": 12},
                                env=tiny_env)

    first = await editor.ask("hi", token="turn-1")
    assert first["error"] is None and first["provider"] == name and not first["cancelled"]
    events = editor.events("turn-1")
    assert events and {e["type"] for e in events} == {"saying", "usage"}  # usage: the host's, as the turn ends
    assert first["reply"] and sayings(events) == first["reply"]  # the stream carried the whole reply
    reports = [v for v in editor.progress["turn-1"] if v["kind"] == "report"]
    assert reports and reports[-1]["message"]

    await editor.command("elelem.reset", {})
    second = await editor.ask("hi", token="turn-2")
    assert second["reply"] == first["reply"]  # temperature 0: the same tokens again


@pytest.mark.slow
@pytest.mark.parametrize("name", PROVIDERS)
def test_elelem_lsp_ask_prints_the_reply(name, project, tiny_env):
    require_extra(name)
    run = subprocess.run(
        [sys.executable, "-m", "elelem_lsp", "ask", "-p", name, "hi"],
        cwd=project, capture_output=True, text=True, timeout=120, env={**os.environ, **tiny_env},
    )
    assert run.returncode == 0, run.stderr
    reply = run.stdout.strip()
    assert reply and not reply.startswith("Error")
    assert reply in run.stderr  # streamed to the terminal as it was generated, then printed
