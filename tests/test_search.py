"""grep and list over real trees with the real rg: every file searched, honest totals, the rules
developers expect, patterns that cannot hang, unsaved buffers, and a server that keeps answering."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
from pathlib import Path

import pytest

from elelem_lsp.agent.toolbox import Toolbox
from elelem_lsp.agent.workspace import Workspace
from scaffold import add_plugin, make_tree, wait_until, write_script

FILES = 20_000
PER_FOLDER = 100


# The tree takes seconds to write: the tests that read it run on one xdist worker, which writes it once.
BIG_TREE_WORKER = pytest.mark.xdist_group("big_tree")


@pytest.fixture(scope="session")
def big_tree(tmp_path_factory) -> Path:
    """20,000 small Python files in 200 folders; the needle only in the last one written."""
    root = tmp_path_factory.mktemp("big") / "tree"
    last = make_tree(root, FILES, PER_FOLDER)[-1]
    last.write_text("def last():\n    return 'NEEDLE in the 20000th file'\n")
    return root


@pytest.fixture(scope="session")
def slow_tree(tmp_path_factory) -> Path:
    """One 30 MB file of long lines that rg takes a while to search with SLOW_PATTERN (the tests
that need it still running hold it with SIGSTOP: ``held_rg``)."""
    root = tmp_path_factory.mktemp("slow") / "tree"
    root.mkdir()
    (root / "big.txt").write_bytes(SLOW_LINE * SLOW_LINES)
    (root / ".gitignore").write_text(".agents/\n")  # the test provider's script and plugin
    return root


SLOW_LINE = b"lorem 1 ipsum 2 dolor sit 3 amet consectetur 4 adipiscing elit 5 sed do eiusmod 6 tempor " * 110 + b"\n"
SLOW_LINES = 30_000_000 // len(SLOW_LINE)
# Linear time still, but a lazy DFA too big to cache: about 100 ns a byte.
SLOW_PATTERN = r"[\w\s]{1500}\d"


def rg_processes_in(root: Path) -> list[int]:
    """Running rg processes whose working folder is ``root``."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if Path(f"/proc/{pid}/exe").resolve().name == "rg" and Path(os.readlink(f"/proc/{pid}/cwd")) == root:
                found.append(int(pid))
        except OSError:
            continue
    return found


async def wait_for_rg(root: Path) -> list[int]:
    seen: list[int] = []
    await wait_until(lambda: seen.extend(rg_processes_in(root)) or seen, "rg to start", timeout=30)
    return seen


async def held_rg(root: Path) -> list[int]:
    """The rg searching ``root``, stopped (SIGSTOP): it cannot finish on its own, however fast the
    machine (a second or less here), so only a kill ends it; SIGCONT lets it go on."""
    pids = await wait_for_rg(root)
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    return pids


def let_go(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):  # killed already
            os.kill(pid, signal.SIGCONT)


@pytest.fixture
def box():
    return Toolbox()


def make(root: Path, files: dict[str, str | bytes]) -> Workspace:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return Workspace(root)


# -- every file, honest totals ---------------------------------------------------------------------
@BIG_TREE_WORKER
async def test_grep_finds_a_match_in_the_20000th_file(box, big_tree):
    found = await box.call("grep", {"pattern": "NEEDLE"}, Workspace(big_tree))
    assert found["matches"] == [{"path": "pkg199/mod099.py", "line": 2, "text": "    return 'NEEDLE in the 20000th file'"}]
    assert (found["files_searched"], found["matches_found"], found["matches_shown"], found["truncated"]) == (FILES, 1, 1, False)


@BIG_TREE_WORKER
async def test_grep_caps_what_it_shows_but_not_the_totals(box, big_tree):
    found = await box.call("grep", {"pattern": r"^def f\d+_0\("}, Workspace(big_tree))
    assert found["files_searched"] == FILES
    assert found["matches_found"] == FILES - 1  # the needle's file has no such line
    assert found["matches_shown"] == len(found["matches"]) == 200
    assert found["truncated"] is True
    assert found["matches"] == sorted(found["matches"], key=lambda m: (m["path"], m["line"]))


@BIG_TREE_WORKER
async def test_grep_in_a_subfolder_and_a_single_file(box, big_tree):
    ws = Workspace(big_tree)
    folder = await box.call("grep", {"pattern": r"_0\(", "path": "pkg007"}, ws)
    assert (folder["files_searched"], folder["matches_found"]) == (PER_FOLDER, PER_FOLDER)
    assert {m["path"] for m in folder["matches"]} == {f"pkg007/mod{n:03d}.py" for n in range(PER_FOLDER)}
    one = await box.call("grep", {"pattern": "return value", "path": "pkg007/mod003.py"}, ws)
    assert (one["files_searched"], one["matches_found"]) == (1, 5)
    assert [m["line"] for m in one["matches"]] == [2, 4, 6, 8, 10]


@BIG_TREE_WORKER
async def test_list_has_no_silent_cap(box, big_tree):
    listing = await box.call("list", {}, Workspace(big_tree))
    assert listing["total"] == FILES and listing["truncated"] is True
    assert len(listing["files"]) == 1000 and listing["files"][0] == "pkg000/mod000.py"
    small = await box.call("list", {"path": "pkg199"}, Workspace(big_tree))
    assert (small["total"], small["truncated"], len(small["files"])) == (PER_FOLDER, False, PER_FOLDER)


# -- what developers expect to be skipped -----------------------------------------------------------
@pytest.mark.parametrize(
    "files, searched",
    [
        ({".gitignore": "build/\n*.log\n", "build/out.py": "needle", "run.log": "needle", "src/a.py": "needle"}, ["src/a.py"]),
        ({"sub/.gitignore": "gen.py\n", "sub/gen.py": "needle", "sub/keep.py": "needle"}, ["sub/keep.py"]),
        ({".ignore": "vendor/\n", "vendor/lib.py": "needle", "app.py": "needle"}, ["app.py"]),
        ({"data.bin": b"needle\x00\x01\x02", "text.txt": "needle"}, ["text.txt"]),
        ({".git/config": "needle", ".git/objects/x": "needle", "node_modules/m/i.js": "needle", "a.py": "needle"}, ["a.py"]),
        ({".github/workflows/ci.yml": "needle", ".env.example": "needle"}, [".env.example", ".github/workflows/ci.yml"]),
    ],
    ids=["gitignore", "nested-gitignore", "dot-ignore", "binary", "git-and-node-modules", "dotfiles-kept"],
)
async def test_ignored_binary_and_git_files_are_skipped(box, tmp_path, files, searched):
    ws = make(tmp_path, files)
    found = await box.call("grep", {"pattern": "needle"}, ws)
    assert sorted({m["path"] for m in found["matches"]}) == searched
    listing = await box.call("list", {}, ws)
    assert not {".git/config", "build/out.py", "run.log", "sub/gen.py", "vendor/lib.py"} & set(listing["files"])
    assert set(searched) <= set(listing["files"])


# -- the pattern language --------------------------------------------------------------------------
@pytest.mark.parametrize("pattern", [r"(a+)+$", r"(a|aa)+$", r"(x+x+)+y", r"^(\w+\s?)*$"])
async def test_catastrophic_patterns_return_promptly(box, tmp_path, pattern):
    ws = make(tmp_path, {"evil.txt": ("a" * 5000 + "!\n") * 200 + "aaaa\n"})
    assert re.compile(pattern)  # a pattern Python's backtracking engine accepts, and would stall on
    # A backtracking engine would never finish on these: an answer at all shows the linear one ran.
    found = await asyncio.wait_for(box.call("grep", {"pattern": pattern}, ws), 60)
    assert found["ok"] is True


@pytest.mark.parametrize(
    "pattern, lines",
    [("(?i)todo", [1, 2]), (r"\bTODO\b", [1]), (r"-flag", [3]), (r"^\s+x = \d+$", [4]), ("ünï", [5])],
)
async def test_rust_regex_syntax(box, tmp_path, pattern, lines):
    ws = make(tmp_path, {"a.py": "# TODO one\n# todo two\nrun -flag\n    x = 42\nünïcode\n"})
    found = await box.call("grep", {"pattern": pattern}, ws)
    assert [m["line"] for m in found["matches"]] == lines


@pytest.mark.parametrize("pattern, said", [("(", "bad pattern"), (r"(?=a)b", "look-around"), (r"(a)\1", "backreferences")])
async def test_bad_patterns_are_explained(box, tmp_path, pattern, said):
    found = await box.call("grep", {"pattern": pattern}, make(tmp_path, {"a.txt": "aab"}))
    assert found["ok"] is False and found["error"].startswith("bad pattern") and said in found["error"]


async def test_the_description_names_the_syntax(box):
    grep = next(d["function"] for d in box.definitions() if d["function"]["name"] == "grep")
    assert "Rust regex syntax" in grep["description"] and "look-around" in grep["description"]


@pytest.mark.parametrize("kind", ["fifo", "missing"])
async def test_a_path_that_is_no_file_or_folder_is_refused_at_once(box, tmp_path, kind):
    ws = make(tmp_path, {"a.txt": "needle"})
    if kind == "fifo":
        os.mkfifo(tmp_path / "pipe")  # rg would wait on it forever
    name = "pipe" if kind == "fifo" else "gone.txt"
    result = await asyncio.wait_for(box.call("grep", {"pattern": "needle", "path": name}, ws), 5)
    assert result["ok"] is False and result["error"] == (f"{name} is not a file or a folder" if kind == "fifo" else f"{name} does not exist")
    assert not rg_processes_in(tmp_path)
    whole = await asyncio.wait_for(box.call("grep", {"pattern": "needle"}, ws), 5)  # a pipe met in the walk is passed by
    assert [m["path"] for m in whole["matches"]] == ["a.txt"]


async def test_long_lines_are_cut(box, tmp_path):
    found = await box.call("grep", {"pattern": "needle"}, make(tmp_path, {"min.js": "needle" + "x" * 100_000 + "\n"}))
    assert found["matches_found"] == 1 and len(found["matches"][0]["text"]) <= 500


# -- context lines and globs ------------------------------------------------------------------------
async def test_grep_shows_lines_of_context_around_each_match(box, tmp_path):
    ws = make(tmp_path, {"a.py": "one\ntwo\nneedle 3\nfour\nfive\nsix\nseven\nneedle 8\nnine\n"})
    found = await box.call("grep", {"pattern": "needle", "context": 1}, ws)
    assert [(m["line"], m["text"], m.get("context", False)) for m in found["matches"]] == [
        (2, "two", True),
        (3, "needle 3", False),
        (4, "four", True),
        (7, "seven", True),
        (8, "needle 8", False),
        (9, "nine", True),
    ]
    assert (found["matches_found"], found["matches_shown"], found["truncated"]) == (2, 2, False)


async def test_the_match_limit_counts_matches_and_keeps_the_last_ones_context(box, tmp_path):
    ws = make(tmp_path, {"a.txt": "".join(f"hit {n}\nquiet {n}\n" for n in range(300))})
    found = await box.call("grep", {"pattern": "hit", "context": 1}, ws)
    assert (found["matches_found"], found["matches_shown"], found["truncated"]) == (300, 200, True)
    assert sum("context" not in m for m in found["matches"]) == 200
    assert found["matches"][-1] == {"path": "a.txt", "line": 400, "text": "quiet 199", "context": True}
    too_many = await box.call("grep", {"pattern": "hit", "context": 11}, ws)
    assert too_many["ok"] is False and "context" in too_many["error"]


@pytest.mark.parametrize(
    "glob, paths",
    [("*.py", ["a.py", "src/deep/c.py"]), ("src/**/*.py", ["src/deep/c.py"]), ("*.{md,ts}", ["b.ts", "docs/d.md"]), ("!*.py", ["b.ts", "docs/d.md"])],
)
async def test_grep_searches_only_the_files_a_glob_names(box, tmp_path, glob, paths):
    ws = make(tmp_path, {"a.py": "needle", "b.ts": "needle", "src/deep/c.py": "needle", "docs/d.md": "needle"})
    found = await box.call("grep", {"pattern": "needle", "glob": glob}, ws)
    assert sorted(m["path"] for m in found["matches"]) == paths


async def test_a_glob_applies_to_unsaved_buffers_too(box, tmp_path):
    class Editor(Workspace):
        def unsaved_buffers(self, top):
            return {self.root / "a.py": "needle typed", self.root / "b.ts": "needle typed"}

    make(tmp_path, {"a.py": "saved", "b.ts": "saved"})
    found = await box.call("grep", {"pattern": "needle", "glob": "*.py"}, Editor(tmp_path))
    assert [(m["path"], m["text"]) for m in found["matches"]] == [("a.py", "needle typed")]


async def test_a_bad_glob_is_explained(box, tmp_path):
    found = await box.call("grep", {"pattern": "x", "glob": "src/[a"}, make(tmp_path, {"a.txt": "x"}))
    assert found["ok"] is False and found["error"].startswith("bad glob") and "src/[a" in found["error"]


# -- off the event loop, cancellable --------------------------------------------------------------
async def test_cancelling_a_grep_kills_rg(box, slow_tree):
    task = asyncio.ensure_future(box.call("grep", {"pattern": SLOW_PATTERN}, Workspace(slow_tree)))
    pids = await held_rg(slow_tree)
    for _ in range(20):  # the loop keeps turning meanwhile
        await asyncio.sleep(0.01)
    assert not task.done() and set(pids) <= set(rg_processes_in(slow_tree))
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # Stopped, rg ends only by being killed (let go if it was not, so that it ends anyway).
    try:
        await wait_until(lambda: not set(pids) & set(rg_processes_in(slow_tree)), "rg to be killed", timeout=30)
    finally:
        let_go(pids)


# -- through the real server -----------------------------------------------------------------------
def grep_then_report(root: Path, arguments: dict) -> None:
    write_script(root, [[{"type": "doing", "id": "g", "name": "grep", "arguments": arguments}], [{"type": "say_tool_result"}]])


async def test_unsaved_buffers_are_searched_as_the_editor_holds_them(project, start_editor):
    add_plugin(project, "scripted")
    (project / ".gitignore").write_text(".agents/\n")
    (project / "saved.py").write_text("old = 1\n")
    (project / "same.py").write_text("fresh = 2\n")
    (project / "new.py").write_text("")  # created on disk by the editor, its text not saved yet
    grep_then_report(project, {"pattern": "fresh|old"})
    editor = await start_editor(project, settings={"provider": "scripted"})
    editor.open("saved.py", "fresh = 1\n")
    editor.open("same.py")
    editor.open("new.py", "\n\nfresh too\n")
    found = json.loads((await editor.ask("find"))["reply"])
    assert [(m["path"], m["line"], m["text"]) for m in found["matches"]] == [
        ("new.py", 3, "fresh too"),
        ("same.py", 1, "fresh = 2"),
        ("saved.py", 1, "fresh = 1"),
    ]
    # README.md, .gitignore and same.py from the disk; saved.py and new.py as the editor holds them
    assert (found["files_searched"], found["matches_found"]) == (5, 3)
    grep_then_report(project, {"pattern": "fresh", "path": "saved.py"})
    one = json.loads((await editor.ask("find", token="t2"))["reply"])
    assert [(m["path"], m["text"]) for m in one["matches"]] == [("saved.py", "fresh = 1")]


async def test_other_requests_are_answered_while_a_grep_runs(start_editor, slow_tree, home):
    add_plugin(slow_tree, "scripted")
    grep_then_report(slow_tree, {"pattern": SLOW_PATTERN})
    editor = await start_editor(slow_tree, settings={"provider": "scripted"})
    turn = asyncio.ensure_future(editor.ask("search"))
    pids = await held_rg(slow_tree)
    try:
        tools = await editor.command("elelem.tools", {})
        assert "grep" in {t["name"] for t in tools["tools"]}
        assert not turn.done() and rg_processes_in(slow_tree)  # answered while rg still searches
    finally:
        let_go(pids)
    found = json.loads((await turn)["reply"])
    assert (found["ok"], found["files_searched"]) == (True, 2)  # big.txt and .gitignore
    assert found["matches_found"] == SLOW_LINES and found["matches_shown"] == 200


async def test_cancelling_a_turn_mid_grep_stops_rg(start_editor, slow_tree, home):
    add_plugin(slow_tree, "scripted")
    grep_then_report(slow_tree, {"pattern": SLOW_PATTERN})
    editor = await start_editor(slow_tree, settings={"provider": "scripted"})
    turn = asyncio.ensure_future(editor.ask("search"))
    pids = await held_rg(slow_tree)
    assert (await editor.command("elelem.cancel", {}))["cancelled"] is True
    result = await asyncio.wait_for(turn, 30)
    assert result["cancelled"] is True
    # Stopped, rg ends only by being killed (let go if it was not, so that it ends anyway).
    try:
        await wait_until(lambda: not set(pids) & set(rg_processes_in(slow_tree)), "rg to be killed", timeout=30)
    finally:
        let_go(pids)
    assert editor.progress["turn-1"][-1] == {"kind": "end", "message": "cancelled"}
