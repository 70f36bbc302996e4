"""Stored conversations: server start and first-turn latency with 500 stored turns, against none.

For each run a fresh state directory and folder; "stored" seeds the folder's current
conversation with 500 turns (prompt 200, reply 800 characters, one tool call each) as an earlier
server would have left it. Then, through the terminal client's LSP code (the real server as a
subprocess, the stub provider): spawn → initialize answered, and the first ``elelem.ask``
request → response, which loads the conversation, rebuilds its history and fits it to the
budget. Runs of the two kinds are interleaved. Prints median (min–max) for each.

Run: ``python bench/conversations.py [--runs N] [--turns T]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from elelem_lsp.agent.budget import DEFAULT_CONTEXT_TOKENS, estimate_tokens, fit
from elelem_lsp.agent.messages import system, user
from elelem_lsp.agent.session import Session
from elelem_lsp.agent.workspace import Workspace
from elelem_lsp.client import TerminalClient
from elelem_lsp.client.terminal import Terminal
from elelem_lsp.host.conversations import ConversationStore, history_from, new_id


def seed(root: Path, turns: int) -> None:
    store, conversation = ConversationStore(root.resolve()), new_id()
    for n in range(turns):
        store.append(conversation, {
            "kind": "turn", "prompt": f"question {n} " + "p" * 200, "reply": f"answer {n} " + "r" * 800,
            "provider": "stub", "model": None, "started": "2026-01-01T00:00:00.000Z",
            "ended": "2026-01-01T00:00:01.000Z", "cancelled": False, "error": None,
            "tools": [{"id": f"call_{n}", "name": "read", "arguments": {"path": "README.md"},
                       "ok": True, "summary": "1 line", "error": None}],
        })


async def one_run(turns: int) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as scratch:
        os.environ["XDG_STATE_HOME"] = str(Path(scratch) / "state")  # the server inherits it
        root = Path(scratch) / "project"
        root.mkdir()
        (root / "README.md").write_text("# hello\n")
        if turns:
            seed(root, turns)
        client = TerminalClient(root, Terminal(interactive=False), options={"provider": "stub"})
        started = time.perf_counter()
        await client.start()
        start = time.perf_counter() - started
        try:
            asked = time.perf_counter()
            result = await client.ask("what is here?", lambda value: None)
            first_turn = time.perf_counter() - asked
            assert result["error"] is None, result
            if turns:  # the turn saw the stored conversation
                context = await client.command("elelem.context", {})
                assert len(context["messages"]) == 1 + 2 * (turns + 1), len(context["messages"])
        finally:
            await client.stop()
        return start * 1000, first_turn * 1000


def load_in_process(turns: int) -> float:
    """What the server adds for a stored conversation, alone: read, rebuild the history, fit it (ms)."""
    with tempfile.TemporaryDirectory() as scratch:
        os.environ["XDG_STATE_HOME"] = str(Path(scratch) / "state")
        root = Path(scratch)
        seed(root, turns)
        store = ConversationStore(root.resolve())
        started = time.perf_counter()
        history = history_from(store.entries(store.current() or ""))
        fit([system("s")], history, [user("now")], DEFAULT_CONTEXT_TOKENS, estimate_tokens)
        return (time.perf_counter() - started) * 1000


async def sent_on_turn(turns: int) -> tuple[int, int, int, int]:
    """A session of ``turns`` turns of 4 KB each (the default budget): messages and KiB the
    history holds, and what the last turn sent, after the budget."""

    class Recording:
        sent: list[Any] = []

        async def fetch(self, messages: list[Any], tools: list[Any], emit: Any) -> None:
            self.sent = messages
            emit({"type": "saying", "text": "r" * 2000})

    with tempfile.TemporaryDirectory() as scratch:
        provider = Recording()
        session = Session(provider, Workspace(Path(scratch)))
        for n in range(turns):
            await session.turn(f"prompt {n} " + "p" * 2000)
        held = [*await session.messages(), user("next")]
        return len(held), len(json.dumps(held)) // 1024, len(provider.sent), len(json.dumps(provider.sent)) // 1024


def figure(values: list[float]) -> str:
    return f"{statistics.median(values):8.1f} ({min(values):.1f}–{max(values):.1f})"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--turns", type=int, default=500)
    args = parser.parse_args()
    results: dict[str, list[tuple[float, float]]] = {"none": [], "stored": []}
    for _ in range(args.runs):
        results["none"].append(await one_run(0))
        results["stored"].append(await one_run(args.turns))
    print(f"{'figure (ms)':38} {'no stored turns':>24} {f'{args.turns} stored turns':>24}")
    for index, name in enumerate(("spawn → initialize", "first turn: request → response")):
        print(f"{name:38} {figure([r[index] for r in results['none']]):>24} {figure([r[index] for r in results['stored']]):>24}")
    loads = [load_in_process(args.turns) for _ in range(args.runs)]
    print(f"{'in-process: read + rebuild + fit':38} {'-':>24} {figure(loads):>24}")
    held, held_kib, sent, sent_kib = await sent_on_turn(200)
    print(f"turn 200 of 4 KB turns: the history holds {held} messages ({held_kib} KiB); "
          f"sent: {sent} messages ({sent_kib} KiB) within 32,000 tokens")


if __name__ == "__main__":
    asyncio.run(main())
