"""The analyses behind ``leaderboard``, ``family-test``, ``bootstrap``, ``rank-stability``,
``noise`` and ``holdout``, as a typed Python API the site calls too.

The data layer reads the DuckDB views (``evalsite.analysis.db``) and the statistics come from
``evalsite.stats``; the modules, one job each:

* ``selection``: which runs of a dataset may be compared (one per config), and which are left out, and why.
* ``items``: item × arm × repeat matrices aligned on ``item_id``, and item metadata from the dataset file.
* ``arms``: per-arm figures — mean and pass rate with intervals, cost, latency, noise.
* ``ranking``: the leaderboard, rank stability, the pilot/holdout check.
* ``verdict``: the one verdict on an order of arms — paired tests, Holm, groups, the headline.
* ``family``: one run against a family of runs, Holm-corrected, with power.
* ``one_run``: one run's bootstrap intervals and its noise and flakiness across repeats.
* ``plain``: any report as JSON-ready data.

See docs/reference/python-api.md.
"""

from evalsite.analysis.arms import ArmSummary, CostSummary, LatencySummary, summarise_arms
from evalsite.analysis.family import Comparison, FamilyTest, family_test
from evalsite.analysis.items import DroppedItem, ItemLabels, ItemMatrix, item_labels, item_matrix
from evalsite.analysis.json_data import plain
from evalsite.analysis.leaderboard import (
    ArmsOnDataset,
    HoldoutReport,
    Leaderboard,
    RankedArm,
    StabilityReport,
    arms_of_selection,
    arms_on_dataset,
    dataset_verdict,
    holdout_report,
    leaderboard,
    leaderboard_of,
    stability_report,
)
from evalsite.analysis.one_run import (
    BootstrapReport,
    Estimate,
    ItemFlakiness,
    NoiseReport,
    bootstrap_report,
    noise_report,
    run_matrix,
)
from evalsite.analysis.selection import (
    ArmRun,
    DatasetGroups,
    DatasetRuns,
    LeftOut,
    Selection,
    arm_labels,
    choose_dataset,
    comparable_groups,
    datasets_with_runs,
    require_comparable,
    runs_by_reference,
    select_runs,
)
from evalsite.analysis.verdict import ArmPlace, Metric, PairVerdict, Verdict, choose_metric, matrix_verdict, verdict_of

__all__ = [
    "ArmRun", "ArmSummary", "ArmsOnDataset", "BootstrapReport", "Comparison", "CostSummary", "DatasetGroups", "DatasetRuns",
    "DroppedItem", "Estimate", "FamilyTest", "HoldoutReport", "ItemFlakiness", "ItemLabels", "ItemMatrix",
    "LatencySummary", "Leaderboard", "LeftOut", "NoiseReport", "Metric", "PairVerdict", "Verdict", "ArmPlace", "RankedArm", "Selection",
    "StabilityReport", "arm_labels", "arms_of_selection", "arms_on_dataset", "bootstrap_report", "choose_dataset", "comparable_groups",
    "datasets_with_runs", "family_test", "holdout_report", "item_labels", "item_matrix", "leaderboard",
    "leaderboard_of", "noise_report", "dataset_verdict", "choose_metric", "matrix_verdict", "verdict_of", "plain", "require_comparable", "run_matrix",
    "runs_by_reference", "select_runs", "stability_report", "summarise_arms",
]
