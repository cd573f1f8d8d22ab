"""The targets of issue #28 for ``stop_when``, each beside the fixed-n design in the same run.

Rerun from the repository root with:

    python bench/stop_when.py [SIMS]

(SIMS simulated experiments per row, default 500; every row has its own fixed seed.) It prints:

* validity: arms with identical true means, looked at after every block of 10 items up to 2,000
  items; the rate of any false separation of the anytime-valid rule (target ≤ 0.05), beside the
  fixed-n sign-flip test on all 2,000 items and, for pass/fail scores, that same fixed-n test
  peeked at after every block (stop at the first look with a Holm-adjusted p ≤ 0.05);
* savings on a 1,000-item pass/fail dataset, arms at 0.6 and 0.7: (a) nested arms (median items
  ≤ 30%, decided ≥ 95%), (b) independent arms (median items ≤ 80%, decision rate within 5 points
  of the fixed-n test's power at 1,000 items), (c) equal arms with margin 0.05 (median items to
  equivalence, beside the fixed-n equivalence test, TOST, by its normal approximation); and (d), no
  target, the (b) arms with their items in 100 clusters: what few units cost.

The rule everywhere: each pair's confidence sequence at α / pairs (stats/confseq.py, tightest at
the planned items), stop when every pair is separated or equivalent; the simulation is
stats/stopping_design.py.
"""

from __future__ import annotations

import itertools
import math
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats as scipy_stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalsite.stats.confseq import confidence_sequence
from evalsite.stats.paired import holm
from evalsite.stats.stopping_design import Scenario, StoppingPlan, draw_scores, look_points, simulate_stopping

ALPHA = 0.05


def main(sims: int) -> None:
    started = time.perf_counter()
    speed()
    validity(sims)
    savings(sims)
    print(f"\n{time.perf_counter() - started:.0f} s in all")


def speed() -> None:
    values = np.random.default_rng(0).choice([-1.0, 0.0, 1.0], size=100_000)
    times = []
    for _ in range(3):
        begun = time.perf_counter()
        confidence_sequence(values, alpha=ALPHA, horizon=100_000)
        times.append(time.perf_counter() - begun)
    print(f"confidence_sequence over 100,000 values: {min(times):.3f}–{max(times):.3f} s (best and worst of 3)\n")


def validity(sims: int) -> None:
    print(f"validity: identical arms, a look every 10 items up to 2,000, {sims} experiments per row, α {ALPHA}")
    print(f"{'scores':<11} {'clusters':<9} {'arms':>4} {'stop_when':>10} {'fixed-n':>8} {'fixed-n peeked':>15}")
    allowed = ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / sims)
    for seed, (sd, clustered, arms) in enumerate(itertools.product((None, 0.3), (False, True), (2, 4)), start=100):
        scenario = Scenario(0.0, base=0.5, sd=sd, arms=arms, cluster_size=10 if clustered else 1,
                            cluster_shift=0.2 if clustered else 0.0)
        plan = simulate_stopping(scenario, n_items=2000, min_items=10, check_every=10, n_sims=sims, seed=seed)
        peeked = f"{peeked_fixed_n(scenario, sims, seed):.3f}" if sd is None and not clustered else "—"
        verdict = "ok" if plan.false_separation_rate <= allowed else "MISSED"
        print(f"{'pass/fail' if sd is None else 'continuous':<11} {'10 items' if clustered else 'none':<9} {arms:>4} "
              f"{plan.false_separation_rate:>10.3f} {plan.fixed_false_separation_rate:>8.3f} {peeked:>15}  {verdict}")
    print(f"(target ≤ {ALPHA}; ≤ {allowed:.3f} is within three Monte Carlo standard errors; with clusters the "
          "unit is the cluster mean, 200 clusters of 10; fixed-n: the sign-flip test on all items, Holm)")


def peeked_fixed_n(scenario: Scenario, sims: int, seed: int) -> float:
    """The rate of stopping at the first look where some pair's Holm-adjusted fixed-n sign-flip
    p ≤ α: what peeking at a p-value does. For ±1 differences the sign-flip p
    is the exact two-sided sign test's (binomial), which keeps this fast."""
    scores = draw_scores(scenario, np.random.default_rng(seed + 1000), sims, 2000)
    looks = look_points(2000, unit_size=1, min_items=10, check_every=10)
    pairs = list(itertools.combinations(range(scenario.arms), 2))
    p = []
    for i, j in pairs:
        diffs = scores[:, :, j] - scores[:, :, i]
        wins = np.cumsum(diffs > 0, axis=1)[:, looks - 1]
        moved = np.cumsum(diffs != 0, axis=1)[:, looks - 1]
        p.append(np.minimum(1.0, 2 * scipy_stats.binom.cdf(np.minimum(wins, moved - wins), moved, 0.5)))
    p_values = np.stack(p, axis=-1)  # sims × looks × pairs
    fooled = [any(min(holm(look)) <= ALPHA for look in sim) for sim in p_values]
    return float(np.mean(fooled))


def savings(sims: int) -> None:
    print(f"\nsavings: a 1,000-item pass/fail dataset, arms at 0.6 and 0.7, {sims} experiments per row, "
          "stop_when {min_items: 30, check_every: 20}")
    nested = run(Scenario(0.1, base=0.6, nested=True), sims, seed=1)
    report("(a) nested", nested, f"target: median ≤ 300 items and decided ≥ 95% -> "
           f"{ok(nested.items_median <= 300 and nested.decided_rate >= 0.95)}")
    independent = run(Scenario(0.1, base=0.6), sims, seed=2)
    gap = abs(independent.decided_rate - independent.fixed_power)
    report("(b) independent", independent, f"target: median ≤ 800 items and decided within 5 points of the "
           f"fixed-n power ({gap * 100:.1f} points) -> {ok(independent.items_median <= 800 and gap <= 0.05)}")
    for n_items in (1000, 5000):
        equal = run(Scenario(0.0, base=0.6), sims, seed=3, n_items=n_items, margin=0.05)
        tost_power, tost_items = tost(n_items, sd=math.sqrt(2 * 0.6 * 0.4), margin=0.05, power=0.8)
        report(f"(c) equal, margin 0.05, {n_items:,} items", equal,
               f"equivalent in {equal.equivalent_rate:.1%}, falsely separated in {equal.false_separation_rate:.1%}; "
               f"fixed-n TOST on all {n_items:,} items: equivalent in {tost_power:.1%} (normal approximation), "
               f"{tost_items:,} items for 80%")
    clustered = run(Scenario(0.1, base=0.6, cluster_size=10, cluster_shift=0.2), sims, seed=4)
    report("(d) independent, in 100 clusters of 10 (±0.2)", clustered,
           "no target: with bets capped at 1/2 the sequence is never narrower than ±4 log(2/α) / n on [-1, 1] "
           "(±0.15 at 100 units), so few units cost it much more than they cost the fixed-n test")


def run(scenario: Scenario, sims: int, *, seed: int, n_items: int = 1000, margin: float | None = None) -> StoppingPlan:
    return simulate_stopping(scenario, n_items=n_items, margin=margin, min_items=30, check_every=20, n_sims=sims,
                             seed=seed, fixed_n=scenario.delta != 0)


def report(name: str, plan: StoppingPlan, target: str) -> None:
    share = plan.items_median / plan.n_items
    line = (f"{name}: stop_when median {plan.items_median:,.0f} items ({share:.0%}), mean {plan.items_mean:,.0f}, "
            f"p10–p90 {plan.items_p10:,.0f}–{plan.items_p90:,.0f}, decided {plan.decided_rate:.1%}")
    if plan.fixed_items is not None:
        line += (f"; fixed-n on all {plan.n_items:,} items: power {plan.fixed_power:.1%}, "
                 f"{plan.fixed_items:,} items for the same power ({plan.fixed_items_power:.0%})")
    print(f"{line}\n    {target}")


def tost(n: int, *, sd: float, margin: float, power: float) -> tuple[float, int]:
    """Two one-sided tests at α for a true difference of 0: the chance the (1 − 2α) interval lies
    inside ±margin at n items, and the items for ``power``, both by the normal approximation."""
    z = scipy_stats.norm.ppf(1 - ALPHA)
    se = sd / math.sqrt(n)
    chance = max(0.0, 2 * scipy_stats.norm.cdf((margin - z * se) / se) - 1)
    needed = math.ceil(((z + scipy_stats.norm.ppf((1 + power) / 2)) * sd / margin) ** 2)
    return chance, needed


def ok(met: bool) -> str:
    return "met" if met else "MISSED"


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 500)
