"""A model that reads a folder, over ACP (the real ``elelem-lsp acp`` and the SDK's client): the
turn ends with ``end_turn``, the model's next fetch holds the plain words of the result, and the
read before it stays a completed tool call."""

from __future__ import annotations

import json
from pathlib import Path

from scaffold import write_script
from test_directory_read import FOLDER_ANSWER, SCRIPT


async def test_over_acp_the_turn_goes_on_after_a_folder_is_read(scripted_project: Path, start_agent):
    (scripted_project / "src").mkdir()
    (scripted_project / "src" / "app.py").write_text("print('hi')\n")
    write_script(scripted_project, SCRIPT)
    agent = await start_agent(scripted_project, fs=True)

    answer = await agent.prompt("what is in src?")

    assert answer.stop_reason == "end_turn"  # as a failed turn's is over ACP: the words below tell them apart
    client = agent.client
    assert "Error:" not in client.text()
    assert json.loads(client.text().removeprefix("Reading the readme first.")) == {"ok": False, "error": FOLDER_ANSWER}
    first, folder = client.tool_updates("r1")[-1], client.tool_updates("r2")[-1]
    assert first.status == "completed" and first.raw_output == {"ok": True, "summary": "1 line"}  # the step before it, kept
    assert folder.status == "failed" and folder.content[0].content.text == FOLDER_ANSWER
