"""The ``nextEdit`` settings object of a folder.

Bridges the editor's ``elelem.nextEdit`` settings to the next-edit bridge: whether suggestions are
made, by which provider and model (by default the ones completion uses, so a folder set up for
ghost text gets next edits from the same model), how the model is asked, and how much it may write.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from ..completion.settings import LenientSettings


class NextEditSettings(LenientSettings):
    """``elelem.nextEdit``: edits suggested after a change."""

    section: ClassVar[str] = "nextEdit"
    enabled: bool | None = None  # None: as completion decides (on for a local provider, off for a paid API)
    provider: str | None = None  # None: completion's provider
    model: str | None = None  # None: completion's model when the provider is completion's
    # chat: the Zeta form explained to any chat model; raw: the Zeta prompt as it is (a Zeta model
    # served by Ollama or an OpenAI-compatible server); auto: raw for a model named zeta, else chat
    api: Literal["auto", "chat", "raw"] = "auto"
    max_tokens: int = Field(default=1024, alias="maxTokens", ge=16, le=8192)
