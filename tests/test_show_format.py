"""``evalsite show`` prints every figure as the other commands do (money to its significant digits,
fractions to three decimals, yes/no, lists in words); ``--json`` keeps the raw values."""

from __future__ import annotations

from evalsite.runlog.money import format_usd


def fields_of(text: str) -> dict[str, str]:
    lines = text.split("\n\n")[0].splitlines()
    return {key: value.strip() for key, _, value in (line.partition("  ") for line in lines)}


def test_show_formats_money_fractions_booleans_and_lists(cli, example_with_runs):
    raw = cli.json("show", "sampler@latest")
    result = cli("show", "sampler@latest")
    assert result.exit_code == 0, result.output
    shown = fields_of(result.stdout)
    assert set(shown) == {key for key in raw if key not in ("evaluators", "top_errors")}
    for key in ("cost_usd", "cost_per_case", "cost_per_correct"):
        assert isinstance(raw[key], float) and shown[key] == format_usd(raw[key]), key
    assert shown["cost_per_case"].startswith("$0.00000") and len(shown["cost_per_case"]) <= 12  # not 6.833333333333333e-06
    assert shown["mean_score"] == f"{raw['mean_score']:.3f}" and shown["noise_std"] == f"{raw['noise_std']:.3f}"
    assert shown["latency_p50_ms"] == f"{raw['latency_p50_ms']:.1f}"
    assert (shown["unscored"], shown["passed"]) == ("no", "no") and raw["passed"] is False
    assert shown["critical_failures"] == "none" and raw["critical_failures"] == []
    assert shown["served_models"] == "none" and shown["scoring_cost_usd"] == "unknown"
    assert shown["cases"] == str(raw["cases"]) == "180"
    assert "False" not in result.stdout and "[]" not in result.stdout
