"""Issue 26 item 7: the detectable effect and the units needed are calibrated on the test the
verdict runs. Power at the stated MDE / required n is measured by a seeded simulation of the
two-sided sign-flip test (an independent vectorised implementation over shared random sign
patterns), on pass/fail and continuous differences, with and without clusters: 80% ± 3 points."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as scipy_stats

from evalsite.stats.power import min_detectable_effect, required_n

SIMULATIONS = 1000
ALPHA = 0.05


def rejection_rate(units: np.ndarray, alpha: float = ALPHA, patterns: int = 999) -> float:
    """Share of datasets (rows of unit differences) the two-sided sign-flip test rejects at alpha."""
    signs = np.random.default_rng(1).integers(0, 2, (patterns, units.shape[1])) * 2.0 - 1.0
    totals = np.abs(units @ signs.T)
    observed = np.abs(units.sum(axis=1, keepdims=True)) - 1e-9 * np.abs(units).sum(axis=1, keepdims=True)
    p_values = (1 + (totals >= observed).sum(axis=1)) / (patterns + 1)
    return float(np.mean(p_values < alpha))


def pass_fail(rng: np.random.Generator, rows: int, n: int, discordant: float, delta: float) -> np.ndarray:
    """Differences of two pass/fail arms: ±1 on a share ``discordant`` of items, mean ``delta``."""
    u = rng.random((rows, n))
    return np.where(u < (discordant + delta) / 2, 1.0, np.where(u < discordant, -1.0, 0.0))


def clustered(rng: np.random.Generator, rows: int, clusters: int, delta: float, binary: bool, size: int = 8) -> np.ndarray:
    """Cluster means of item differences with strong cluster effects (the units the test flips)."""
    if binary:
        rates = rng.beta(2, 3, (rows, clusters, 1))  # each cluster its own share of discordant items
        u = rng.random((rows, clusters, size))
        items = np.where(u < rates * (1 + delta / 0.4) / 2, 1.0, np.where(u < rates, -1.0, 0.0))
    else:
        items = rng.normal(0, 0.5, (rows, clusters, 1)) + rng.normal(delta, 1.0, (rows, clusters, size))
    return np.asarray(items.mean(axis=2))


def test_power_at_the_detectable_effect_of_pass_fail_items_is_80_percent():
    rng = np.random.default_rng(7)
    pilot = pass_fail(rng, 1, 80, 0.4, 0.0)[0]
    effect = min_detectable_effect(pilot, alpha=ALPHA).effect
    power = rejection_rate(pass_fail(rng, SIMULATIONS, 80, float(np.mean(pilot != 0)), effect))
    assert 0.77 <= power <= 0.83, (effect, power)
    # the textbook formula, (z + z_power) sd / √n, states a smaller effect found less often
    textbook = (scipy_stats.norm.ppf(1 - ALPHA / 2) + scipy_stats.norm.ppf(0.8)) * pilot.std(ddof=1) / np.sqrt(80)
    assert textbook < effect


def test_power_at_the_detectable_effect_of_continuous_items_is_80_percent():
    rng = np.random.default_rng(8)
    pilot = rng.normal(0.05, 1.0, 80)
    effect = min_detectable_effect(pilot, alpha=ALPHA).effect
    power = rejection_rate(rng.normal(effect, pilot.std(ddof=1), (SIMULATIONS, 80)))
    assert 0.77 <= power <= 0.83, (effect, power)


def test_power_at_the_detectable_effect_of_30_clusters_is_80_percent():
    rng = np.random.default_rng(9)
    pilot = clustered(rng, 1, 30, 0.0, binary=False)[0]
    effect = min_detectable_effect(pilot, alpha=ALPHA).effect
    resampled = (pilot - pilot.mean())[rng.integers(0, 30, (SIMULATIONS, 30))] + effect  # clusters like these
    power = rejection_rate(resampled)
    assert 0.77 <= power <= 0.83, (effect, power)


@pytest.mark.parametrize("binary, effect", [(True, 0.1), (False, 0.15)], ids=["pass-fail", "continuous"])
def test_power_at_the_clusters_needed_is_80_percent(binary, effect):
    rng = np.random.default_rng(10)
    pilot = clustered(rng, 1, 2000, 0.0, binary=binary)[0]
    needed = required_n(pilot, effect, alpha=ALPHA).n
    power = rejection_rate(clustered(rng, SIMULATIONS, needed, effect, binary=binary))
    assert 0.77 <= power <= 0.83, (needed, power)


def test_power_at_the_items_needed_is_80_percent():
    rng = np.random.default_rng(11)
    pilot = pass_fail(rng, 1, 200, 0.4, 0.0)[0]
    needed = required_n(pilot, 0.1, alpha=ALPHA).n
    power = rejection_rate(pass_fail(rng, SIMULATIONS, needed, float(np.mean(pilot != 0)), 0.1))
    assert 0.77 <= power <= 0.83, (needed, power)
    needed = required_n(0.5, 0.1, alpha=ALPHA).n  # a standard deviation: normal differences
    power = rejection_rate(rng.normal(0.1, 0.5, (SIMULATIONS, needed)))
    assert 0.77 <= power <= 0.83, (needed, power)


def test_the_detectable_effect_and_the_units_needed_invert_each_other():
    pilot = np.random.default_rng(2).normal(0.0, 0.3, size=400)
    effect = min_detectable_effect(pilot).effect
    assert required_n(pilot, effect).n in (400, 401)


def test_an_effect_beyond_every_difference_seen_is_refused():
    with pytest.raises(ValueError, match="largest difference"):
        required_n([1.0, -1.0, 0.0, 1.0], 1.0)


@pytest.mark.parametrize("seed", range(6))
def test_bisection_stopping_at_neighbouring_floats_gives_the_hundred_halvings_answer(seed):
    """The bisections stop once their ends are adjacent floats; all 100 halvings give the same tilt."""
    from evalsite.stats import power as power_module

    rng = np.random.default_rng(seed)
    diffs = rng.choice([-1.0, -0.5, 0.0, 0.5, 1.0], size=int(rng.integers(30, 5000)), p=[0.15, 0.15, 0.3, 0.2, 0.2])
    alpha = [0.05, 0.005, 0.05 / 45][seed % 3]
    model, n = power_module._Tilts.of(diffs), diffs.size
    low, high = 0.0, 1.0 / model.scale
    while model.power(high, n, alpha) < 0.8:
        low, high = high, 2 * high
    for _ in range(100):
        middle = (low + high) / 2
        low, high = (middle, high) if model.power(middle, n, alpha) < 0.8 else (low, middle)
    assert min_detectable_effect(diffs, alpha=alpha).effect == model.mean(high)
    target = 0.3 * model.scale
    low, high = 0.0, 1.0 / model.scale
    while model.mean(high) < target:
        low, high = high, 2 * high
    for _ in range(100):
        middle = (low + high) / 2
        low, high = (middle, high) if model.mean(middle) < target else (low, middle)
    assert model.tilt_for_mean(target) == high
