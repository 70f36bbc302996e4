"""``checkCommand`` over ACP, whose client reports no problems: the real ``ruff check`` runs after
the model's change (in the client's terminal, as ``execute`` would), the model reads its output,
and the client is told the ``checked`` row."""

from __future__ import annotations

import shutil
from pathlib import Path

from scaffold import write_user_settings
from optional_parts import require
from scaffold import write_script


async def test_the_check_command_runs_after_a_change_and_the_model_reads_ruff(scripted_project: Path, home: Path, start_agent):
    require(shutil.which("ruff") is not None, "ruff", "ruff", "python3 -m pip install -e '.[dev]'")
    write_user_settings(
        home,
        {"provider": "scripted", "checkCommand": "ruff check --no-cache --output-format concise {files}", "allowCommands": ["ruff check"]},
    )
    write = {"type": "doing", "id": "w", "name": "write", "arguments": {"path": "app.py", "content": "print(undefined_name)\n"}}
    write_script(scripted_project, [[write], [{"type": "say_tool_result"}]])
    agent = await start_agent(scripted_project, fs=False)
    assert (await agent.prompt("write app.py")).stop_reason == "end_turn"
    said = agent.client.text()
    assert "checked app.py: ruff check --no-cache --output-format concise app.py (exit 1)" in said
    assert "app.py:1:7: F821 Undefined name `undefined_name`" in said
    assert "checked app.py: ruff check --no-cache --output-format concise app.py (exit 1)" in agent.client.text("agent_thought_chunk")
