"""The analyses behind ``leaderboard``, ``family-test``, ``bootstrap``, ``rank-stability``,
``noise`` and ``holdout``, as a typed Python API the site calls too.

The data layer reads the DuckDB views (``evalsite.analysis.db``) and the statistics come from
``evalsite.stats``; the modules, one job each:

* ``selection``: which runs of a dataset may be compared (one per config), and which are left out, and why.
* ``items``: item × arm × repeat matrices aligned on ``item_id``, and item metadata from the dataset file.
* ``summary``: one run's figures (:func:`summarise_run`), the definitions everything else reads;
  ``run_views`` puts them beside a run's identity for ``show`` and ``runs``.
* ``arms``: per-arm figures — mean and pass rate with intervals, cost, latency, noise.
* ``leaderboard``: the leaderboard, rank stability, the pilot/holdout check.
* ``verdict``: the one verdict on an order of arms — paired tests, Holm, groups, the headline.
* ``family``: one run against a family of runs, Holm-corrected, with power.
* ``one_run``: one run's bootstrap intervals and its noise and flakiness across repeats.
* ``json_data``: any report as JSON-ready data (:func:`json_ready`).

See docs/reference/python-api.md. The names below load their module on first use (PEP 562), so
importing one module of the package (the runner imports ``summary``) does not import scipy and
DuckDB through all the others.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the type checker sees each export's real type; at run time __getattr__ loads it
    from evalsite.analysis.arms import ArmSummary, summarise_arms
    from evalsite.analysis.family import FamilyComparison, FamilyTest, family_test
    from evalsite.analysis.items import DroppedItem, ItemLabels, ItemMatrix, item_labels, item_matrix
    from evalsite.analysis.json_data import json_ready
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
    from evalsite.analysis.summary import (
        CostSummary,
        EvaluatorSummary,
        LatencySummary,
        RunSummary,
        mean_over_items,
        run_noise,
        summarise_run,
    )
    from evalsite.analysis.verdict import (
        ArmPlace,
        Metric,
        PairVerdict,
        Verdict,
        choose_metric,
        matrix_verdict,
        verdict_of,
    )

_EXPORTS = {
    **dict.fromkeys(('ArmSummary', 'summarise_arms'), "arms"),
    **dict.fromkeys(('ArmPlace', 'Metric', 'PairVerdict', 'Verdict', 'choose_metric', 'matrix_verdict', 'verdict_of'),
                    "verdict"),
    **dict.fromkeys(('CostSummary', 'EvaluatorSummary', 'LatencySummary', 'RunSummary', 'mean_over_items', 'run_noise',
                     'summarise_run'), "summary"),
    **dict.fromkeys(('FamilyComparison', 'FamilyTest', 'family_test'), "family"),
    **dict.fromkeys(('DroppedItem', 'ItemLabels', 'ItemMatrix', 'item_labels', 'item_matrix'), "items"),
    **dict.fromkeys(('json_ready',), "json_data"),
    **dict.fromkeys(('ArmsOnDataset', 'HoldoutReport', 'Leaderboard', 'RankedArm', 'StabilityReport', 'arms_of_selection',
                     'arms_on_dataset', 'dataset_verdict', 'holdout_report', 'leaderboard', 'leaderboard_of',
                     'stability_report'), "leaderboard"),
    **dict.fromkeys(('BootstrapReport', 'Estimate', 'ItemFlakiness', 'NoiseReport', 'bootstrap_report', 'noise_report', 'run_matrix'), "one_run"),
    **dict.fromkeys(('ArmRun', 'DatasetGroups', 'DatasetRuns', 'LeftOut', 'Selection', 'arm_labels', 'choose_dataset', 'comparable_groups', 'datasets_with_runs', 'require_comparable', 'runs_by_reference', 'select_runs'), "selection"),
}


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    globals()[name] = value
    return value


class _Package(ModuleType):
    """Keeps an exported name bound to the export when a submodule of that name is imported
    (``leaderboard`` is both), as the eager ``from ... import`` used to."""

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, ModuleType) and _EXPORTS.get(name) == name:
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


__all__ = [
    "ArmPlace",
    "ArmRun",
    "ArmSummary",
    "ArmsOnDataset",
    "BootstrapReport",
    "CostSummary",
    "DatasetGroups",
    "DatasetRuns",
    "DroppedItem",
    "Estimate",
    "EvaluatorSummary",
    "FamilyComparison",
    "FamilyTest",
    "HoldoutReport",
    "ItemFlakiness",
    "ItemLabels",
    "ItemMatrix",
    "LatencySummary",
    "Leaderboard",
    "LeftOut",
    "Metric",
    "NoiseReport",
    "PairVerdict",
    "RankedArm",
    "RunSummary",
    "Selection",
    "StabilityReport",
    "Verdict",
    "arm_labels",
    "arms_of_selection",
    "arms_on_dataset",
    "bootstrap_report",
    "choose_dataset",
    "choose_metric",
    "comparable_groups",
    "dataset_verdict",
    "datasets_with_runs",
    "family_test",
    "holdout_report",
    "item_labels",
    "item_matrix",
    "json_ready",
    "leaderboard",
    "leaderboard_of",
    "matrix_verdict",
    "mean_over_items",
    "noise_report",
    "require_comparable",
    "run_matrix",
    "run_noise",
    "runs_by_reference",
    "select_runs",
    "stability_report",
    "summarise_arms",
    "summarise_run",
    "verdict_of",
]
