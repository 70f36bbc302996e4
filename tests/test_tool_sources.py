"""A toolbox view with a ToolSource (what a folder's MCP servers are to the agent): its tools are
offered after the built-in ones, its calls and summaries are its own, and its failures are
``ok: false`` results, never a crash; the built-in definitions stay shared."""

from __future__ import annotations

from typing import Any

from elelem_lsp.agent.toolbox import Toolbox, ToolSource
from elelem_lsp.agent.workspace import Workspace


class Notes(ToolSource):
    """Two tools, ``notes__add`` and ``notes__boom``, answered in memory."""

    def __init__(self) -> None:
        self.readied = 0
        self.notes: list[str] = []

    async def definitions(self) -> list[dict[str, Any]]:
        self.readied += 1
        return [{"type": "function", "function": {"name": f"notes__{n}", "description": n, "parameters": {}}}
                for n in ("add", "boom")]

    def serves(self, name: str) -> bool:
        return name.startswith("notes__")

    async def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        if name == "notes__boom":
            raise RuntimeError("the source broke")
        self.notes.append(arguments["text"])
        return {"ok": True, "content": "\n".join(self.notes)}

    def summary(self, name: str, result: dict[str, Any]) -> str:
        return f"{len(self.notes)} notes"


async def test_a_views_source_is_offered_called_and_summed_up_after_the_built_in_tools(tmp_path):
    base, notes = Toolbox(), Notes()
    view = base.with_sources(notes)
    offered = await view.offered()
    names = [d["function"]["name"] for d in offered]
    assert names == ["read", "write", "edit", "execute", "list", "grep", "plan", "notes__add", "notes__boom"]
    assert await base.offered() is base.definitions()  # the base offers only its own, the same list every turn
    assert view.definitions() is base.definitions()
    workspace = Workspace(tmp_path)
    result = await view.call("notes__add", {"text": "one"}, workspace)
    assert result == {"ok": True, "content": "one"} and view.summary("notes__add", result) == "1 notes"
    broke = await view.call("notes__boom", {}, workspace)
    assert broke["ok"] is False and broke["error"].startswith("RuntimeError: the source broke (notes__boom failed")
    unknown = await view.call("other__x", {}, workspace)
    assert unknown["ok"] is False and unknown["error"].startswith('unknown tool: "other__x". Available: read, write')
    assert await base.call("notes__add", {"text": "x"}, workspace) == {
        "ok": False, "error": 'unknown tool: "notes__add". Available: read, write, edit, execute, list, grep, plan'
    }
    assert notes.notes == ["one"]  # the base never reached the source
