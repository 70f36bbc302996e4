"""Plugin trust: whether a folder's ``.agents/plugins`` may run.

A workspace's plugin files are code from the project, so the terminal client
(``ask``, ``chat``) and the ACP face never let the host import them silently.
This module is what every face shares: the folder's plugin files and the trust
file that remembers "always". Each face asks the person its own way (the
terminal client in ``client/trust_prompt.py``, the ACP face through
``session/request_permission``) and passes the answer on as the
``workspacePlugins`` setting. As with direnv's ``allow``, trust covers the
folder's resolved path and the exact plugin files (names and SHA-256 of their
contents): a new or edited file asks again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from ..agent.private_files import private_folder, state_dir, write_private

PLUGIN_FOLDER = Path(".agents") / "plugins"


@dataclass(frozen=True)
class PluginSet:
    """The plugin files of one workspace folder, by name, with the hash of each."""

    root: Path
    files: dict[str, str]

    @classmethod
    def scan(cls, root: Path) -> PluginSet:
        """The ``*.py`` files the server would load from ``root``, which is resolved first."""
        root = root.resolve()
        folder = root / PLUGIN_FOLDER
        files = {}
        for path in sorted(folder.glob("*.py")) if folder.is_dir() else []:
            with contextlib.suppress(OSError):  # unreadable: the server cannot load it either
                files[path.name] = hashlib.sha256(path.read_bytes()).hexdigest()
        return cls(root, files)

    def shown(self, cwd: Path | None = None) -> str:
        """The plugin folder as the person knows it: ``./.agents/plugins`` in the current folder."""
        cwd = (cwd or Path.cwd()).resolve()
        folder = self.root / PLUGIN_FOLDER
        if self.root == cwd:
            return f"./{PLUGIN_FOLDER}"
        return str(folder.relative_to(cwd)) if cwd in self.root.parents else str(folder)

    def changed_since(self, trusted: dict[str, str]) -> list[str]:
        """Files that are new or different from the ``trusted`` ones (a removed file is not a change)."""
        return [name for name, digest in self.files.items() if trusted.get(name) != digest]


def default_trust_file() -> Path:
    return state_dir() / "trusted-plugins.json"


class TrustStore:
    """The folders trusted with "always": a private JSON file of resolved paths and plugin hashes."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or default_trust_file()

    def _read(self) -> dict[str, dict[str, str]]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}  # missing or damaged: nothing is trusted, so the person is asked
        folders = data.get("folders") if isinstance(data, dict) else None
        if not isinstance(folders, dict):
            return {}
        return {
            str(root): {str(n): str(d) for n, d in files.items()} for root, files in folders.items() if isinstance(files, dict)
        }

    def trusted_files(self, plugins: PluginSet) -> dict[str, str] | None:
        """The files trusted for this folder, or None when the folder was never trusted."""
        return self._read().get(str(plugins.root))

    def trusts(self, plugins: PluginSet) -> bool:
        trusted = self.trusted_files(plugins)
        return trusted is not None and not plugins.changed_since(trusted)

    def remember(self, plugins: PluginSet) -> None:
        """Trust this folder with exactly these files; written whole, readable by its owner only."""
        folders = self._read()
        folders[str(plugins.root)] = dict(plugins.files)
        private_folder(self.path.parent)
        write_private(self.path, json.dumps({"folders": folders}, indent=2, sort_keys=True).encode("utf-8"))
