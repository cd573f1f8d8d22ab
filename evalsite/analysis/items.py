"""Item × arm × repeat matrices of the chosen runs, aligned on ``item_id``.

Every statistic that compares arms pairs them item by item, so the matrix keeps only the items
every arm has scored — and the same row in every run (equal ``item_sha``) — and lists every
other item with the reason. Cells are NaN where a repeat has no score (or no verdict, cost,
latency); ``recorded`` tells a missing case from a case with an unknown value.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from statistics import fmean
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from evalsite.analysis.case_columns import NONE, CaseColumns, case_columns, item_natural_order
from evalsite.analysis.case_scan import dictionary_codes, finite_floats
from evalsite.analysis.metadata import cluster_key, dataset_labels
from evalsite.errors import EvalsiteError
from evalsite.project import Project
from evalsite.runlog.store import Run

if TYPE_CHECKING:  # selection builds on compare, which builds on the regression report, which reads this module;
    # the DuckDB views are the caller's
    from evalsite.analysis.db import RunsDatabase
    from evalsite.analysis.selection import ArmRun

#: One row per case of the chosen runs, numeric columns only besides the ids (fetched as Arrow).
#: ``chosen`` is a CTE over the chosen runs' files only (:func:`_chosen_cases`).
CASE_CELLS_SQL = """
SELECT run_id, item_id, nullif(item_sha, '') AS item_sha, coalesce(repeat, 0)::BIGINT AS repeat, score, passed::DOUBLE AS passed,
       cost_usd, latency_ms, (input_tokens + output_tokens)::DOUBLE AS tokens
FROM chosen WHERE list_contains(?, run_id)
"""
#: The case columns :data:`CASE_CELLS_SQL` reads (besides run_id): the scan reads no other.
CASE_CELL_COLUMNS = ("item_id", "item_sha", "repeat", "score", "passed", "cost_usd", "latency_ms", "input_tokens",
                     "output_tokens")
#: The same with one evaluator's score: a per-turn evaluator's turns averaged per case.
EVALUATOR_CELLS_SQL = """
SELECT c.run_id, c.item_id, nullif(c.item_sha, '') AS item_sha, coalesce(c.repeat, 0)::BIGINT AS repeat, s.score, s.passed::DOUBLE AS passed,
       c.cost_usd, c.latency_ms, (c.input_tokens + c.output_tokens)::DOUBLE AS tokens
FROM chosen c LEFT JOIN (
    SELECT run_id, item_id, coalesce(repeat, 0) AS repeat,
           avg(score) FILTER (WHERE error IS NULL AND NOT coalesce(skipped, false)) AS score,
           bool_and(passed) AS passed
    FROM chosen_scores WHERE evaluator = ? AND list_contains(?, run_id) GROUP BY ALL
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
    passes when every turn passed. ``repeat_ids[arm]`` is the repeat number of each of that
    arm's columns.

    A matrix of every item (``shared=False`` in :func:`runs_item_matrix`) keeps the items some
    arm lacks, with nothing recorded there, and drops none."""

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
    repeat_ids: tuple[tuple[int, ...], ...] = ()

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
        means: np.ndarray = np.nanmean(self.score, axis=2)
        return means

    def mean_of(self, name: str, row: int, arm: int) -> float | None:
        """One cell's mean over its repeats with a value of ``name`` (``score``, ``latency_ms``, …);
        None without one."""
        known = [value for value in getattr(self, name)[row, arm].tolist() if value == value]  # NaN != NaN
        return fmean(known) if known else None

    def means_of(self, name: str, arm: int) -> np.ndarray:
        """Every item's :meth:`mean_of` for one arm (NaN: none), each an exact mean (``fmean``)."""
        values = getattr(self, name)[:, arm, :]
        known = ~np.isnan(values)
        counts = known.sum(axis=1)
        means = np.full(values.shape[0], np.nan)
        single = np.flatnonzero(counts == 1)
        means[single] = values[single][known[single]]
        for row in np.flatnonzero(counts > 1).tolist():
            means[row] = fmean(values[row][known[row]].tolist())
        return means

    def item_passed(self, row: int, arm: int) -> bool | None:
        """Every repeat of the cell with a verdict passed; None when none has one."""
        known = [value for value in self.passed[row, arm].tolist() if value == value]
        return all(value == 1.0 for value in known) if known else None

    def only(self, arms: list[int]) -> ItemMatrix:
        """The same items restricted to some arms (e.g. a pair)."""
        cells = {name: getattr(self, name)[:, arms, :] for name in _ARRAYS}
        return replace(self, arms=tuple(self.arms[i] for i in arms), repeat_ids=tuple(self.repeat_ids[i] for i in arms),
                       **cells)

    def subset(self, rows: np.ndarray) -> ItemMatrix:
        """Some items (a boolean mask over ``item_ids``) of every arm."""
        index = np.flatnonzero(rows)
        cells = {name: getattr(self, name)[index] for name in _ARRAYS}
        return replace(
            self, item_ids=tuple(self.item_ids[i] for i in index),
            item_shas=tuple(self.item_shas[i] for i in index), **cells,
        )


def item_matrix(database: RunsDatabase, arms: Sequence[ArmRun], evaluator: str | None = None,
                kept: Mapping[str, pa.Table] | None = None) -> ItemMatrix:
    """Read the cases of ``arms`` from the DuckDB views into an aligned :class:`ItemMatrix`.

    DuckDB scans the cases once into Arrow columns; ids are dictionary-encoded there, and the
    alignment (which items every arm scored, each arm's repeat columns, the dropped items'
    reasons) and the cells are computed on numpy arrays, so no Python object is made per case
    (only one per distinct item id, for the natural order). ``kept``: run id → the run's
    :func:`case_cells` the caller already has (the site keeps them); with the case score (no
    ``evaluator``) only the other runs are read. Raises :class:`EvalsiteError` when no item is
    scored in every arm."""
    arms = tuple(arms)
    run_ids = [arm.run_id for arm in arms]
    if evaluator is not None:
        table = database.arrow(_chosen_cases(database, run_ids) + EVALUATOR_CELLS_SQL, [evaluator, run_ids, run_ids])
    elif not kept or not set(kept) & set(run_ids):
        table = database.arrow(_chosen_cases(database, run_ids, CASE_CELL_COLUMNS) + CASE_CELLS_SQL, [run_ids])
    else:
        table = pa.concat_tables([kept[run_id] if run_id in kept else database.arrow(
            _chosen_cases(database, [run_id], CASE_CELL_COLUMNS) + CASE_CELLS_SQL, [[run_id]]).cast(CELLS_SCHEMA) for run_id in dict.fromkeys(run_ids)])
    return _matrix(table, arms, evaluator, shared=True)


def _chosen_cases(database: RunsDatabase, run_ids: list[str], names: Sequence[str] | None = None) -> str:
    """``WITH chosen AS (…), chosen_scores AS (…)``: the cases (and scores) of these runs read
    from their own files only, so a project's other runs are not scanned; the ``cases`` view
    when some run is not among the database's readable runs. ``names``: ``WITH chosen AS (…)``
    holding run_id and these columns only (no scores), the others not read."""
    from evalsite.analysis.db import case_source, scores_of
    from evalsite.analysis.parquet import case_files
    from evalsite.analysis.remote import register_filesystems

    if all(run_id in database.runs for run_id in run_ids):
        files = case_files([database.runs[run_id].directory for run_id in dict.fromkeys(run_ids)])
        register_filesystems(database.connection, files.parquet)  # compacted runs in object storage
        source = case_source([database.runs[run_id].directory for run_id in dict.fromkeys(run_ids)], files, names)
    else:
        source = "SELECT * FROM cases"
    return f"WITH chosen AS ({source})" + ("" if names is not None else f", chosen_scores AS ({scores_of('chosen')})")


def runs_item_matrix(runs: Sequence[Run], *, shared: bool = True) -> ItemMatrix:
    """The item matrix of runs already read (their cases in memory), built by the same rules
    as :func:`item_matrix`; ``shared=False`` keeps every item any run recorded (the
    regression report and the comparison matrix list one-sided items too)."""
    return columns_item_matrix(runs, [case_columns(run.cases) for run in runs], shared=shared)


def columns_item_matrix(runs: Sequence[Run], cases: Sequence[CaseColumns], *, shared: bool = True) -> ItemMatrix:
    """The same matrix from each run's :class:`~evalsite.analysis.case_columns.CaseColumns`
    (``cases[i]`` are ``runs[i]``'s), with no Python object per case."""
    tables = [case_cells(run.run_id, columns) for run, columns in zip(runs, cases)]
    return _matrix(pa.concat_tables(tables), _arms_of(runs), None, shared=shared)


def _arms_of(runs: Sequence[Run]) -> tuple[ArmRun, ...]:
    from evalsite.analysis.selection import ArmRun, arm_labels  # see the TYPE_CHECKING import

    labels = arm_labels([run.header for run in runs])
    return tuple(
        ArmRun(label, run.run_id, run.header.arm_id, run.header.config_id, str(run.status), run.header.started_at, run.header)
        for run, label in zip(runs, labels)
    )


def case_cells(run_id: str, columns: CaseColumns) -> pa.Table:
    """One run's columns as the Arrow columns :data:`CASE_CELLS_SQL` selects (:data:`CELLS_SCHEMA`),
    which a caller may keep per run and give :func:`item_matrix` as ``kept``."""
    size = columns.size

    def decoded(codes: np.ndarray, values: Sequence[str]) -> pa.Array:
        indices = pa.array(codes.astype(np.int32), pa.int32(), mask=codes < 0)
        return pa.DictionaryArray.from_arrays(indices, pa.array(list(values), pa.string())).cast(pa.string())

    shas = columns.item_sha if columns.item_sha is not None else np.full(size, -1, dtype=np.int64)
    return pa.Table.from_pydict({
        "run_id": decoded(np.zeros(size, dtype=np.int64), [run_id]), "item_id": decoded(columns.item, columns.item_ids),
        "item_sha": decoded(shas, columns.shas), "repeat": pa.array(columns.repeat, pa.int64()),
        "score": pa.array(columns.score, pa.float64()),
        "passed": pa.array(np.where(columns.passed == NONE, np.nan, columns.passed.astype(float)), pa.float64()),
        "cost_usd": pa.array(columns.cost_usd, pa.float64()), "latency_ms": pa.array(columns.latency_ms, pa.float64()),
        "tokens": pa.array(columns.input_tokens + columns.output_tokens, pa.float64()),
    }, schema=CELLS_SCHEMA)


#: The columns :data:`CASE_CELLS_SQL` selects, as Arrow types.
CELLS_SCHEMA = pa.schema([("run_id", pa.string()), ("item_id", pa.string()), ("item_sha", pa.string()),
                           ("repeat", pa.int64()), *((name, pa.float64()) for name in _CELL_FIELDS)])


def _matrix(table: pa.Table, arms: tuple[ArmRun, ...], evaluator: str | None, *, shared: bool) -> ItemMatrix:
    run_ids = [arm.run_id for arm in arms]
    cases = _case_columns(table, run_ids)
    coverage = _coverage(cases, len(arms))
    if not shared:
        coverage = replace(coverage, kept=np.asarray(coverage.present.any(axis=1)))
    natural = item_natural_order(cases.item_ids)
    kept = natural[coverage.kept[natural]]
    dropped = tuple(
        DroppedItem(cases.item_ids[code], _why_not_shared(code, arms, coverage)) for code in natural[~coverage.kept[natural]]
    )
    if kept.size == 0:
        shown = "; ".join(f"{d.item_id}: {d.reason}" for d in dropped[:3])
        raise EvalsiteError(
            f"no item is scored in every run ({', '.join(run_ids)})" + (f": {shown}" if shown else "")
        )
    cells, recorded = _cells(cases, kept, len(arms))
    shas = tuple(None if coverage.sha[code] < 0 else cases.shas[coverage.sha[code]] for code in kept.tolist())
    return ItemMatrix(arms, tuple(cases.item_ids[code] for code in kept.tolist()), shas, cells["score"], cells["passed"],
                      cells["cost_usd"], cells["latency_ms"], cells["tokens"], recorded, dropped, evaluator,
                      cases.repeat_ids)


@dataclass(frozen=True)
class _CaseColumns:
    """Every case of the chosen arms as parallel columns, one entry per (arm, case): the arm's
    index, the item's code into ``item_ids``, the case's repeat column within its arm (repeats
    numbered per arm in order), the item_sha's code into ``shas`` (-1: none) and the cell fields
    (NaN: no value), in the order DuckDB read the cases."""

    arm: np.ndarray
    item: np.ndarray
    column: np.ndarray
    sha: np.ndarray
    fields: dict[str, np.ndarray]
    item_ids: list[str]
    shas: list[str]
    width: int
    repeat_ids: tuple[tuple[int, ...], ...]


def _case_columns(table: pa.Table, run_ids: list[str]) -> _CaseColumns:
    runs = dictionary_codes(table.column("run_id"))
    known = {run_id: code for code, run_id in enumerate(runs.dictionary.to_pylist())}
    run_codes = runs.indices.to_numpy()
    rows_of_arm = [
        np.flatnonzero(run_codes == known[run_id]) if run_id in known else np.empty(0, dtype=np.int64) for run_id in run_ids
    ]
    rows = np.concatenate(rows_of_arm) if rows_of_arm else np.empty(0, dtype=np.int64)
    arm = np.repeat(np.arange(len(run_ids)), [r.size for r in rows_of_arm])
    items, shas = dictionary_codes(table.column("item_id")), dictionary_codes(table.column("item_sha"))
    repeat = table.column("repeat").to_numpy()[rows]
    column = _dense_rank_within(arm, repeat)
    return _CaseColumns(
        arm=arm, item=items.indices.to_numpy()[rows], column=column,
        sha=pc.fill_null(shas.indices, -1).to_numpy()[rows],
        fields={name: finite_floats(table.column(name))[rows] for name in _CELL_FIELDS},
        item_ids=[str(item_id) for item_id in items.dictionary.to_pylist()],
        shas=[str(sha) for sha in shas.dictionary.to_pylist()],
        width=int(column.max()) + 1 if column.size else 0,
        repeat_ids=tuple(tuple(int(r) for r in np.unique(repeat[arm == index])) for index in range(len(run_ids))),
    )


def _dense_rank_within(groups: np.ndarray, values: np.ndarray) -> np.ndarray:
    """For each row, the rank of its value among the distinct values of its group (0, 1, …)."""
    if groups.size == 0:
        return np.empty(0, dtype=np.int64)
    if values.min() == values.max():  # one value throughout (every case repeat 0): no sort needed
        return np.zeros(groups.size, dtype=np.int64)
    order = np.lexsort((values, groups))
    group, value = groups[order], values[order]
    new_group = np.r_[True, group[1:] != group[:-1]]
    new_value = new_group | np.r_[True, value[1:] != value[:-1]]
    rank = np.cumsum(new_value) - 1
    first_of_group = rank[new_group][np.cumsum(new_group) - 1]
    dense = np.empty(groups.size, dtype=np.int64)
    dense[order] = rank - first_of_group
    return dense


@dataclass(frozen=True)
class _Coverage:
    """Per distinct item (by code): the arms with a case (``present``) and with a score
    (``scored``), items × arms; one of its item_shas (-1: none); and whether the matrix keeps it
    (a case in every arm, a score in every arm, at most one distinct item_sha)."""

    present: np.ndarray
    scored: np.ndarray
    sha: np.ndarray
    kept: np.ndarray


def _coverage(cases: _CaseColumns, n_arms: int) -> _Coverage:
    n_items = len(cases.item_ids)
    present = np.zeros((n_items, n_arms), dtype=bool)
    present[cases.item, cases.arm] = True
    scored = np.zeros((n_items, n_arms), dtype=bool)
    has_score = ~np.isnan(cases.fields["score"])
    scored[cases.item[has_score], cases.arm[has_score]] = True
    with_sha = cases.sha >= 0
    items, shas = cases.item[with_sha], cases.sha[with_sha]
    sha = np.full(n_items, -1, dtype=np.int64)
    sha[items] = shas  # one of each item's shas: a second one differs from it in some case
    changed = np.zeros(n_items, dtype=bool)
    changed[items[shas != sha[items]]] = True
    kept = present.all(axis=1) & scored.all(axis=1) & ~changed
    return _Coverage(present, scored, sha, kept)


def _why_not_shared(code: int, arms: tuple[ArmRun, ...], coverage: _Coverage) -> str:
    missing = [arm.label for arm, there in zip(arms, coverage.present[code]) if not there]
    if missing:
        return f"no case in {', '.join(missing)}"
    unscored = [arm.label for arm, scored in zip(arms, coverage.scored[code]) if not scored]
    if unscored:
        return f"no score in {', '.join(unscored)}"
    return "the row differs between runs (its item_sha changed)"


def _cells(cases: _CaseColumns, kept: np.ndarray, n_arms: int) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Items × arms × repeats arrays of each case field (NaN = none), and where a case exists.

    When one (item, arm, repeat) has several cases (a run log written twice), the last one
    with a value gives each field, as reading the cases in order and keeping known values does."""
    row_of = np.full(len(cases.item_ids), -1, dtype=np.int64)
    row_of[kept] = np.arange(kept.size)
    rows = row_of[cases.item]
    chosen = rows >= 0
    shape = (kept.size, n_arms, cases.width)
    flat = np.ravel_multi_index((rows[chosen], cases.arm[chosen], cases.column[chosen]), shape)
    recorded = np.zeros(shape, dtype=bool)
    recorded.flat[flat] = True
    repeated = np.count_nonzero(recorded) < flat.size
    cells = {}
    for name in _CELL_FIELDS:
        values = cases.fields[name][chosen]
        known = ~np.isnan(values)
        cell = np.full(shape, np.nan)
        index, known_values = flat[known], values[known]
        if repeated:  # the last known value of each cell: first occurrence in reverse order
            index, first = np.unique(index[::-1], return_index=True)
            known_values = known_values[::-1][first]
        cell.flat[index] = known_values
        cells[name] = cell
    return cells, recorded


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


#: The cluster label of an item without the cluster field (a cluster of one).
ALONE_PREFIX = "\0item:"


def cluster_labels(project: Project, matrix: ItemMatrix, key: str | None = None) -> tuple[str | None, tuple[str, ...] | None]:
    """The cluster of every matrix item when some item declares one (``metadata[key]``), else
    ``(None, None)``: items without the field are clusters of one. Runs whose dataset file is
    unknown (imported runs) or unreadable have no clusters."""
    chosen = key or cluster_key(project)
    recorded_path = dataset_path(matrix)
    if recorded_path and not may_hold_metadata(project.root, recorded_path):
        return None, None
    try:
        labels = item_labels(project, matrix, chosen)
    except EvalsiteError:
        return None, None
    if labels.labelled == 0:
        return None, None
    return chosen, tuple(
        value if value is not None else f"{ALONE_PREFIX}{item_id}" for value, item_id in zip(labels.values, matrix.item_ids)
    )


def may_hold_metadata(root: Path, recorded_path: str) -> bool:
    """False when the dataset file is text that never spells ``metadata`` (nor a JSON ``\\u``
    escape that could): then no row has any, and the file need not be parsed and hashed (4 s
    for 100k rows) to find clusters."""
    if recorded_path.lower().endswith(".parquet"):
        return True
    path = (root / recorded_path).resolve()
    if not path.is_relative_to(root.resolve()):
        return True  # dataset_labels refuses it
    try:
        text = path.read_bytes()
    except OSError:
        return True
    return b"metadata" in text or b"\\u" in text
