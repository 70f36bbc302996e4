"""AGENTS.md is read the way the tools read a file: confined to the workspace.

A project can make AGENTS.md a symlink to a file of the person's (`~/.ssh/id_rsa`,
another project's secrets) so that its text lands in the system prompt and reaches
the model provider. Such a file is not read; the prompt says it was skipped and why.
In an editor the unsaved buffer of AGENTS.md is what counts, as for `read`.
"""

from __future__ import annotations

import os

import pytest
from lsprotocol import types as lsp

from elelem_lsp.agent.instructions import system_prompt
from elelem_lsp.agent.workspace import Workspace

SECRET = "-----BEGIN OPENSSH PRIVATE KEY----- secret"


@pytest.fixture
def outside(tmp_path):
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "id_rsa").write_text(SECRET)
    return folder


@pytest.fixture
def root(tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    return root


def link_out_directly(root, outside):
    os.symlink(outside / "id_rsa", root / "AGENTS.md")


def link_through_a_link_inside(root, outside):
    (root / "docs").mkdir()
    os.symlink(outside / "id_rsa", root / "docs" / "agents.md")
    os.symlink("docs/agents.md", root / "AGENTS.md")


def link_through_a_link_outside(root, outside):
    os.symlink(outside / "id_rsa", outside / "innocent.md")
    os.symlink(outside / "innocent.md", root / "AGENTS.md")


def link_relatively_out(root, outside):
    os.symlink(os.path.relpath(outside / "id_rsa", root), root / "AGENTS.md")


def link_to_a_folder_outside(root, outside):
    os.symlink(outside, root / "AGENTS.md")


def link_dangling_outside(root, outside):
    os.symlink(outside / "not-yet", root / "AGENTS.md")


@pytest.mark.parametrize(
    "make",
    [link_out_directly, link_through_a_link_inside, link_through_a_link_outside, link_relatively_out,
     link_to_a_folder_outside, link_dangling_outside],
)
async def test_an_agents_md_leading_outside_is_skipped_and_the_prompt_says_why(root, outside, make):
    make(root, outside)
    prompt = await system_prompt(Workspace(root))
    assert SECRET not in prompt
    assert "AGENTS.md was skipped" in prompt and "outside the workspace" in prompt
    assert "# AGENTS.md" not in prompt


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda root: (root / "AGENTS.md").mkdir(), "is a directory"),
        (lambda root: (root / "AGENTS.md").write_bytes(b"caf\xe9 \x80 \xff\xfe"), "not UTF-8"),
        (lambda root: os.symlink("AGENTS.md", root / "AGENTS.md"), "symlink loop"),
        (lambda root: os.symlink("missing.md", root / "AGENTS.md"), "does not exist"),
    ],
    ids=["a folder", "not UTF-8", "a symlink loop", "a dangling symlink inside"],
)
async def test_an_agents_md_that_cannot_be_read_is_skipped_and_the_prompt_says_why(root, make, says):
    make(root)
    prompt = await system_prompt(Workspace(root))
    assert "AGENTS.md was skipped" in prompt and says in prompt, prompt
    assert "# AGENTS.md" not in prompt


@pytest.mark.parametrize(
    "make",
    [
        lambda root: os.symlink("docs/agents.md", root / "AGENTS.md"),
        lambda root: os.symlink(root / "docs" / "agents.md", root / "AGENTS.md"),
        lambda root: (os.symlink("agents.md", root / "docs" / "link.md"), os.symlink("docs/link.md", root / "AGENTS.md")),
    ],
    ids=["relative link inside", "absolute link inside", "a chain inside"],
)
async def test_an_agents_md_linked_inside_the_workspace_is_read(root, make):
    (root / "docs").mkdir()
    (root / "docs" / "agents.md").write_text("Run pytest before you finish.")
    make(root)
    prompt = await system_prompt(Workspace(root))
    assert "# AGENTS.md\n\nRun pytest before you finish." in prompt and "skipped" not in prompt


async def test_no_agents_md_says_nothing(root):
    prompt = await system_prompt(Workspace(root))
    assert "AGENTS.md" not in prompt


async def test_in_the_editor_the_unsaved_buffer_counts_and_a_link_out_is_skipped(project, outside, start_editor):
    (project / "AGENTS.md").write_text("On disk: be terse.")
    editor = await start_editor(project, settings={"provider": "stub"})
    uri = editor.open("AGENTS.md", language="markdown")
    editor.type_text("AGENTS.md", "Unsaved: be kind.")
    assert (await editor.ask("hi"))["error"] is None
    [first, *_] = (await editor.command("elelem.context", {}))["messages"]
    assert "# AGENTS.md\n\nUnsaved: be kind." in first["content"] and "be terse" not in first["content"]

    editor.client.text_document_did_close(lsp.DidCloseTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))
    (project / "AGENTS.md").unlink()
    os.symlink(outside / "id_rsa", project / "AGENTS.md")
    assert (await editor.ask("again", token="t2"))["error"] is None
    [first, *_] = (await editor.command("elelem.context", {}))["messages"]
    assert SECRET not in first["content"] and "AGENTS.md was skipped" in first["content"]


@pytest.mark.timeout(30)
async def test_an_agents_md_that_is_a_fifo_is_skipped_without_waiting(root):
    os.mkfifo(root / "AGENTS.md")
    prompt = await system_prompt(Workspace(root))
    assert "AGENTS.md was skipped" in prompt and "not a regular file" in prompt
