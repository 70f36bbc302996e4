"""A session's config options: its provider and model, as ACP ``select`` options a client shows,
and switching them (from ``session/set_config_option`` or the ``/provider``, ``/model`` commands)."""

from __future__ import annotations

from acp.schema import SessionConfigOptionBoolean, SessionConfigOptionSelect, SessionConfigSelectOption

from ..host.folder_agent import FolderAgent
from ..providers.remote.presets import PRESETS

DEFAULT_MODEL = "default"
# Models a person may pick from, by provider, besides the provider's own default ("default") and
# the model the settings name; /model NAME takes any other.
KNOWN_MODELS: dict[str, tuple[str, ...]] = {
    "openai": ("gpt-4.1", "gpt-4.1-mini", "gpt-4o", "gpt-4o-mini", "gpt-5", "gpt-5-mini", "o3", "o4-mini"),
    "anthropic": ("claude-sonnet-4-5", "claude-opus-4-1", "claude-haiku-4-5"),
    "vertex": ("claude-sonnet-4-5@20250929", "claude-opus-4-1@20250805", "claude-haiku-4-5@20251001"),
    "ollama": ("gpt-oss:latest",),
    **{name: (preset.model,) for name, preset in PRESETS.items() if preset.model},
}


async def config_options(agent: FolderAgent) -> list[SessionConfigOptionSelect | SessionConfigOptionBoolean]:
    info = await agent.providers()
    names = list(dict.fromkeys([info["provider"], *info["available"]]))
    declared = [d.model for d in agent.settings.providers if d.name == info["provider"] and d.model]
    models = list(
        dict.fromkeys(
            [
                DEFAULT_MODEL,
                *KNOWN_MODELS.get(info["provider"], ()),
                *declared,
                *([info["model"]] if info["model"] else []),
            ]
        )
    )
    return [
        SessionConfigOptionSelect(
            type="select",
            id="provider",
            name="Provider",
            description="Where the model runs",
            current_value=info["provider"],
            options=[SessionConfigSelectOption(value=n, name=n) for n in names],
        ),
        SessionConfigOptionSelect(
            type="select",
            id="model",
            name="Model",
            category="model",
            description="The provider's model (default: the provider's own choice); /model NAME picks any",
            current_value=info["model"] or DEFAULT_MODEL,
            options=[SessionConfigSelectOption(value=m, name=m) for m in models],
        ),
    ]


async def select(agent: FolderAgent, provider: str | None, model: str | None) -> None:
    """Switch provider and/or model, keeping the conversation; Refused says why not."""
    choice = agent.provider_choice.choice()
    name = provider or choice.name
    await agent.select_provider(name, model if model != DEFAULT_MODEL else None)
