"""The price table: what a fetch's tokens cost, the models it does not know, and the setting
that overrides it."""

from __future__ import annotations

import datetime

import pytest

from elelem_lsp.host.settings import parse_settings
from elelem_lsp.providers.prices import PRICES, PRICES_AS_OF, Price, cost


def test_a_known_model_costs_its_list_price():
    assert cost("claude-sonnet-4-5", 1_000_000, 1_000_000) == pytest.approx(18.0)
    assert cost("gpt-4.1", 2_000, 500) == pytest.approx(2_000 * 2.0 / 1e6 + 500 * 8.0 / 1e6)
    assert cost("gemini-2.5-flash", 0, 0) == 0.0


@pytest.mark.parametrize("model", ["claude-sonnet-4-5-20250929", "claude-sonnet-4-5@20250929"])
def test_anthropic_snapshots_on_either_api_cost_what_their_alias_costs(model):
    assert cost(model, 1_000_000, 0) == pytest.approx(3.0)


@pytest.mark.parametrize("model", ["my-finetune", "gpt-4o-2024-05-13", "anthropic/claude-sonnet-4.5", ""])
def test_a_model_not_in_the_table_has_no_cost(model):
    assert cost(model, 1000, 1000) is None


def test_the_setting_wins_over_the_table_and_prices_models_it_lacks():
    overrides = {"gpt-4.1": Price(1.0, 2.0), "my-finetune": Price(0.5, 0.5)}
    assert cost("gpt-4.1", 1_000_000, 1_000_000, overrides) == pytest.approx(3.0)
    assert cost("my-finetune", 2_000_000, 0, overrides) == pytest.approx(1.0)
    assert cost("claude-haiku-4-5", 1_000_000, 0, overrides) == pytest.approx(1.0)  # others as in the table


def test_the_prices_setting_as_a_person_writes_it():
    settings, problems = parse_settings({"prices": {"gpt-4.1": {"input": 1.5, "output": 6}}})
    assert problems == []
    assert cost("gpt-4.1", 1_000_000, 1_000_000, settings.prices) == pytest.approx(7.5)


def test_a_wrong_prices_setting_is_named_and_the_table_used():
    settings, problems = parse_settings({"prices": {"gpt-4.1": {"input": -1, "output": 6}}})
    assert len(problems) == 1 and problems[0].startswith("invalid value for elelem.prices:")
    assert cost("gpt-4.1", 1_000_000, 0, settings.prices) == pytest.approx(2.0)


def test_the_table_is_dated_and_no_entry_is_zero_or_has_its_sides_swapped():
    assert datetime.date.fromisoformat(PRICES_AS_OF) <= datetime.date.today()
    assert all(price.input > 0 and price.output >= price.input for price in PRICES.values())
