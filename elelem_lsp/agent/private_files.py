"""Where elelem keeps its own files, and how it makes them private to their owner.

Bridges the user's state and config folders (``platformdirs``: ``~/.local/state/elelem-lsp``
and ``~/.config/elelem-lsp`` on Linux) to the modules that write there: conversations,
transcripts, the plugin trust store, the chat's prompt history. Every folder made here is 0700
and every file 0600 whatever the umask: the mode is set again after the folder or file is made,
since ``mkdir`` and ``open`` only ever take bits away from it (a umask of 0200 would leave a
file its owner cannot write; a parent made by ``mkdir(parents=True)`` ignores ``mode``).
Files are opened without following a symlink planted in their place.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

from platformdirs import user_config_dir, user_state_dir

APP = "elelem-lsp"
FOLDER_MODE = 0o700
FILE_MODE = 0o600
NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)


def state_dir() -> Path:
    """Where elelem keeps what it stores between runs (conversations, trust, transcripts, history)."""
    return Path(user_state_dir(APP, appauthor=False))


def config_dir() -> Path:
    """Where the person keeps elelem's settings (``settings.json``)."""
    return Path(user_config_dir(APP, appauthor=False))


def private_folder(path: Path) -> Path:
    """``path`` as a folder, made with each missing parent 0700; one that exists is left as it is."""
    missing = [folder for folder in (path, *path.parents) if not folder.exists()]
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):  # another process made it meanwhile
            folder.mkdir(FOLDER_MODE)
            os.chmod(folder, FOLDER_MODE, follow_symlinks=False)
    return path


def open_private(path: Path, flags: int) -> int:
    """A descriptor of the file at ``path`` (made 0600 if ``flags`` create it), never through a symlink."""
    descriptor = os.open(path, flags | NO_FOLLOW, FILE_MODE)
    if flags & os.O_CREAT:
        try:
            os.fchmod(descriptor, FILE_MODE)
        except BaseException:
            os.close(descriptor)
            raise
    return descriptor


def write_private(path: Path, content: bytes) -> None:
    """Write ``path`` whole and atomically, 0600: a reader sees the old file or the new, never half."""
    temporary = path.parent / f".{path.name}-{secrets.token_hex(4)}"
    descriptor = open_private(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        with os.fdopen(descriptor, "wb") as file:  # writes all of it, where one os.write may not
            file.write(content)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def create_private(path: Path, content: bytes) -> bool:
    """Write a new file at ``path``, 0600; False when one is there already (nothing is written)."""
    try:
        descriptor = open_private(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    except FileExistsError:
        return False
    with os.fdopen(descriptor, "wb") as file:
        file.write(content)
    return True
