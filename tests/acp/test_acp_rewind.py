"""``/rewind`` over ACP: it lists the turns that changed files, puts the files and the context back
to before one, says what stands in the way (a change made since) until ``force``, and a restart
replays the rewind as one thought line."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import write_user_settings
from scaffold import wait_until, write_script

COMMAND = "printf 'x = 2\\n' > app.py && rm old.txt && echo new > new.txt"


async def test_rewind_lists_refuses_a_change_made_since_then_forces_and_the_context_goes_back(
    scripted_project: Path, home: Path, start_agent
):
    write_user_settings(home, {"provider": "scripted", "execute": "allow"})
    (scripted_project / "app.py").write_text("x = 1\n")
    (scripted_project / "old.txt").write_text("old\n")
    write_script(scripted_project, [
        [{"type": "saying", "text": "one"}],
        [{"type": "doing", "id": "c1", "name": "execute", "arguments": {"command": COMMAND}}],
        [{"type": "saying", "text": "changed"}],
        [{"type": "record"}, {"type": "saying", "text": "after"}],
    ])
    agent = await start_agent(scripted_project)
    await agent.prompt("first")
    await agent.prompt("change things")
    assert (scripted_project / "new.txt").exists()

    seen = len(agent.client.updates)
    await agent.prompt("/rewind")
    listing = agent.client.text(since=seen)
    assert "turn 1" in listing and "change things" in listing and "added    new.txt" in listing

    (scripted_project / "new.txt").write_text("the person's\n")
    seen = len(agent.client.updates)
    await agent.prompt("/rewind 1")
    refused = agent.client.text(since=seen)
    assert "new.txt: changed since the turn" in refused and "/rewind 1 force" in refused
    assert (scripted_project / "new.txt").read_text() == "the person's\n"

    seen = len(agent.client.updates)
    await agent.prompt("/rewind 1 force")
    assert "rewound turn 1 and the conversation:" in agent.client.text(since=seen)
    assert (scripted_project / "app.py").read_text() == "x = 1\n" and (scripted_project / "old.txt").exists()
    assert not (scripted_project / "new.txt").exists()

    await agent.prompt("and now?")
    [fetch] = [json.loads(line) for line in (scripted_project / ".agents" / "fetches.jsonl").read_text().splitlines()]
    assert [m["content"] for m in fetch["messages"] if m["role"] != "system"] == ["first", "one", "and now?"]
    session_id = agent.session_id
    assert await agent.stop() == 0

    again = await start_agent(scripted_project, new_session=False)
    await again.conn.load_session(cwd=str(scripted_project), session_id=session_id, mcp_servers=[])
    await wait_until(lambda: "went back to before turn 1" in again.client.text("agent_thought_chunk"), "the rewind replayed")
