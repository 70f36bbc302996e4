"""Applying a ``WorkspaceEdit`` to files on disk, as an editor would apply it to buffers.

Every file is written through a temporary file and a rename, so an edit that
fails halfway leaves no half-written file behind. A file keeps its byte-order mark
and its line endings; one with several hard links, or not in UTF-8, is refused as
the server's own disk writes refuse it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from pygls.uris import to_fs_path

from ..agent.textfile import StoredText
from ..agent.workspace import read_stored_for_writing, write_atomically
from ..textedits import Change, Position, apply_changes


def _path(uri: str) -> Path:
    path = to_fs_path(uri)
    if path is None:
        raise ValueError(f"not a file URI: {uri}")
    return Path(path)


def _change(edit: Any) -> Change:
    r = edit.range
    return Change(Position(r.start.line, r.start.character), Position(r.end.line, r.end.character), edit.new_text)


def _edit_file(uri: str, edits: list[Any], encoding: str) -> None:
    path = _path(uri)
    stored = read_stored_for_writing(path, str(path)) or StoredText("")
    write_atomically(path, stored.encode(apply_changes(stored.text, [_change(e) for e in edits], encoding)))


def apply_workspace_edit(edit: lsp.WorkspaceEdit, encoding: str = "utf-16") -> None:
    for change in edit.document_changes or []:
        if isinstance(change, lsp.CreateFile):
            path = _path(change.uri)
            options = change.options
            if path.exists() and not (options and options.overwrite):
                if options and options.ignore_if_exists:
                    continue
                raise ValueError(f"{path} already exists")
            write_atomically(path, "")
        elif isinstance(change, lsp.TextDocumentEdit):
            _edit_file(change.text_document.uri, list(change.edits), encoding)
        else:
            raise ValueError(f"unsupported change: {type(change).__name__}")
    for uri, edits in (edit.changes or {}).items():
        _edit_file(uri, list(edits), encoding)
