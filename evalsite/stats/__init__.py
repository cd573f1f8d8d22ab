"""Statistics for comparing arms on shared items: pure computation over numpy arrays, no I/O.

Inputs are items × arms matrices (or items × repeats for one arm); every result is a frozen
dataclass that names the method it used, and every random step is seeded with
``numpy.random.default_rng(seed)``. The modules, one job each:

* ``paired``: two arms — sign-flip test, exact McNemar, Holm's correction.
* ``ranking``: many arms — Friedman, Nemenyi, tied groups.
* ``stability``: how stable their order is on item subsets and under the bootstrap.
* ``holdout``: does the pilot order of the arms hold on holdout items?
* ``intervals``: bootstrap (BCa, cluster, two-level) and Wilson intervals.
* ``noise``: spread across repeats and the test of a difference against it, per-item
  flakiness, pass@k and pass^k.
* ``pairs``: one pair of arms on items or clusters (the verdict's primitive), letter groups.
* ``power``: minimum detectable effect and required number of items.
* ``confseq``: anytime-valid confidence sequences of a paired difference (``stop_when``);
  ``stopping_design``: the items a stopped run expects to use, by simulation.
* ``descriptive``: nearest-rank percentiles.

See docs/reference/statistics.md for assumptions, limits and worked examples.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the type checker sees each export's real type; at run time __getattr__ loads it
    from evalsite.stats.descriptive import nearest_rank_percentile
    from evalsite.stats.holdout import HoldoutCheck, holdout_check
    from evalsite.stats.intervals import bootstrap_ci, paired_bootstrap_ci
    from evalsite.stats.noise import (
        Flakiness,
        NoiseTest,
        RepeatNoise,
        flakiness,
        pass_at_k,
        pass_hat_k,
        repeat_noise,
        repeat_noise_test,
    )
    from evalsite.stats.paired import EXACT_LIMIT, McNemarResult, SignFlipResult, holm, mcnemar_exact, sign_flip_test
    from evalsite.stats.power import PowerAnalysis, min_detectable_effect, min_items_for_alpha, required_n
    from evalsite.stats.proportions import Interval, wilson_interval
    from evalsite.stats.ranking import (
        FriedmanResult,
        NemenyiResult,
        TiedGroups,
        friedman_test,
        nemenyi,
        tied_groups,
        within_item_ranks,
    )
    from evalsite.stats.stability import RankStability, rank_stability

_EXPORTS = {
    "nearest_rank_percentile": "descriptive",
    **dict.fromkeys(("HoldoutCheck", "holdout_check"), "holdout"),
    **dict.fromkeys(("Interval", "wilson_interval"), "proportions"),
    **dict.fromkeys(("bootstrap_ci", "paired_bootstrap_ci"), "intervals"),
    **dict.fromkeys(("Flakiness", "NoiseTest", "RepeatNoise", "flakiness", "pass_at_k", "pass_hat_k", "repeat_noise",
                     "repeat_noise_test"), "noise"),
    **dict.fromkeys(("EXACT_LIMIT", "McNemarResult", "SignFlipResult", "holm", "mcnemar_exact", "sign_flip_test"),
                    "paired"),
    **dict.fromkeys(("PowerAnalysis", "min_detectable_effect", "min_items_for_alpha", "required_n"), "power"),
    **dict.fromkeys(("FriedmanResult", "NemenyiResult", "TiedGroups", "friedman_test", "nemenyi", "tied_groups",
                     "within_item_ranks"), "ranking"),
    **dict.fromkeys(("RankStability", "rank_stability"), "stability"),
}


def __getattr__(name: str) -> Any:
    """Load an export's module on first use (PEP 562): the modules that need scipy load it only
    when one of their functions is asked for."""
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    globals()[name] = value
    return value


__all__ = [
    "EXACT_LIMIT",
    "Flakiness",
    "FriedmanResult",
    "HoldoutCheck",
    "Interval",
    "McNemarResult",
    "NemenyiResult",
    "NoiseTest",
    "PowerAnalysis",
    "RankStability",
    "RepeatNoise",
    "SignFlipResult",
    "TiedGroups",
    "bootstrap_ci",
    "flakiness",
    "friedman_test",
    "holdout_check",
    "holm",
    "mcnemar_exact",
    "min_detectable_effect",
    "min_items_for_alpha",
    "nearest_rank_percentile",
    "nemenyi",
    "paired_bootstrap_ci",
    "pass_at_k",
    "pass_hat_k",
    "rank_stability",
    "repeat_noise",
    "repeat_noise_test",
    "required_n",
    "sign_flip_test",
    "tied_groups",
    "wilson_interval",
    "within_item_ranks",
]
