"""How many items a ``stop_when`` run is expected to use, by simulation, beside the fixed-n design.

:func:`simulate_stopping` draws ``n_sims`` experiments from an assumed truth (a :class:`Scenario`:
arms whose means step by ``delta`` from ``base``, pass/fail or continuous scores, optionally nested
or in clusters), runs the stopping rule of stats/confseq.py on each (every pair's anytime-valid
confidence sequence at Bonferroni α / pairs, looked at after every ``check_every`` items from
``min_items`` on; stop when every pair is separated or equivalent, or at ``max_items``), and
reports the items used and how often it decided. On the same simulated data it runs the fixed-n
design the verdict uses — the paired sign-flip test of every pair on all ``n_items``, Holm-corrected
— and gives, from stats/power.py, the fixed-n number of items with the same power as the
sequential design's decision rate. Pure numpy, seeded, no I/O.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as scipy_stats

from evalsite.stats.confseq import METHOD as SEQUENCE_METHOD
from evalsite.stats.confseq import confidence_sequence, decisions, family_alpha
from evalsite.stats.paired import holm, sign_flip_test
from evalsite.stats.power import min_items_for_alpha, required_n

METHOD = (f"simulated stop_when runs: every pair's {SEQUENCE_METHOD} at alpha / pairs; fixed-n: paired "
          "sign-flip test of every pair on all items, Holm; fixed-n items from the calibrated sign-flip power model")
#: Sign-flip resamples for the fixed-n test on continuous data (pass/fail data is tested exactly).
FIXED_N_RESAMPLES = 2000


@dataclass(frozen=True)
class Scenario:
    """The assumed truth. Arm j's mean score is ``base + j * delta``; ``sd`` None means pass/fail
    scores, else continuous scores in [0, 1] (Beta) whose per-item difference between two arms has
    standard deviation ``sd``. ``nested`` (pass/fail only): one item difficulty shared by the arms,
    so a better arm is right wherever a worse one is. ``cluster_size`` > 1 groups items into
    clusters whose per-arm mean moves by ±``cluster_shift`` (mean-preserving); the unit of the
    sequence is then the cluster mean."""

    delta: float
    base: float = 0.5
    sd: float | None = None
    arms: int = 2
    nested: bool = False
    cluster_size: int = 1
    cluster_shift: float = 0.0

    def means(self) -> np.ndarray:
        return self.base + self.delta * np.arange(self.arms)

    def check(self) -> None:
        if isinstance(self.arms, bool) or not isinstance(self.arms, int) or self.arms < 2:
            raise ValueError(f"arms must be a whole number >= 2, got {self.arms!r}")
        if self.cluster_size < 1:
            raise ValueError(f"cluster_size must be >= 1, got {self.cluster_size}")
        means = self.means()
        room = float(np.min(np.minimum(means, 1 - means)))
        if not room > self.cluster_shift >= 0:
            raise ValueError(
                f"delta/base: every arm's mean (here {means.min():g} to {means.max():g}) must lie "
                f"inside (0, 1), more than the cluster shift {self.cluster_shift:g} from either end"
            )
        if self.sd is not None:
            if self.nested:
                raise ValueError("nested: only pass/fail scores (no --sd) can be nested")
            closest = room - self.cluster_shift  # the item-level mean nearest to 0 or 1
            if not 0 < self.sd**2 / 2 < closest * (1 - closest):
                raise ValueError(f"sd must be > 0 and possible for scores in [0, 1] at these means, got {self.sd}")


@dataclass(frozen=True)
class StoppingPlan:
    """What the simulation found. Items counts are items (clusters × their size), over every
    experiment (an undecided one counts ``max_items``). ``false_separation_rate``: experiments in
    which some pair was declared separated though its true difference is 0 or of the other sign.
    ``fixed_power``: the fixed-n design's power on all ``n_items`` (same data), and
    ``fixed_false_separation_rate`` its false separations (both NaN when not simulated); ``fixed_items``:
    the fixed-n items with power ``fixed_items_power``, the sequential design's decision rate kept
    inside [0.01, 0.99] (both None when delta is 0)."""

    n_items: int
    max_items: int
    n_sims: int
    pairs: int
    decided_rate: float
    separated_rate: float
    equivalent_rate: float
    false_separation_rate: float
    items_median: float
    items_mean: float
    items_p10: float
    items_p90: float
    fixed_power: float
    fixed_false_separation_rate: float
    fixed_items: int | None
    fixed_items_power: float | None
    method: str = METHOD


def look_points(n_units: int, *, unit_size: int, min_items: int, check_every: int) -> np.ndarray:
    """The units (1-based counts) after which the rule looks: the end of each block of
    ``check_every`` items once ``min_items`` are in, and always the last unit."""
    units = np.arange(1, n_units + 1)
    items = units * unit_size
    crosses = items // check_every > (items - unit_size) // check_every
    looks = units[crosses & (items >= min_items)]
    return np.union1d(looks, [n_units])


def simulate_stopping(
    scenario: Scenario,
    *,
    n_items: int,
    alpha: float = 0.05,
    margin: float | None = None,
    min_items: int = 30,
    check_every: int = 20,
    max_items: int | None = None,
    n_sims: int = 1000,
    seed: int = 0,
    fixed_n: bool = True,
) -> StoppingPlan:
    """Simulate ``n_sims`` stopped experiments of ``scenario`` and the fixed-n design on the same
    data (skipped, with power and items reported as NaN/None, when ``fixed_n`` is False)."""
    scenario.check()
    limit = n_items if max_items is None else max_items
    _check_counts(n_items=n_items, max_items=limit, min_items=min_items, check_every=check_every, n_sims=n_sims)
    size = scenario.cluster_size
    n_units, max_units = n_items // size, limit // size
    if max_units < 1:
        raise ValueError(f"max_items {limit} holds no whole cluster of {size} items")
    scores = draw_scores(scenario, np.random.default_rng(seed), n_sims, n_units)  # sims × units × arms
    pairs = list(itertools.combinations(range(scenario.arms), 2))
    diffs = np.stack([scores[:, :, j] - scores[:, :, i] for i, j in pairs], axis=1)  # sims × pairs × units
    truth = np.array([scenario.delta * (j - i) for i, j in pairs])
    looks = look_points(max_units, unit_size=size, min_items=min_items, check_every=check_every)
    stop_units, decided, separated, equivalent, wrong = _run_rule(
        diffs[:, :, :max_units], truth, looks, family_alpha(alpha, len(pairs)), margin, max_units
    )
    items = stop_units * size
    power, fixed_wrong = _fixed_design(diffs, truth, alpha) if fixed_n else (math.nan, math.nan)
    target = min(max(float(decided.mean()), 0.01), 0.99) if fixed_n and scenario.delta != 0 else None
    return StoppingPlan(
        n_items=n_units * size,
        max_items=max_units * size,
        n_sims=n_sims,
        pairs=len(pairs),
        decided_rate=float(decided.mean()),
        separated_rate=float(separated.mean()),
        equivalent_rate=float(equivalent.mean()),
        false_separation_rate=float(wrong.mean()),
        items_median=float(np.median(items)),
        items_mean=float(items.mean()),
        items_p10=float(np.percentile(items, 10)),
        items_p90=float(np.percentile(items, 90)),
        fixed_power=power,
        fixed_false_separation_rate=fixed_wrong,
        fixed_items=None if target is None else _fixed_items(scenario, diffs[:, 0, :], alpha, len(pairs), target),
        fixed_items_power=target,
    )


def _run_rule(
    diffs: np.ndarray, truth: np.ndarray, looks: np.ndarray, alpha: float, margin: float | None, max_units: int
) -> tuple[np.ndarray, ...]:
    """Per experiment: units used, decided, all separated, some equivalent, some false separation."""
    sims, pairs, _ = diffs.shape
    low, high = confidence_sequence(diffs.reshape(sims * pairs, -1), alpha=alpha, horizon=max_units)
    low = low.reshape(sims, pairs, -1)[:, :, looks - 1]
    high = high.reshape(sims, pairs, -1)[:, :, looks - 1]
    separated, equivalent = decisions(low, high, margin=margin)
    all_decided = np.all(separated | equivalent, axis=1)  # sims × looks
    decided = all_decided.any(axis=1)
    stop = np.where(decided, np.argmax(all_decided, axis=1), looks.size - 1)
    at_stop = np.arange(sims)
    sep, eq = separated[at_stop, :, stop], equivalent[at_stop, :, stop]
    sign = np.sign(low[at_stop, :, stop])  # +1 when low > 0, −1 when high < 0 (then low < 0)
    wrong = np.any(sep & (sign != np.sign(truth)), axis=1)
    return looks[stop], decided, decided & np.all(sep, axis=1), decided & np.any(eq, axis=1), wrong


def _fixed_design(diffs: np.ndarray, truth: np.ndarray, alpha: float) -> tuple[float, float]:
    """The fixed-n design on every unit: each pair's two-sided sign-flip test, Holm over the pairs.
    The rate at which every pair is separated, and at which some pair is separated though its true
    difference is 0 or of the other sign."""
    every, wrong = 0, 0
    for sim in diffs:
        tests = [sign_flip_test(pair, np.zeros_like(pair), seed=0, n_resamples=FIXED_N_RESAMPLES) for pair in sim]
        separated = np.array(holm([test.p_value for test in tests])) <= alpha
        every += bool(np.all(separated))
        wrong += bool(np.any(separated & (np.sign([test.mean_diff for test in tests]) != np.sign(truth))))
    return every / diffs.shape[0], wrong / diffs.shape[0]


def _fixed_items(scenario: Scenario, pilot: np.ndarray, alpha: float, pairs: int, power: float) -> int:
    """Fixed-n items for ``power`` at the smallest difference (delta, Bonferroni α / pairs), from
    stats/power.py with the simulated per-unit differences as the pilot (their sd when continuous)."""
    level = family_alpha(alpha, pairs)
    values = pilot.ravel()
    if np.all(values * np.sign(scenario.delta) >= 0):
        units = _one_signed_units(float(np.mean(values != 0)), level, power)
    elif scenario.sd is None:
        units = required_n(values, scenario.delta, alpha=level, power=power).n
    else:
        units = required_n(float(np.std(values, ddof=1)), scenario.delta, alpha=level, power=power).n
    return units * scenario.cluster_size


def _one_signed_units(nonzero_rate: float, alpha: float, power: float) -> int:
    """Every non-zero difference has the same sign (nested arms): the sign-flip p-value is 2 / 2^k
    with k of them, so the test needs k >= min_items_for_alpha; the fewest units n with
    P(Binomial(n, rate) >= that) >= power."""
    needed = min_items_for_alpha(alpha)
    n = needed
    while scipy_stats.binom.sf(needed - 1, n, nonzero_rate) < power:
        n += 1
    return n


def draw_scores(scenario: Scenario, rng: np.random.Generator, sims: int, units: int) -> np.ndarray:
    """Per-unit scores, sims × units × arms (the mean over each cluster's items)."""
    size = scenario.cluster_size
    shape = (sims, units, scenario.arms)
    centre = np.broadcast_to(scenario.means(), shape)
    if scenario.cluster_shift > 0:
        centre = centre + scenario.cluster_shift * rng.choice([-1.0, 1.0], size=shape)
    centre = np.repeat(centre[:, :, None, :], size, axis=2)  # sims × units × items × arms
    if scenario.sd is None:
        uniform = rng.random(centre.shape[:3] + ((1,) if scenario.nested else (scenario.arms,)))
        items = (uniform < centre).astype(float)
    else:
        variance = scenario.sd**2 / 2
        concentration = centre * (1 - centre) / variance - 1
        items = rng.beta(centre * concentration, (1 - centre) * concentration)
    return np.asarray(items.mean(axis=2))


def _check_counts(**counts: int) -> None:
    for name, value in counts.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name.replace('_', '-')} must be a whole number >= 1, got {value!r}")
    if counts["max_items"] > counts["n_items"]:
        raise ValueError(f"max-items {counts['max_items']} is more than the {counts['n_items']} items")
