"""Documents and folders named by LSP URIs: the local path of a URI, the text of a place in a
document (the open buffer's, in the negotiated position encoding) for a prompt, and the editor's
context of an ask (the documents pygls keeps from didOpen/didChange)."""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcInvalidParams
from pygls.uris import to_fs_path
from pygls.workspace import Workspace

from ..agent.editor_context import READ_AGAIN_AFTER_ASK, ActiveDocument, EditorContext, describe_active, known_changes, render
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
    return resolved(path)


@functools.lru_cache(maxsize=4096)
def resolved(path: str) -> Path:
    """``path`` with its links followed, found once: every ask names each open document again, and
    following a path asks the file system about each of its folders."""
    return Path(path).resolve()


def named_path(uri: str, resolved: Path) -> Path:
    """A document's path as the editor names it: its folder resolved, its own name kept (a
    symlink's, not its target's: a ``.env`` linked to an ordinary name is still a ``.env``)."""
    named = to_fs_path(uri)
    return Path(named).parent.resolve() / Path(named).name if named else resolved


def folder_path(uri: str) -> Path:
    """A workspace folder's root; a folder the editor names by another scheme is taken by its path."""
    path = to_fs_path(uri) or unquote(urlparse(uri).path)
    return resolved(path)


def active_document(workspace: Workspace, root: Path, uri: str, range_: Any, context_lines: int = 0) -> ActiveDocument | None:
    """The document asked from and the selected lines (``context_lines`` more on each side), for a
    prompt about a place in the code; None for a folder.

    A document that is not a file is described from the text the editor sent
    (if it sent any), under its URI; no path is made up for it.
    """
    path = document_path(uri)
    if path is None:
        label, name, document = "Buffer", uri, workspace.text_documents.get(unquote(uri))
        if document is None:
            return ActiveDocument(uri, label, note="the editor has not sent its text")
    elif path.is_dir():
        return None
    else:
        label, name, document = "File", document_name(path, root), workspace.get_text_document(uri)
    try:
        lines = document.lines
    except OSError:
        return ActiveDocument(name, label, note="not readable")
    if range_ is None:
        return ActiveDocument(name, label, document.language_id)
    start = document.position_codec.position_from_client_units(
        lines, lsp.Position(line=range_.start.line, character=range_.start.character)
    )
    end = document.position_codec.position_from_client_units(
        lines, lsp.Position(line=range_.end.line, character=range_.end.character)
    )
    first, last = max(0, start.line - context_lines), min(len(lines), end.line + 1 + context_lines)
    selected = for_model("".join(lines[first:last]))  # the model sees "\n" breaks, as read gives them
    return ActiveDocument(name, label, document.language_id, (first + 1, max(last, first + 1)), selected)


def describe_location(workspace: Workspace, root: Path, uri: str, range_: Any, context_lines: int = 0) -> str:
    """The file and the selected lines, for a prompt about a place in the code."""
    active = active_document(workspace, root, uri, range_, context_lines)
    return describe_active(active) if active else ""


def document_name(path: Path, root: Path) -> str:
    """A file as the model names it: relative to the folder's root when it is inside."""
    return path.relative_to(root).as_posix() if root in path.parents else str(path)


def open_documents(workspace: Workspace, root: Path, active: str | None = None) -> list[str]:
    """The documents open in the editor (didOpen, not yet didClose) but the ``active`` one's URI,
    named as the model names them."""
    names = []
    for uri in workspace.text_documents:
        if active is not None and uri in (active, unquote(active)):  # pygls keeps a URI unquoted
            continue
        try:
            path = document_path(uri)
        except JsonRpcInvalidParams:
            path = None  # a URI the editor made up is still the name it knows the document by
        names.append(uri if path is None else document_name(path, root))
    return names


async def editor_context(workspace: Workspace, root: Path, uri: str | None, range_: Any, *, trusted: bool) -> str:
    """The editor's context of an ask (``agent.editor_context``): the document and selection it
    came from, the other open documents, and git's state of the folder as last read (never
    waited for: it is read again once this ask's request is out, for the next ask)."""
    active = active_document(workspace, root, uri, range_) if uri is not None else None
    known = known_changes(root) if trusted else None
    block = await render(EditorContext(root, active, open_documents(workspace, root, uri), trusted, known))
    if known is not None:
        known.refresh(READ_AGAIN_AFTER_ASK)
    return block
