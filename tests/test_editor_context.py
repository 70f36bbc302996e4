"""The editor's context of a turn, rendered in-process: the selection when it is short, the other
open documents, git's branch and changes in a real repository, and the bound on its size."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from elelem_lsp.agent.budget import estimate_tokens
from elelem_lsp.agent.editor_context import CONTEXT_TOKENS, ActiveDocument, EditorContext, render


def git(root: Path, *arguments: str) -> None:
    subprocess.run(["git", "-C", str(root), *arguments], check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path) -> Path:
    """A git repository on branch ``feature/x`` with one commit of ``app.py``."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "feature/x")
    (root / "app.py").write_text("x = 1\n")
    git(root, "add", "app.py")
    git(root, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "first")
    return root


async def test_a_short_selection_is_shown_with_its_path_and_language(tmp_path):
    active = ActiveDocument("src/app.py", language="python", lines=(3, 4), text="x = 1\ny = 2\n")
    block = await render(EditorContext(tmp_path, active, ["src/app.py", "README.md"]))
    assert block == "File: src/app.py (lines 3-4)\n```python\nx = 1\ny = 2\n```\nOpen in the editor: README.md"


async def test_a_selection_holding_a_fence_gets_a_longer_one(tmp_path):
    active = ActiveDocument("README.md", language="markdown", lines=(1, 3), text="```sh\nrun\n```\n")
    assert await render(EditorContext(tmp_path, active)) == "File: README.md (lines 1-3)\n````markdown\n```sh\nrun\n```\n````"


async def test_a_long_selection_is_named_for_the_model_to_read_not_pasted(tmp_path):
    text = "".join(f"line {n} of a long selection\n" for n in range(1, 901))
    block = await render(EditorContext(tmp_path, ActiveDocument("big.py", language="python", lines=(1, 900), text=text)))
    assert block == "File: big.py (lines 1-900: too long to show here; read it with offset=1 and limit=900)"


async def test_the_cursor_alone_and_a_document_without_a_selection(tmp_path):
    cursor = await render(EditorContext(tmp_path, ActiveDocument("a.py", language="python", lines=(7, 7), text="y = 2\n")))
    assert cursor == "File: a.py (line 7)\n```python\ny = 2\n```"
    assert await render(EditorContext(tmp_path, ActiveDocument("a.py", language="python"))) == "File: a.py (python)"
    assert await render(EditorContext(tmp_path)) == ""  # nothing known, nothing said


async def test_many_open_documents_are_counted_past_the_first_twenty(tmp_path):
    names = [f"src/module_{n}.py" for n in range(45)]
    block = await render(EditorContext(tmp_path, open_documents=names))
    assert block == "Open in the editor: " + ", ".join(names[:20]) + " and 25 more"


async def test_an_ask_in_a_git_repository_names_its_branch_and_changes(repo):
    assert await render(EditorContext(repo)) == "Git: branch feature/x; no uncommitted changes"
    (repo / "app.py").write_text("x = 2\n")
    (repo / "notes.txt").write_text("new\n")
    assert await render(EditorContext(repo)) == "Git: branch feature/x; 2 uncommitted changes: M app.py, ?? notes.txt"
    (repo / "sub").mkdir()
    inner = await render(EditorContext(repo / "sub"))  # a folder inside the repository
    assert inner.startswith("Git: branch feature/x; 2 uncommitted changes")


async def test_git_is_not_run_in_a_folder_the_editor_does_not_trust(repo):
    (repo / ".git" / "config").write_text("[core]\n\tfsmonitor = touch ran-by-git\n")  # a repository's own command
    (repo / "app.py").write_text("x = 2\n")
    untrusted = await render(EditorContext(repo, trusted=False))
    assert untrusted == "Git: branch feature/x (changes not listed: the folder is not trusted)"
    trusted = await render(EditorContext(repo))
    assert "M app.py" in trusted and not (repo / "ran-by-git").exists()  # its monitor is not started either


async def test_a_detached_head_and_a_folder_outside_any_repository(repo, tmp_path):
    git(repo, "checkout", "-q", "--detach")
    assert (await render(EditorContext(repo))).startswith("Git: detached HEAD at ")
    outside = tmp_path / "plain"
    outside.mkdir()
    assert await render(EditorContext(outside)) == ""


async def test_a_worktree_names_its_own_branch(repo, tmp_path):
    """A worktree's ``.git`` is a file naming its git folder (``gitdir: ...``)."""
    worktree = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "fix/y", str(worktree))
    (worktree / "new.txt").write_text("new\n")
    assert await render(EditorContext(worktree)) == "Git: branch fix/y; 1 uncommitted change: ?? new.txt"


async def test_when_git_cannot_say_the_branch_is_named_all_the_same(repo, monkeypatch):
    (repo / ".git" / "index").write_bytes(b"not an index")  # git status fails on it
    assert await render(EditorContext(repo)) == "Git: branch feature/x (git status could not say what changed)"
    monkeypatch.setenv("PATH", str(repo / "nowhere"))  # no git to run at all
    assert await render(EditorContext(repo)) == "Git: branch feature/x (git status could not say what changed)"


async def test_the_block_is_bounded_and_says_it_was_cut(tmp_path):
    names = [f"{'deeply/nested/' * 5}file_{n}.py" for n in range(20)]
    active = ActiveDocument("a.py", lines=(1, 30), text="z = 3\n" * 30)
    block = await render(EditorContext(tmp_path, active, names), limit=400)
    assert estimate_tokens(block) <= 400
    assert block.startswith("File: a.py (lines 1-30: too long to show here")  # the selection went first
    assert block.endswith("characters cut to fit the context window]")
    whole = await render(EditorContext(tmp_path, active, names))
    assert estimate_tokens(whole) <= CONTEXT_TOKENS and "z = 3" in whole and "cut" not in whole
