"""What the model reads besides the person's words, in tokens: the editor's context of a typical
ask, the system prompt, and the tool definitions.

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
import json
import statistics
import time
from pathlib import Path

from lsprotocol import types as lsp
from pygls.workspace import Workspace as PyglsWorkspace

from elelem_lsp.agent.budget import estimate_tokens
from elelem_lsp.agent.editor_context import CONTEXT_TOKENS
from elelem_lsp.agent.instructions import instructions
from elelem_lsp.agent.toolbox import Toolbox
from elelem_lsp.server.documents import editor_context

ACTIVE = "elelem_lsp/agent/session.py"
OPEN = ["README.md", "docs/contract.md", "elelem_lsp/agent/toolbox.py", "elelem_lsp/agent/budget.py", "tests/test_session.py"]
SELECTED = (180, 191)  # lines, from 1: twelve of them


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
    tools = json.dumps(definitions, ensure_ascii=False)
    print(f"editor context of a typical ask: {estimate_tokens(block):,} tokens (bound {CONTEXT_TOKENS:,}), {len(block):,} characters")
    print(f"  rendering it, git status included: median {statistics.median(times):.1f} ms, max {max(times):.1f} ms over {options.runs} runs")
    print(f"system prompt before AGENTS.md: {estimate_tokens(system):,} tokens, {len(system):,} characters")
    print(f"tool definitions ({len(definitions)} built-in tools): {estimate_tokens(tools):,} tokens, {len(tools):,} characters")


if __name__ == "__main__":
    asyncio.run(main())
