"""The ACP face's part of the editor's context: its session's folder, so git's branch and changes."""

from __future__ import annotations

import subprocess
from pathlib import Path

from acp import text_block

from scaffold import write_script


async def test_a_prompt_in_a_git_repository_tells_the_model_its_branch(scripted_project: Path, start_agent):
    for command in (["init", "-q", "-b", "acp-branch"], ["add", "README.md"], ["-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "one"]):
        subprocess.run(["git", "-C", str(scripted_project), *command], check=True, capture_output=True)
    (scripted_project / "README.md").write_text("# changed\n")
    write_script(scripted_project, [[{"type": "say_tool_result"}]])  # says the last message: the prompt
    agent = await start_agent(scripted_project, fs=False)
    await agent.prompt([text_block("what changed?")])
    said = agent.client.text()
    assert said.startswith("what changed?\n\nGit: branch acp-branch; ") and "M README.md" in said
