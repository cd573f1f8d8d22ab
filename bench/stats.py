"""Timings of the statistics that must stay interactive.

Rerun from the repository root with:

    python bench/stats.py

Each line prints the best and the worst of a few runs in seconds (the worst includes the
first, cold call). Goals: the exact sign-flip test at n=30 under 0.1 s; the exact limit
(evalsite.stats.EXACT_LIMIT) under ~1 s; Friedman on 10 arms × 1,000 items with a few
thousand permutations in well under a few seconds; a BCa mean interval on 100k items and
Friedman on 10 arms × 100k items in seconds, not minutes (issue 17).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalsite.stats import EXACT_LIMIT, bootstrap_ci, friedman_test, rank_stability, sign_flip_test


def timed(label: str, run: Callable[[], object], repeats: int = 3) -> None:
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        outcome = run()
        seconds.append(time.perf_counter() - start)
    best, worst = min(seconds), max(seconds)
    print(f"{label:<62} best {best:8.4f} s   worst {worst:8.4f} s   {describe(outcome)}")


def describe(outcome: object) -> str:
    kind = getattr(outcome, "kind", "")
    method = getattr(outcome, "method", "")
    return f"[{kind}: {method}]" if kind and method else f"[{kind or method}]"


def continuous_diffs(n: int) -> np.ndarray:
    """Off-grid differences, so the exact test must enumerate (no grid shortcut)."""
    return np.random.default_rng(n).normal(0.1, 1.0, size=n)


def main() -> None:
    print(f"numpy {np.__version__}; EXACT_LIMIT = {EXACT_LIMIT}")
    for n in (20, 30, 40, EXACT_LIMIT):
        diffs = continuous_diffs(n)
        label = f"sign_flip_test exact, n={n} continuous differences"
        timed(label, lambda diffs=diffs: sign_flip_test(diffs, 0 * diffs))
    for n in (200, 2000):
        diffs = continuous_diffs(n)
        label = f"sign_flip_test Monte Carlo, n={n}, 100,000 resamples"
        timed(label, lambda diffs=diffs: sign_flip_test(diffs, 0 * diffs))
    rng = np.random.default_rng(0)
    a, b = rng.random((1000, 3)) < 0.6, rng.random((1000, 3)) < 0.55
    timed("sign_flip_test exact, 1,000 items × 3 pass/fail repeats", lambda: sign_flip_test(a, b))

    scores = rng.normal(size=(1000, 10)) + np.linspace(0.0, 0.1, 10)
    timed(
        "friedman_test 10 arms × 1,000 items, 5,000 permutations",
        lambda: friedman_test(scores, n_resamples=5_000),
    )
    passes = (rng.random((200, 5)) < np.linspace(0.5, 0.7, 5)).astype(float)
    timed("rank_stability 5 arms × 200 items, 1,000 resamples", lambda: rank_stability(passes))

    for n in (10_000, 100_000):
        values = rng.normal(size=n)
        # a new seed per call, so no call reuses a remembered interval
        seeds = iter(range(100))
        timed(f"bootstrap_ci BCa mean, {n:,} items, 9,999 resamples",
              lambda values=values, seeds=seeds: bootstrap_ci(values, seed=next(seeds)), repeats=2)
    wide = rng.normal(size=(100_000, 10)) + np.linspace(0.0, 0.05, 10)
    timed("friedman_test 10 arms × 100,000 items, separated arms", lambda: friedman_test(wide), repeats=2)
    alike = rng.normal(size=(100_000, 10))
    timed("friedman_test 10 arms × 100,000 items, alike arms", lambda: friedman_test(alike), repeats=2)


if __name__ == "__main__":
    main()
