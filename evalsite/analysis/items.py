"""Item × arm × repeat matrices of the chosen runs, aligned on ``item_id``.

Every statistic that compares arms pairs them item by item, so the matrix keeps only the items
every arm has scored — and the same row in every run (equal ``item_sha``) — and lists every
other item with the reason. Cells are NaN where a repeat has no score (or no verdict, cost,
latency); ``recorded`` tells a missing case from a case with an unknown value.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from evalsite.analysis.db import RunsDatabase
from evalsite.analysis.metadata import cluster_key, dataset_labels
from evalsite.analysis.selection import ArmRun
from evalsite.errors import EvalsiteError
from evalsite.project import Project
from evalsite.runlog.rows import item_order

CASE_CELLS_SQL = """
SELECT run_id, item_id, item_sha, coalesce(repeat, 0) AS repeat, score, passed::DOUBLE AS passed,
       cost_usd, latency_ms, (input_tokens + output_tokens)::DOUBLE AS tokens
FROM cases WHERE list_contains(?, run_id)
"""
EVALUATOR_CELLS_SQL = """
SELECT c.run_id, c.item_id, c.item_sha, coalesce(c.repeat, 0) AS repeat, s.score, s.passed::DOUBLE AS passed,
       c.cost_usd, c.latency_ms, (c.input_tokens + c.output_tokens)::DOUBLE AS tokens
FROM cases c LEFT JOIN (
    SELECT run_id, item_id, coalesce(repeat, 0) AS repeat,
           avg(score) FILTER (WHERE error IS NULL AND NOT coalesce(skipped, false)) AS score,
           bool_and(passed) AS passed
    FROM scores WHERE evaluator = ? AND list_contains(?, run_id) GROUP BY ALL
) s ON s.run_id = c.run_id AND s.item_id = c.item_id AND s.repeat = coalesce(c.repeat, 0)
WHERE list_contains(?, c.run_id)
"""
_CELL_FIELDS = ("score", "passed", "cost_usd", "latency_ms", "tokens")
_ARRAYS = (*_CELL_FIELDS, "recorded")


@dataclass(frozen=True)
class DroppedItem:
    item_id: str
    reason: str


@dataclass(frozen=True)
class ItemMatrix:
    """Cells of ``arms`` on the items they share, in natural item order.

    ``score``, ``passed`` (1.0 / 0.0), ``cost_usd``, ``latency_ms`` and ``tokens`` (input + output) are items × arms × repeats
    float arrays with NaN for "no value"; ``recorded`` is True where the case exists. Repeats are
    numbered per arm in order, so an arm with fewer repeats has NaN in its last columns.
    ``evaluator`` is the evaluator whose scores fill the matrix (None: the case score, which
    combines every evaluator). A per-turn evaluator's turns are averaged per case, and the case
    passes when every turn passed."""

    arms: tuple[ArmRun, ...]
    item_ids: tuple[str, ...]
    item_shas: tuple[str | None, ...]
    score: np.ndarray
    passed: np.ndarray
    cost_usd: np.ndarray
    latency_ms: np.ndarray
    tokens: np.ndarray
    recorded: np.ndarray
    dropped: tuple[DroppedItem, ...]
    evaluator: str | None

    @property
    def n_items(self) -> int:
        return len(self.item_ids)

    def repeats(self, arm: int) -> int:
        """How many repeats the arm recorded for at least one item."""
        return int(np.count_nonzero(self.recorded[:, arm, :].any(axis=0)))

    def arm_scores(self, arm: int) -> np.ndarray:
        """Items × repeats scores of one arm, trimmed to its own repeats."""
        return self.score[:, arm, : self.repeats(arm)]

    def arm_passed(self, arm: int) -> np.ndarray | None:
        """Items × repeats pass/fail of one arm; None when some scored case has no verdict
        (the arm has no pass rule)."""
        passed = self.passed[:, arm, : self.repeats(arm)]
        scored = np.isfinite(self.arm_scores(arm))
        return None if np.any(scored & np.isnan(passed)) else passed

    def item_means(self) -> np.ndarray:
        """Items × arms: each item's mean score over its repeats."""
        return np.nanmean(self.score, axis=2)

    def only(self, arms: list[int]) -> ItemMatrix:
        """The same items restricted to some arms (e.g. a pair)."""
        cells = {name: getattr(self, name)[:, arms, :] for name in _ARRAYS}
        return replace(self, arms=tuple(self.arms[i] for i in arms), **cells)

    def subset(self, rows: np.ndarray) -> ItemMatrix:
        """Some items (a boolean mask over ``item_ids``) of every arm."""
        index = np.flatnonzero(rows)
        cells = {name: getattr(self, name)[index] for name in _ARRAYS}
        return replace(
            self, item_ids=tuple(self.item_ids[i] for i in index),
            item_shas=tuple(self.item_shas[i] for i in index), **cells,
        )


def item_matrix(database: RunsDatabase, arms: tuple[ArmRun, ...] | list[ArmRun], evaluator: str | None = None) -> ItemMatrix:
    """Read the cases of ``arms`` from the DuckDB views into an aligned :class:`ItemMatrix`.

    Raises :class:`EvalsiteError` when no item is scored in every arm."""
    arms = tuple(arms)
    run_ids = [arm.run_id for arm in arms]
    if evaluator is None:
        rows = database.rows(CASE_CELLS_SQL, [run_ids])
    else:
        rows = database.rows(EVALUATOR_CELLS_SQL, [evaluator, run_ids, run_ids])
    per_arm = [_cases_by_item([r for r in rows if r["run_id"] == run_id]) for run_id in run_ids]
    kept, dropped = _align(arms, per_arm)
    if not kept:
        shown = "; ".join(f"{d.item_id}: {d.reason}" for d in dropped[:3])
        raise EvalsiteError(
            f"no item is scored in every run ({', '.join(run_ids)})" + (f": {shown}" if shown else "")
        )
    cells, recorded = _cells(kept, per_arm)
    shas = tuple(next((c["item_sha"] for cases in per_arm for c in cases[i] if c["item_sha"]), None) for i in kept)
    return ItemMatrix(arms, tuple(kept), shas, cells["score"], cells["passed"], cells["cost_usd"],
                      cells["latency_ms"], cells["tokens"], recorded, tuple(dropped), evaluator)


def _cells(kept: list[str], per_arm: list[dict[str, list[dict]]]) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Items × arms × repeats arrays of each case field (NaN = none), and where a case exists."""
    width = max(len(_repeat_columns(cases)) for cases in per_arm)
    shape = (len(kept), len(per_arm), width)
    cells = {name: np.full(shape, np.nan) for name in _CELL_FIELDS}
    recorded = np.zeros(shape, dtype=bool)
    for arm, cases in enumerate(per_arm):
        column = _repeat_columns(cases)
        for row, item_id in enumerate(kept):
            for case in cases[item_id]:
                cell = (row, arm, column[case["repeat"]])
                recorded[cell] = True
                for name in _CELL_FIELDS:
                    if case[name] is not None:
                        cells[name][cell] = case[name]
    return cells, recorded


def _cases_by_item(rows: list[dict]) -> dict[str, list[dict]]:
    grouped: dict[str, list[dict]] = {}
    for row in rows:
        grouped.setdefault(str(row["item_id"]), []).append(row)
    return grouped


def _repeat_columns(cases: dict[str, list[dict]]) -> dict[int, int]:
    repeats = sorted({case["repeat"] for item in cases.values() for case in item})
    return {repeat: column for column, repeat in enumerate(repeats)}


def _align(arms: tuple[ArmRun, ...], per_arm: list[dict[str, list[dict]]]) -> tuple[list[str], list[DroppedItem]]:
    kept, dropped = [], []
    for item_id in sorted(set().union(*per_arm), key=item_order):
        reason = _why_not_shared(item_id, arms, per_arm)
        if reason is None:
            kept.append(item_id)
        else:
            dropped.append(DroppedItem(item_id, reason))
    return kept, dropped


def _why_not_shared(item_id: str, arms: tuple[ArmRun, ...], per_arm: list[dict[str, list[dict]]]) -> str | None:
    missing = [arm.label for arm, cases in zip(arms, per_arm) if item_id not in cases]
    if missing:
        return f"no case in {', '.join(missing)}"
    unscored = [
        arm.label for arm, cases in zip(arms, per_arm) if all(case["score"] is None for case in cases[item_id])
    ]
    if unscored:
        return f"no score in {', '.join(unscored)}"
    shas = {case["item_sha"] for cases in per_arm for case in cases[item_id] if case["item_sha"]}
    if len(shas) > 1:
        return "the row differs between runs (its item_sha changed)"
    return None


@dataclass(frozen=True)
class ItemLabels:
    """One metadata field of each matrix item, read from the dataset file the runs name.

    ``values[i]`` is ``str(metadata[key])`` of item i, or None when the row has no such field or
    the file's row is no longer the row the run scored (``stale`` counts those)."""

    key: str
    values: tuple[str | None, ...]
    source: str
    stale: int

    @property
    def labelled(self) -> int:
        return sum(value is not None for value in self.values)


def dataset_path(matrix: ItemMatrix) -> str | None:
    """The dataset file the first run names (None for imported runs, which name none)."""
    return matrix.arms[0].header.dataset.path or None


def item_labels(project: Project, matrix: ItemMatrix, key: str) -> ItemLabels:
    """``metadata[key]`` of every matrix item (``group`` for clusters, ``split`` for a holdout).

    Cases do not carry metadata, so the rows come from the dataset file in the first run's header;
    a row counts only while its hash still equals the ``item_sha`` the run recorded. Raises
    :class:`~evalsite.errors.DatasetError` when the file cannot be read."""
    recorded_path = dataset_path(matrix)
    if not recorded_path:
        raise EvalsiteError(f"run {matrix.arms[0].run_id} names no dataset file (an imported run?), so its items' metadata is unknown")
    values, stale = dataset_labels(project.root, recorded_path, matrix.item_ids, matrix.item_shas, key)
    return ItemLabels(key, values, recorded_path, stale)


def cluster_labels(project: Project, matrix: ItemMatrix, key: str | None = None) -> tuple[str | None, tuple[str, ...] | None]:
    """The cluster of every matrix item when some item declares one (``metadata[key]``), else
    ``(None, None)``: items without the field are clusters of one. Runs whose dataset file is
    unknown (imported runs) or unreadable have no clusters."""
    chosen = key or cluster_key(project)
    try:
        labels = item_labels(project, matrix, chosen)
    except EvalsiteError:
        return None, None
    if labels.labelled == 0:
        return None, None
    return chosen, tuple(
        value if value is not None else f"\0item:{item_id}" for value, item_id in zip(labels.values, matrix.item_ids)
    )
