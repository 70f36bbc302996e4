"""The human provider against Workspaces that can and cannot ask a person."""

from __future__ import annotations

from pathlib import Path

import pytest

from elelem_lsp.agent.messages import ProviderError
from elelem_lsp.agent.workspace import Workspace, WorkspaceError, current_workspace
from elelem_lsp.providers.human import HumanProvider, factory


class Person(Workspace):
    def __init__(self, root: Path, answer: str | None) -> None:
        super().__init__(root)
        self.answer = answer
        self.prompts: list[str] = []

    async def ask_user(self, prompt: str) -> str | None:
        self.prompts.append(prompt)
        return self.answer


async def fetch_in(workspace: Workspace | None, messages: list[dict]) -> list[dict]:
    events: list[dict] = []
    token = current_workspace.set(workspace) if workspace else None
    try:
        await factory(model="ignored").fetch(messages, [{"type": "function", "function": {"name": "read"}}], events.append)
    finally:
        if token:
            current_workspace.reset(token)
    return events


async def test_the_typed_line_is_the_reply_and_no_tool_is_requested(tmp_path):
    person = Person(tmp_path, "It says hello, in café style.")
    events = await fetch_in(person, [{"role": "system", "content": "s"}, {"role": "user", "content": "what is in README?"}])
    assert events == [{"type": "saying", "text": "It says hello, in café style."}]
    assert person.prompts == ["what is in README?"]


async def test_a_dismissed_input_ends_the_turn_with_an_error(tmp_path):
    with pytest.raises(ProviderError, match="no reply: the input was dismissed"):
        await fetch_in(Person(tmp_path, None), [{"role": "user", "content": "q"}])


async def test_a_workspace_with_nobody_says_so(tmp_path):
    with pytest.raises(WorkspaceError, match="nobody can answer here"):
        await fetch_in(Workspace(tmp_path), [{"role": "user", "content": "q"}])


async def test_outside_a_turn_there_is_no_person():
    with pytest.raises(ProviderError, match="the human provider needs a person"):
        await HumanProvider().fetch([{"role": "user", "content": "q"}], [], lambda e: None)
