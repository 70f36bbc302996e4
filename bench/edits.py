"""How long an edit in a big open document takes to become a `workspace/applyEdit`.

Measured through the real code path in-process: the Toolbox runs `edit` or `write`
on the host's FrontendWorkspace, through the LSP front end (LspFrontend) of a stand-in
server holding a real pygls workspace with the document open; the stand-in's `workspace_apply_edit_async` turns the params into JSON as
pygls does before sending, and the clock stops there. The floor is the part any
implementation pays: building and serialising the same one-line applyEdit for a
range already known; "locate" adds finding the old text in the model's text and
counting the lines before it, which an edit of a text it has not seen must do.

    python bench/edits.py [--lines 50000] [--runs 30]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path

from lsprotocol import types as lsp
from pygls.protocol import default_converter
from pygls.workspace import Workspace as PyglsWorkspace

from elelem_lsp.agent.toolbox import Toolbox
from elelem_lsp.host.settings import Settings
from elelem_lsp.host.workspace import FrontendWorkspace
from elelem_lsp.server.editor import LspFrontend

CONVERTER = default_converter()


class StandInServer:
    """What LspFrontend asks of the language server for an edit, with sending replaced by serialising."""

    client_capabilities = lsp.ClientCapabilities(
        workspace=lsp.WorkspaceClientCapabilities(
            apply_edit=True,
            workspace_edit=lsp.WorkspaceEditClientCapabilities(
                change_annotation_support=lsp.ChangeAnnotationsSupportOptions()
            ),
        )
    )

    def __init__(self, root: Path) -> None:
        self.workspace = PyglsWorkspace(root.as_uri())
        self.sent_at = 0.0
        self.sent: list[lsp.ApplyWorkspaceEditParams] = []

    async def workspace_apply_edit_async(self, params: lsp.ApplyWorkspaceEditParams) -> lsp.ApplyWorkspaceEditResult:
        json.dumps(CONVERTER.unstructure(params))
        self.sent_at = time.perf_counter()
        self.sent.append(params)
        return lsp.ApplyWorkspaceEditResult(applied=False)  # the buffer stays as it was for the next run


def document(lines: int, newline: str, astral: bool) -> str:
    mark = " 😀" if astral else ""
    return "".join(f"line {n}: the quick brown fox jumps over the lazy dog{mark}{newline}" for n in range(lines))


def locate_once(model: str, old: str) -> float:
    started = time.perf_counter()
    model.count("\n", 0, model.find(old))
    return time.perf_counter() - started


def floor_once(server: StandInServer, uri: str, line: int) -> float:
    started = time.perf_counter()
    range_ = lsp.Range(start=lsp.Position(line=line, character=0), end=lsp.Position(line=line, character=4))
    edit = lsp.WorkspaceEdit(document_changes=[lsp.TextDocumentEdit(
        text_document=lsp.OptionalVersionedTextDocumentIdentifier(uri=uri, version=1),
        edits=[lsp.AnnotatedTextEdit(range=range_, new_text="LINE", annotation_id="elelem")])],
        change_annotations={"elelem": lsp.ChangeAnnotation(label="elelem: edit big.txt")})
    json.dumps(CONVERTER.unstructure(lsp.ApplyWorkspaceEditParams(edit=edit, label="elelem: edit big.txt")))
    return time.perf_counter() - started


async def tool_once(toolbox: Toolbox, workspace: FrontendWorkspace, server: StandInServer, name: str, args: dict) -> float:
    started = time.perf_counter()
    await toolbox.call(name, args, workspace)
    return server.sent_at - started


def row(label: str, seconds: list[float]) -> str:
    ms = [s * 1000 for s in seconds]
    return f"{label:<34} median {statistics.median(ms):7.2f} ms   min-max {min(ms):6.2f}-{max(ms):6.2f} ms"


async def main(lines: int, runs: int) -> None:
    toolbox = Toolbox()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder).resolve()
        for newline, astral in (("\n", False), ("\r\n", False), ("\n", True)):
            server = StandInServer(root)
            editor = LspFrontend(server)  # type: ignore[arg-type]
            workspace = FrontendWorkspace(root, Settings, documents=editor, person=editor, progress=editor, face=editor, client=editor.name)
            text = document(lines, newline, astral)
            path = root / "big.txt"
            path.write_text(text, newline="")
            uri = path.as_uri()
            server.workspace.put_text_document(lsp.TextDocumentItem(uri=uri, language_id="plaintext", version=1, text=text))
            middle = lines // 2
            old = f"line {middle}: the quick"
            edit_args = {"path": "big.txt", "old": old, "new": f"LINE {middle}: the quick"}
            model = text.replace("\r\n", "\n")
            write_args = {"path": "big.txt", "content": model.replace(old, f"LINE {middle}: the quick")}
            timings: dict[str, list[float]] = {"edit": [], "write": [], "floor": [], "locate": []}
            for _ in range(runs):
                timings["edit"].append(await tool_once(toolbox, workspace, server, "edit", edit_args))
                timings["write"].append(await tool_once(toolbox, workspace, server, "write", write_args))
                timings["floor"].append(floor := floor_once(server, uri, middle))
                timings["locate"].append(floor + locate_once(model, old))
            for params in server.sent:
                [change] = params.edit.document_changes
                [sent] = change.edits
                assert sent.range.start.line == sent.range.end.line == middle, sent.range
            kind = ("CRLF" if newline == "\r\n" else "LF") + (", astral" if astral else "")
            print(f"{lines:,} lines ({len(text.encode()) / 1e6:.1f} MB, {kind}), {runs} runs; applyEdit sent after:")
            print("  " + row("edit (one line, known span)", timings["edit"]))
            print("  " + row("write (whole text, diffed)", timings["write"]))
            print("  " + row("floor (known range, serialised)", timings["floor"]))
            print("  " + row("floor + locate (find, count lines)", timings["locate"]))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=30)
    options = parser.parse_args()
    asyncio.run(main(options.lines, options.runs))
