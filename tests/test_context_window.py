"""``elelem.context`` over LSP says how the next request uses the window, in tokens: the prompt's
mode (compact for a small ``contextTokens``, or as the ``prompt`` setting says), its fixed part,
the earlier turns kept and the room left."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    ("settings", "mode"),
    [({"contextTokens": 2000}, "compact"), ({"contextTokens": 32000}, "full"), ({"contextTokens": 32000, "prompt": "compact"}, "compact")],
)
async def test_elelem_context_shows_the_mode_the_fixed_part_history_and_room_left(project, start_editor, settings, mode):
    editor = await start_editor(project, settings={"provider": "stub", **settings})
    for n in range(3):
        await editor.ask(f"question {n} " + "q" * 200, token=f"t{n}")
    context = await editor.command("elelem.context", {})
    window = context["window"]
    assert window["mode"] == mode and window["budgetTokens"] == settings["contextTokens"]
    assert window["turnsKept"] == 3 and window["turnsLeftOut"] == 0 and window["historyTokens"] > 3 * 200 // 3
    system_tokens = len(context["messages"][0]["content"]) // 3  # the estimate: three characters a token
    assert window["fixedTokens"] > system_tokens  # the system prompt and the tools
    assert window["fixedTokens"] + window["historyTokens"] + window["roomTokens"] <= window["budgetTokens"]
    assert window["roomTokens"] > 0 and context["tokens"] == window["budgetTokens"] - window["roomTokens"]
    assert ("How to work:" in context["messages"][0]["content"]) == (mode == "full")
    if settings["contextTokens"] == 2000:  # no room for optional tools: the compact form alone, 2,000 characters at most
        assert window["fixedTokens"] <= 2000 // 3 + 10 and window["toolsLeftOut"] == ["plan"]
