"""The user's settings file, for the faces whose client has no settings of its own: the
terminal client (``ask``, ``chat``) and the ACP face.

``settings.json`` in the user's config directory (``~/.config/elelem-lsp/`` on
Linux, from platformdirs) holds the same keys as the editor settings
(``providers``, ``maxSteps``, ``temperature``, ``allowCommands``, ...); the
terminal client sends them to the server as its settings, command-line flags on
top; the ACP face hands them to the host as each folder's settings.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..agent.private_files import config_dir


class SettingsFileError(Exception):
    """The settings file exists but is not a JSON object."""


def settings_path() -> Path:
    return config_dir() / "settings.json"


def read_user_settings(path: Path | None = None) -> dict[str, Any]:
    """The file's settings; none when it does not exist."""
    path = path or settings_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as error:
        raise SettingsFileError(f"{path}: {error.strerror or error}") from None
    try:
        settings = json.loads(text)
    except json.JSONDecodeError as error:
        raise SettingsFileError(f"{path}: not valid JSON (line {error.lineno}: {error.msg})") from None
    if not isinstance(settings, dict):
        raise SettingsFileError(f"{path}: expected a JSON object of settings, got {type(settings).__name__}")
    return settings
