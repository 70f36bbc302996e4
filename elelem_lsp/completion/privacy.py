"""Which files inline completion never reads from nor completes in.

Bridges a file's path in a folder to the rules of issue 30: ``.env`` and ``.env.*``, keys and
certificates, what the folder's ``.gitignore`` files (and ``.git/info/exclude``) leave out, and
the ``completion.exclude`` globs. Gitignore rules are read with ``pathspec`` as git reads them,
kept per file until the file changes. Next edit (issue 31) asks the same question.
"""

from __future__ import annotations

import fnmatch
from pathlib import Path

import pathspec

SECRET_NAMES: tuple[str, ...] = (
    ".env",
    ".env.*",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.crt",
    "*.cer",
    "*.der",
    "*.jks",
    "*.keystore",
)
SECRET_NAMES += ("id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "*.gpg", "*.asc", ".netrc", ".pgpass")
SSH_PUBLIC = "*.pub"  # a public key is no secret, though it is named like one


def secret_name(name: str) -> bool:
    """Whether a file's name says it holds keys, certificates or the environment's secrets."""
    lowered = name.lower()
    if fnmatch.fnmatchcase(lowered, SSH_PUBLIC):
        return False
    return any(fnmatch.fnmatchcase(lowered, pattern) for pattern in SECRET_NAMES)


class PrivateFiles:
    """One folder's rules: ask ``private(path)`` for any file, inside the folder or not."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._ignores: dict[Path, tuple[float, pathspec.GitIgnoreSpec | None]] = {}  # file -> (mtime, its rules)

    def private(self, path: Path, exclude: list[str] | tuple[str, ...] = ()) -> bool:
        if secret_name(path.name):
            return True
        try:
            relative = path.relative_to(self.root)
        except ValueError:
            return False  # outside the folder: only its name can tell
        if exclude and pathspec.GitIgnoreSpec.from_lines(exclude).match_file(relative.as_posix()):
            return True
        return self._ignored(relative)

    def _ignored(self, relative: Path) -> bool:
        """Whether git would ignore ``relative``: each ``.gitignore`` from the root down to its folder."""
        if relative.parts and relative.parts[0] == ".git":
            return True
        sources = [(self.root, self.root / ".git" / "info" / "exclude")]
        folder = self.root
        sources.append((folder, folder / ".gitignore"))
        for part in relative.parts[:-1]:
            folder = folder / part
            sources.append((folder, folder / ".gitignore"))
        for base, source in sources:
            rules = self._rules(source)
            if rules is not None and rules.match_file((self.root / relative).relative_to(base).as_posix()):
                return True
        return False

    def _rules(self, source: Path) -> pathspec.GitIgnoreSpec | None:
        try:
            mtime = source.stat().st_mtime
        except OSError:
            return None
        known = self._ignores.get(source)
        if known is None or known[0] != mtime:
            try:
                lines = source.read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                return None
            known = (mtime, pathspec.GitIgnoreSpec.from_lines(lines))
            self._ignores[source] = known
        return known[1]
