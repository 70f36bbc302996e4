"""Documents and folders named by LSP URIs: the local path of a URI, and the text of a
place in a document (the open buffer's, in the negotiated position encoding) for a prompt."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcInvalidParams
from pygls.uris import to_fs_path
from pygls.workspace import Workspace

from ..agent.textfile import for_model

URI_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


def document_path(uri: str) -> Path | None:
    """The local path of a document's ``file:`` URI; None for any other scheme.

    Not a URI at all, a file on another host, or a path with a NUL is
    InvalidParams naming ``uri``.
    """
    if not URI_SCHEME.match(uri) or any(ord(c) < 0x20 for c in uri):
        raise JsonRpcInvalidParams(f"uri: not a URI: {uri[:120]!r}")
    if not uri.lower().startswith("file:"):
        return None
    try:
        host = urlparse(uri).netloc
    except ValueError:
        raise JsonRpcInvalidParams(f"uri: not a URI: {uri[:120]!r}") from None
    if host not in ("", "localhost"):
        raise JsonRpcInvalidParams(f"uri: {uri[:120]} is a file on another host")
    path = unquote(urlparse(uri).path) if host else to_fs_path(uri) or ""
    if not path or "\x00" in path:
        raise JsonRpcInvalidParams(f"uri: {uri[:120]!r} names no usable path")
    return Path(path).resolve()


def folder_path(uri: str) -> Path:
    """A workspace folder's root; a folder the editor names by another scheme is taken by its path."""
    path = to_fs_path(uri) or unquote(urlparse(uri).path)
    return Path(path).resolve()


def describe_location(workspace: Workspace, root: Path, uri: str, range_: Any, context_lines: int = 0) -> str:
    """The file and the selected lines, for a prompt about a place in the code.

    A document that is not a file is described from the text the editor sent
    (if it sent any), under its URI; no path is made up for it.
    """
    path = document_path(uri)
    if path is None:
        label, name, document = "Buffer", uri, workspace.text_documents.get(unquote(uri))
        if document is None:
            return f"Buffer: {uri} (the editor has not sent its text)"
    elif path.is_dir():
        return ""
    else:
        name = path.relative_to(root).as_posix() if root in path.parents else str(path)
        label, document = "File", workspace.get_text_document(uri)
    try:
        lines = document.lines
    except OSError:
        return f"{label}: {name} (not readable)"
    if range_ is None:
        return f"{label}: {name}"
    start = document.position_codec.position_from_client_units(
        lines, lsp.Position(line=range_.start.line, character=range_.start.character)
    )
    end = document.position_codec.position_from_client_units(
        lines, lsp.Position(line=range_.end.line, character=range_.end.character)
    )
    first, last = max(0, start.line - context_lines), min(len(lines), end.line + 1 + context_lines)
    selected = for_model("".join(lines[first:last]))  # the model sees "\n" breaks, as read gives them
    where = f"lines {first + 1}-{last}" if last > first + 1 else f"line {first + 1}"
    return f"{label}: {name} ({where})\n```\n{selected.rstrip()}\n```"
