"""The ``completion`` settings object: a bad value loses only itself, and an untrusted folder
cannot turn completion on for a paid API."""

from __future__ import annotations

from elelem_lsp.host.settings import parse_settings, within_trust


def test_a_bad_value_takes_its_default_and_is_named():
    settings, problems = parse_settings({"completion": {"enabled": True, "multiline": "sometimes", "maxTokens": 0}})
    assert settings.completion.enabled is True  # the good value stands
    assert (settings.completion.multiline, settings.completion.max_tokens) == ("auto", 128)
    assert settings.completion.problems == [
        "invalid value for elelem.completion.maxTokens: 0; using the default",
        "invalid value for elelem.completion.multiline: 'sometimes'; using the default",
    ]
    assert problems == []


def test_an_untrusted_folder_cannot_turn_completion_on():
    settings, _ = parse_settings({"trusted": False, "completion": {"enabled": True, "model": "small"}})
    limited, ignored = within_trust(settings)
    assert limited.completion.enabled is None and limited.completion.model == "small"
    assert any(item.startswith("completion.enabled") for item in ignored)
    off, _ = within_trust(parse_settings({"trusted": False, "completion": {"enabled": False}})[0])
    assert off.completion.enabled is False  # turning it off is no loosening
