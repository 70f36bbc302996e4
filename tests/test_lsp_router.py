"""The LSP face's names for a running turn, in-process: the request that asked for it and its
progress token each cancel it while it runs, names of nothing cancel nothing, a second request
refused in the same folder takes no name, and no name outlives its turn."""

from __future__ import annotations

import asyncio

import pytest

from scaffold import add_plugin, write_script

from elelem_lsp.host.frontend import Refused
from elelem_lsp.server.router import LspRouter
from elelem_lsp.server.server import create_server

from host.memory_frontend import MemoryFrontend

SCRIPTED = {"workspacePlugins": True, "provider": "scripted"}


@pytest.mark.parametrize("by", ["request", "token"])
async def test_a_turn_is_cancelled_by_its_request_or_its_progress_token(project, by):
    add_plugin(project, "scripted")
    write_script(project, [[{"type": "saying", "text": "partial"}, {"type": "sleep", "seconds": 30}]])
    frontend = MemoryFrontend(settings_by_folder={project.as_uri(): SCRIPTED})
    router = LspRouter(create_server(), frontend)  # type: ignore[arg-type]  # the ports in memory
    router.host.sync_folders({project.as_uri(): project})
    agent = router.host.agents[project.as_uri()]
    turn = asyncio.ensure_future(router.turn(agent, "wait", context="", token=None, request=41))
    while not (frontend.progress and frontend.progress[-1].events):
        await asyncio.sleep(0.01)
    token = frontend.progress[-1].token
    assert router.turns_by_request == {41: agent} and router.turns_by_token == {token: agent}

    with pytest.raises(Refused, match="a turn is already running"):
        await router.turn(agent, "second", context="", token="other", request=42)
    router.cancel_request(99)  # names no turn: nothing happens
    router.cancel_progress("unknown")
    router.cancel_request(42)  # the refused request named nothing either
    assert router.turns_by_request == {41: agent} and not agent.running.done()

    if by == "request":
        router.cancel_request(41)
    else:
        router.cancel_progress(token)
    result = await asyncio.wait_for(turn, 10)
    assert result["cancelled"] is True and result["reply"] == "partial"
    assert router.turns_by_request == {} and router.turns_by_token == {}
