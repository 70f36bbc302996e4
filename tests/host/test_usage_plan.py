"""Usage and plans through the host: a turn's fetches summed into one ``usage`` event with the
conversation's totals and cost (the table's price, or the ``prices`` setting's), ``elelem.context``
saying the same; the ``plan`` tool's checklist sent as a ``plan`` event; both kept with the stored
conversation and back after a restart."""

from __future__ import annotations

import pytest

from scaffold import add_plugin, write_script
from stored_transcripts import plan_call, usage

from elelem_lsp.host import stored

from .test_host_conversations import folder_of, started_host

SCRIPTED = {"workspacePlugins": True, "provider": "scripted"}


async def test_a_turns_fetches_are_summed_priced_and_kept_with_the_conversation(project):
    add_plugin(project, "scripted")
    write_script(project, [
        [{"type": "doing", "id": "r", "name": "read", "arguments": {"path": "README.md"}}, usage(1000, 50)],
        [{"type": "saying", "text": "hello"}, usage(1200, 30)],
        [{"type": "saying", "text": "again"}, usage(1300, 20)],
    ])
    host, frontend = started_host(project, {**SCRIPTED, "model": "claude-sonnet-4-5"})
    folder = folder_of(host, project)
    await folder.turn("one")
    first = frontend.progress[0].events
    assert [e["type"] for e in first][-1] == "usage"  # the fetches' own events are not passed on
    assert [e for e in first if e["type"] == "usage"] == [first[-1]]
    one = 2200 * 3 / 1e6 + 80 * 15 / 1e6  # Claude Sonnet 4.5's published price: $3 per million read, $15 written
    assert first[-1] == {
        "type": "usage", "inputTokens": 2200, "outputTokens": 80,
        "conversationInputTokens": 2200, "conversationOutputTokens": 80,
        "contextTokens": 1230, "contextWindow": folder.session.context_tokens,
        "cost": round(one, 6), "currency": "USD", "text": "2,200 in · 80 out · $0.0078",  # 2,200 × $3/M + 80 × $15/M
        # the conversation so far in one line, for a header or a usage command
        "conversationText": f"2,200 in · 80 out · context 1,230 of {folder.session.context_tokens:,} · $0.0078",
    }
    await folder.turn("two")
    second = frontend.progress[1].events[-1]
    both = one + 1300 * 3 / 1e6 + 20 * 15 / 1e6
    assert (second["inputTokens"], second["conversationInputTokens"], second["conversationOutputTokens"]) == (1300, 3500, 100)
    assert second["cost"] == round(both, 6)

    context = (await folder.context())["usage"]
    assert (context["conversationInputTokens"], context["conversationOutputTokens"], context["cost"]) == (3500, 100, round(both, 6))
    assert context["conversationText"].startswith("3,500 in · 100 out · context ")
    assert context["conversationText"].endswith(f" of {folder.session.context_tokens:,} · $0.01")

    restarted, _ = started_host(project, {**SCRIPTED, "model": "claude-sonnet-4-5"})
    again = folder_of(restarted, project)
    reopened = (await again.context())["usage"]
    assert (reopened["conversationInputTokens"], reopened["conversationOutputTokens"], reopened["cost"]) == (3500, 100, round(both, 6))
    # served again with the words each turn's usage row had live, and the tool rows' titles
    for served in ((await stored.transcript(again))["entries"], (await stored.resume(again, again.current.id))["entries"]):
        assert served[0]["usage"] == {"inputTokens": 2200, "outputTokens": 80, "cost": one, "text": first[-1]["text"]}
        assert served[1]["usage"]["text"] == second["text"] == "1,300 in · 20 out · $0.01"  # the conversation's cost so far
        [call] = served[0]["tools"]
        doing, result = (next(e for e in first if e["type"] == kind) for kind in ("doing", "result"))
        assert (call["title"], call["outcomeTitle"]) == (doing["title"], result["title"]) == ("Read README.md", "Read README.md")


@pytest.mark.parametrize(("prices", "expected"), [
    ({}, None),  # a model in no table has no cost, never a guessed one
    ({"my-model": {"input": 2.0, "output": 10.0}}, (1_000_000 * 2.0 + 100_000 * 10.0) / 1_000_000),
])
async def test_the_prices_setting_prices_a_model_the_table_does_not_know(project, prices, expected):
    add_plugin(project, "scripted")
    write_script(project, [[{"type": "saying", "text": "hi"}, usage(1_000_000, 100_000)]])
    host, frontend = started_host(project, {**SCRIPTED, "model": "my-model", "prices": prices})
    await folder_of(host, project).turn("one")
    event = frontend.progress[0].events[-1]
    assert event.get("cost") == expected
    assert event["text"] == "1,000,000 in · 100,000 out" + (f" · ${expected:.2f}" if expected else "")


async def test_the_plan_tool_sends_the_checklist_and_the_conversation_keeps_it(project):
    add_plugin(project, "scripted")
    write_script(project, [
        [plan_call("p1", "in_progress", "pending")],
        [plan_call("p2", "completed", "in_progress")],
        [{"type": "saying", "text": "working"}],
        [{"type": "doing", "id": "p3", "name": "plan", "arguments": {"entries": [{"content": "x", "status": "started"}]}}],
        [{"type": "saying", "text": "oops"}],
    ])
    host, frontend = started_host(project)
    folder = folder_of(host, project)
    await folder.turn("do two things")
    plans = [e for e in frontend.progress[0].events if e["type"] == "plan"]
    assert [[entry["status"] for entry in plan["entries"]] for plan in plans] == [
        ["in_progress", "pending"], ["completed", "in_progress"]]
    assert plans[-1]["entries"][0] == {"content": "step 1", "status": "completed", "priority": "medium"}
    results = [e for e in frontend.progress[0].events if e["type"] == "result"]
    assert [r["summary"] for r in results] == ["0 of 2 steps done", "1 of 2 steps done"]

    await folder.turn("a bad plan")  # refused with the field named; the plan stays as it was
    [bad] = [e for e in frontend.progress[1].events if e["type"] == "result"]
    assert not bad["ok"] and "entries.0.status" in bad["error"]
    assert not [e for e in frontend.progress[1].events if e["type"] == "plan"]

    entries = (await stored.transcript(folder))["entries"]
    assert entries[0]["plan"] == plans[-1]["entries"] and "plan" not in entries[1]
    restarted, _ = started_host(project)
    again = folder_of(restarted, project)
    await again.ready_conversation()
    assert again.current.plan == plans[-1]["entries"]
