"""The ``completion`` settings object of a folder, as a pydantic model.

Bridges the editor's ``elelem.completion`` settings (``host/settings.py`` holds the object in a
folder's ``Settings``) to the completion engine: which provider and model fill the hole, how
much they may write, when several lines are wanted, what is never sent, and whether a paid API
may be asked at all. Next edit (issue 31) takes the same shape for its own object.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

# The ways a provider is asked to fill the hole (docs/completion.md, "Routes").
API = Literal["auto", "completions", "infill", "ollama", "ollama-raw", "mistral-fim", "fim-tokens", "chat", "plugin"]


class LenientSettings(BaseModel):
    """A settings object in which a bad value loses only itself: it takes its default, and
    ``problems`` names it (``section`` is the object's name in the settings)."""

    model_config = ConfigDict(populate_by_name=True, extra="ignore")
    section: ClassVar[str]
    _problems: list[str] = PrivateAttr(default_factory=list)

    @model_validator(mode="wrap")
    @classmethod
    def each_field_alone(cls, raw: Any, handler: Any) -> Any:
        """A bad value loses only itself: it takes its default, and ``problems`` names it."""
        if not isinstance(raw, dict):
            return handler(raw)
        values = {key: value for key, value in raw.items() if value is not None}
        problems: list[str] = []
        while True:
            try:
                settings = handler(values)
                break
            except ValidationError as error:
                bad = {str(item["loc"][0]) for item in error.errors() if item["loc"]} & values.keys()
                if not bad:
                    raise
                for key in sorted(bad):
                    problems.append(f"invalid value for elelem.{cls.section}.{key}: {values.pop(key)!r}; using the default")
        settings._problems = problems
        return settings

    @property
    def problems(self) -> list[str]:
        """The values that were left out, one line each."""
        return list(self._problems)


class CompletionSettings(LenientSettings):
    """``elelem.completion``: ghost text from the folder's providers."""

    section: ClassVar[str] = "completion"
    enabled: bool | None = None  # None: on for a local provider, off for a paid API (it costs per request)
    provider: str | None = None  # None: the folder's own provider
    model: str | None = None  # None: the folder's model when the provider is the folder's, else the provider's
    max_tokens: int = Field(default=128, alias="maxTokens", ge=1, le=4096)
    multiline: Literal["auto", "never", "always"] = "auto"
    exclude: list[str] = Field(default_factory=list)  # globs of files never sent, relative to the folder
    api: API = "auto"
    menu: bool = False  # also answer textDocument/completion with the suggestion (Helix, Kate)
    debounce_ms: int = Field(default=120, alias="debounceMs", ge=0, le=2000)  # wait within a burst of keystrokes
    prefix_tokens: int = Field(default=1500, alias="prefixTokens", ge=16, le=32000)
    suffix_tokens: int = Field(default=500, alias="suffixTokens", ge=0, le=32000)
    snippet_tokens: int = Field(default=500, alias="snippetTokens", ge=0, le=32000)  # from the other open documents
