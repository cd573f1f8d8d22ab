"""What the terminal shows: money to significant digits, never float noise."""

from __future__ import annotations

import pytest

from evalsite.cli.output import format_cell
from evalsite.runlog.money import format_usd


@pytest.mark.parametrize("value, shown", [
    (0.0027000000000000053, "$0.0027"),
    (12.3456, "$12.3"),
    (0.0, "$0"),
    (1234.5, "$1,234"),
    (6.83e-06, "$0.00000683"),  # a per-case cost of a cheap model: digits, never 6.83e-06
    (0.5, "$0.5"),
    (9.996, "$10"),
    (None, "unknown"),
    (float("nan"), "unknown"),
])
def test_dollars_are_shown_to_three_significant_digits(value, shown):
    assert format_usd(value) == shown


def test_only_dollar_columns_are_formatted_as_money():
    assert format_cell(0.0027000000000000053, "cost_usd") == "$0.0027"
    assert format_cell(0.0027000000000000053, "mean_score") == "0.003"
    assert format_cell(None, "cost_usd") == "—"
