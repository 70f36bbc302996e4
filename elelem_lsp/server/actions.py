"""Code actions: "Fix with elelem" for each diagnostic, "Explain with elelem" for a selection."""

from __future__ import annotations

from typing import Any

from lsprotocol import types as lsp


def _range(r: lsp.Range) -> dict[str, Any]:
    return {
        "start": {"line": r.start.line, "character": r.start.character},
        "end": {"line": r.end.line, "character": r.end.character},
    }


def _diagnostic(d: lsp.Diagnostic) -> dict[str, Any]:
    value: dict[str, Any] = {"message": d.message, "range": _range(d.range)}
    if d.code is not None:
        value["code"] = d.code
    if d.source:
        value["source"] = d.source
    if d.severity is not None:
        value["severity"] = int(d.severity)
    return value


def code_actions(params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
    """The actions for the request, limited to the kinds it asks for with ``only``."""
    actions = _all_actions(params)
    if params.context.only:
        wanted = [_kind(k) for k in params.context.only]
        actions = [a for a in actions if any(_kind(a.kind) == k or _kind(a.kind).startswith(f"{k}.") for k in wanted)]
    return actions


def _kind(kind: Any) -> str:
    return str(getattr(kind, "value", kind))


def _all_actions(params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
    uri = params.text_document.uri
    actions = []
    for diagnostic in params.context.diagnostics:
        title = f"Fix with elelem: {diagnostic.message.splitlines()[0][:60]}" if diagnostic.message else "Fix with elelem"
        argument = {"uri": uri, "range": _range(diagnostic.range), "diagnostics": [_diagnostic(diagnostic)]}
        actions.append(
            lsp.CodeAction(
                title=title,
                kind=lsp.CodeActionKind.QuickFix,
                diagnostics=[diagnostic],
                command=lsp.Command(title=title, command="elelem.fix", arguments=[argument]),
            )
        )
    selection = params.range
    if selection.start != selection.end:
        argument = {"prompt": "Explain this code.", "uri": uri, "range": _range(selection)}
        actions.append(
            lsp.CodeAction(
                title="Explain with elelem",
                kind=lsp.CodeActionKind.Refactor,
                command=lsp.Command(title="Explain with elelem", command="elelem.ask", arguments=[argument]),
            )
        )
    return actions
