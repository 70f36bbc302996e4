"""grep and list never read through a link that leads out of the workspace: such entries are
skipped and counted, the rest of the call goes on, and nothing outside shows up in a result."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from elelem_lsp.agent.toolbox import Toolbox
from elelem_lsp.agent.workspace import Workspace
from scaffold import add_plugin, write_script

SECRET = "TOPSECRET-4711"


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace with one file of its own, and a folder beside it holding a secret."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(f"{SECRET}\n")
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text(f"# not the {SECRET[:3]}\nvalue = 'TOPSECRET-inside'\n")
    return root, outside


def texts(result: dict) -> list[str]:
    return [m["text"] for m in result["matches"]]


@pytest.mark.parametrize(
    "links, skipped",
    [
        ({"out": "outside"}, ["out"]),
        ({"leak.txt": "outside/secret.txt"}, ["leak.txt"]),
        ({"src/deep/down/out": "outside", "etc": "/etc"}, ["etc", "src/deep/down/out"]),
        ({"dangling": "outside/missing"}, ["dangling"]),
        ({"up": ".."}, ["up"]),
    ],
    ids=["folder", "file", "nested-and-absolute", "dangling", "parent"],
)
async def test_links_out_are_skipped_and_counted(layout, links, skipped):
    root, outside = layout
    for name, target in links.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target if target.startswith("/") else outside.parent / target, root / name)
    box, ws = Toolbox(), Workspace(root)
    found = await box.call("grep", {"pattern": "TOPSECRET"}, ws)
    assert found["ok"] is True
    assert texts(found) == ["value = 'TOPSECRET-inside'"] and SECRET not in json.dumps(found)
    assert found["skipped"] == len(skipped)
    assert found["skipped_reason"].startswith("symbolic links that lead outside the workspace are not followed")
    assert all(name in found["skipped_reason"] for name in skipped)
    listing = await box.call("list", {}, ws)
    assert listing["files"] == ["src/app.py"] and listing["total"] == 1
    assert listing["skipped"] == len(skipped)
    assert (outside / "secret.txt").read_text() == f"{SECRET}\n"


async def test_links_inside_are_neither_followed_nor_counted(layout):
    root, _ = layout
    os.symlink(root / "src", root / "alias")
    os.symlink(root / "src" / "app.py", root / "app-link.py")
    os.symlink("loop", root / "loop")
    found = await Toolbox().call("grep", {"pattern": "TOPSECRET"}, Workspace(root))
    assert [m["path"] for m in found["matches"]] == ["src/app.py"]  # found once, where it lives
    assert "skipped" not in found


async def test_a_search_below_a_folder_counts_only_its_links(layout):
    root, outside = layout
    os.symlink(outside, root / "src" / "out")
    os.symlink(outside, root / "top-out")
    found = await Toolbox().call("grep", {"pattern": "TOPSECRET", "path": "src"}, Workspace(root))
    assert found["skipped"] == 1 and "src/out" in found["skipped_reason"] and "top-out" not in found["skipped_reason"]


@pytest.mark.parametrize("tool", ["grep", "list"])
async def test_naming_a_link_out_is_still_refused(layout, tool):
    root, outside = layout
    os.symlink(outside, root / "out")
    arguments = {"pattern": "x", "path": "out"} if tool == "grep" else {"path": "out/"}
    result = await Toolbox().call(tool, arguments, Workspace(root))
    assert result["ok"] is False and "outside the workspace" in result["error"]


async def test_an_open_buffer_reached_through_a_link_out_is_not_searched(layout, start_editor, home):
    root, outside = layout
    os.symlink(outside, root / "out")
    add_plugin(root, "scripted")
    (root / ".gitignore").write_text(".agents/\n")
    write_script(root, [[{"type": "doing", "id": "g", "name": "grep", "arguments": {"pattern": "TOPSECRET"}}],
                        [{"type": "say_tool_result"}]])
    editor = await start_editor(root, settings={"provider": "scripted"})
    editor.open("out/secret.txt", f"{SECRET} edited in the editor\n")
    found = json.loads((await editor.ask("search"))["reply"])
    assert texts(found) == ["value = 'TOPSECRET-inside'"] and SECRET not in json.dumps(found)
    assert found["skipped"] == 1
