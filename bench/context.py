"""What the model reads besides the person's words, in tokens: the editor's context of a typical
ask, the system prompt, and the tool definitions; then, per face (the terminal, an editor over LSP
that announces navigation, ACP), the fixed part of a request (system prompt and tools, as sent) in
each prompt mode, and how many earlier turns of a typical conversation each window keeps.

The ask is made on a real checkout (this one, by default): a pygls workspace with a few documents
open, twelve lines selected in one of them, rendered by the LSP face's own function
(``server.documents.editor_context``) with git's real status. Tokens are the budget's estimate
(``agent.budget.estimate_tokens``: 3 ASCII characters a token, which errs high), the figure every
bound is checked against.

    python bench/context.py [--root .] [--runs 20]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types as lsp
from pygls.workspace import Workspace as PyglsWorkspace

from elelem_lsp.agent.budget import definitions_text, estimate_tokens
from elelem_lsp.agent.editor_context import CONTEXT_TOKENS
from elelem_lsp.agent.instructions import instructions
from elelem_lsp.agent.session import Session
from elelem_lsp.agent.toolbox import Toolbox
from elelem_lsp.server.documents import editor_context

sys.path[:0] = [str(Path(__file__).resolve().parent.parent / "tests")]
from navigating_workspace import workspace_and_toolbox  # noqa: E402  (the faces' workspaces, as the tests make them)

ACTIVE = "elelem_lsp/agent/session.py"
OPEN = ["README.md", "docs/contract.md", "elelem_lsp/agent/toolbox.py", "elelem_lsp/agent/budget.py", "tests/test_session.py"]
SELECTED = (180, 191)  # lines, from 1: twelve of them
WINDOWS = (2_000, 4_096, 8_192, 32_000)  # contextTokens
TURNS = 200  # of a typical conversation: a question of 300 characters, an answer of 600
FACES = {"terminal": "terminal", "LSP with navigation": "Visual Studio Code", "ACP": "Zed"}


class Recording:
    """A provider that answers 600 characters and keeps what it was sent."""

    def __init__(self) -> None:
        self.sent: tuple[list, list] = ([], [])

    async def fetch(self, messages: list, tools: list, emit) -> None:
        self.sent = (messages, tools)
        emit({"type": "saying", "text": "a" * 600})


def session_of(face: str, root: Path, setting: str, budget: int) -> tuple[Session, Recording]:
    provider = Recording()
    workspace, toolbox = workspace_and_toolbox(root, FACES[face], navigation=face == "LSP with navigation")
    session = Session(provider, workspace, toolbox=toolbox)
    session.prompt_setting, session.context_setting = setting, budget
    return session, provider


async def fixed_part(face: str, root: Path, setting: str, budget: int) -> str:
    """The fixed part of the first request of a conversation: characters, tokens, tools offered."""
    session, provider = session_of(face, root, setting, budget)
    await session.turn("hi")
    messages, tools = provider.sent
    text = messages[0]["content"] + definitions_text(tools)
    return f"{len(text):,} chars, {estimate_tokens(text):,} tokens, {len(tools)} tools"


async def turns_kept(face: str, root: Path, budget: int) -> str:
    """Earlier turns the last of ``TURNS`` turns still sends, and its prompt mode."""
    session, provider = session_of(face, root, "auto", budget)
    for n in range(TURNS):
        await session.turn(f"question {n} " + "q" * 290)
    messages, _ = provider.sent
    return f"{sum(m['role'] == 'user' for m in messages) - 1} ({session.prompt_mode})"


async def faces(root: Path) -> None:
    print("\nfixed part of a request (system prompt before AGENTS.md and tool definitions, JSON as sent), by the estimate:")
    for face in FACES:
        full = await fixed_part(face, root, "full", 32_000)
        compact = await fixed_part(face, root, "compact", 2_000)
        roomy = await fixed_part(face, root, "compact", 4_096)
        print(f"  {face:20} full: {full}; compact: {compact} (at contextTokens 2,000), {roomy} (at 4,096)")
    print(f"\nearlier turns kept after {TURNS} turns (question 300 characters, answer 600), by contextTokens:")
    for face in FACES:
        kept = [f"{budget:,}: {await turns_kept(face, root, budget)}" for budget in WINDOWS]
        print(f"  {face:20} " + ", ".join(kept))


def open_workspace(root: Path) -> PyglsWorkspace:
    """A pygls workspace as the server keeps it after the editor opened these documents."""
    workspace = PyglsWorkspace(root.as_uri())
    for name in [*OPEN, ACTIVE]:
        path = root / name
        language = {".py": "python", ".md": "markdown"}.get(path.suffix, "plaintext")
        workspace.put_text_document(lsp.TextDocumentItem(uri=path.as_uri(), language_id=language, version=1, text=path.read_text()))
    return workspace


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--runs", type=int, default=20)
    options = parser.parse_args()
    root = options.root.resolve()
    workspace = open_workspace(root)
    selection = lsp.Range(start=lsp.Position(line=SELECTED[0] - 1, character=0), end=lsp.Position(line=SELECTED[1] - 1, character=80))
    uri = (root / ACTIVE).as_uri()
    times, block = [], ""
    for _ in range(options.runs):
        started = time.perf_counter()
        block = await editor_context(workspace, root, uri, selection, trusted=True)
        times.append((time.perf_counter() - started) * 1000)
    print(block)
    print()
    system = instructions("editor", root)
    definitions = Toolbox().definitions()
    tools = definitions_text(definitions)  # as the APIs' clients send it
    print(f"editor context of a typical ask: {estimate_tokens(block):,} tokens (bound {CONTEXT_TOKENS:,}), {len(block):,} characters")
    print(f"  rendering it, git status included: median {statistics.median(times):.1f} ms, max {max(times):.1f} ms over {options.runs} runs")
    print(f"system prompt before AGENTS.md: {estimate_tokens(system):,} tokens, {len(system):,} characters")
    print(f"tool definitions ({len(definitions)} built-in tools): {estimate_tokens(tools):,} tokens, {len(tools):,} characters")
    with tempfile.TemporaryDirectory() as folder:  # a folder without AGENTS.md: the fixed part is ours alone
        project = Path(folder) / "project"
        project.mkdir()
        await faces(project)


if __name__ == "__main__":
    asyncio.run(main())
