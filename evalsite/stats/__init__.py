"""Statistics for comparing arms on shared items: pure computation over numpy arrays, no I/O.

Inputs are item × arm matrices (or item × repeat matrices for one arm); every result is a
frozen dataclass that names the method it used, and every random step is seeded with
``numpy.random.default_rng(seed)``. See docs/reference/statistics.md.
"""

from evalsite.stats.intervals import Interval, bootstrap_ci, paired_bootstrap_ci, wilson_interval
from evalsite.stats.paired import (
    EXACT_LIMIT,
    McNemarResult,
    SignFlipResult,
    holm,
    mcnemar_exact,
    sign_flip_test,
)
from evalsite.stats.ranking import (
    FriedmanResult,
    HoldoutCheck,
    NemenyiResult,
    RankStability,
    TiedGroups,
    friedman_test,
    holdout_check,
    nemenyi,
    rank_stability,
    tied_groups,
    within_item_ranks,
)

__all__ = [
    "EXACT_LIMIT",
    "FriedmanResult",
    "HoldoutCheck",
    "Interval",
    "McNemarResult",
    "NemenyiResult",
    "RankStability",
    "SignFlipResult",
    "TiedGroups",
    "bootstrap_ci",
    "friedman_test",
    "holdout_check",
    "holm",
    "mcnemar_exact",
    "nemenyi",
    "paired_bootstrap_ci",
    "rank_stability",
    "sign_flip_test",
    "tied_groups",
    "wilson_interval",
    "within_item_ranks",
]
