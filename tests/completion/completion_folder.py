"""The completion engine driven in-process, as the LSP face drives it, for one folder.

``EngineFolder`` holds a folder's files (open documents), its ``completion`` settings and the
provider, and asks the engine for a suggestion at a marked cursor (``|`` in the text).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from elelem_lsp.completion.context import OpenText
from elelem_lsp.completion.engine import Ask, CompletionEngine, FolderSource, Suggestion
from elelem_lsp.completion.settings import CompletionSettings

CURSOR = "|"


class EngineFolder:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.engine = CompletionEngine()
        self.failures: list[str] = []
        self.engine.on_failure = self.failures.append
        self.settings = CompletionSettings()
        self.provider: Any = None
        self.name = "llamacpp"
        self.model: str | None = None
        self.open: dict[str, tuple[str, float]] = {}  # path -> (text, last edited)

    def configure(self, **settings: Any) -> None:
        self.settings = CompletionSettings.model_validate(settings)

    def use(self, name: str, provider: Any, model: str | None = None) -> None:
        self.name, self.provider, self.model = name, provider, model

    def edit(self, name: str, text: str) -> None:
        self.open[name] = (text, time.monotonic())

    def source(self) -> FolderSource:
        async def settings() -> CompletionSettings:
            return self.settings

        return FolderSource("folder", self.root, settings, lambda _settings: (self.name, self.provider, self.model))

    async def complete(self, name: str, marked: str, language: str = "python") -> Suggestion | None:
        offset = marked.index(CURSOR)
        text = marked.replace(CURSOR, "", 1)
        self.edit(name, text)

        def others():
            ordered = sorted(((when, n, t) for n, (t, when) in self.open.items() if n != name), reverse=True)
            return [(self.root / n, OpenText(n, "python", t)) for _, n, t in ordered]

        ask = Ask((self.root / name).as_uri(), self.source(), self.root / name, OpenText(name, language, text), offset, others)
        return await self.engine.complete(ask)
