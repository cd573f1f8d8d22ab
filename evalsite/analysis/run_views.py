"""``evalsite show`` and ``evalsite runs``: each run's identity beside its
:func:`~evalsite.analysis.summary.summarise_run` figures, and which rows of a run are critical
when its cases did not record it."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalsite.analysis.remote import run_folders
from evalsite.errors import EvalsiteError
from evalsite.project import Project
from evalsite.runlog.decisions import excluded_runs
from evalsite.runlog.hashing import side_by_side
from evalsite.runlog.records import Case, DatasetRef, RunHeader
from evalsite.runlog.rows import is_critical
from evalsite.runlog.store import (
    CASES_FILE,
    CASES_SHA256,
    Run,
    cases_as_written,
    open_run,
    read_run,
    resolve_run,
    scan_runs,
)

if TYPE_CHECKING:
    from evalsite.analysis.case_columns import CaseColumns
    from evalsite.analysis.case_scan import ScannedCases
    from evalsite.analysis.summary import RunSummary


def dataset_critical(root: Path, header: RunHeader) -> dict[str, bool] | None:
    """Item id → :func:`~evalsite.runlog.rows.is_critical` of the run's dataset file, while that
    file still holds the rows the run scored (its ``dataset_id``); None when it is gone or changed
    (then, for cases that did not record ``critical``, criticality is unknown)."""
    rows = dataset_rows(root, header.dataset)
    return None if rows is None else {item_id: is_critical(row) for item_id, row in rows.items()}


def dataset_rows(root: Path, dataset: DatasetRef) -> dict[str, dict[str, Any]] | None:
    """Item id → row of a run's recorded dataset, while the file is inside the project and still
    holds the rows the run scored; None otherwise."""
    from evalsite.experiment.datasets import dataset_id as compute_dataset_id
    from evalsite.experiment.datasets import item_identity, load_rows

    path, expected_id, count = dataset.path, dataset.dataset_id, dataset.items
    if not isinstance(path, str) or not isinstance(expected_id, str) or "@" not in expected_id:
        return None
    file = (root / path).resolve()
    if not file.is_relative_to(root.resolve()):
        return None  # a recorded path that leaves the project is never read
    try:
        rows = load_rows(file)
        if isinstance(count, int):
            rows = rows[:count]
        items = item_identity(rows, path)
    except EvalsiteError:
        return None
    if compute_dataset_id(expected_id.rsplit("@", 1)[0], items) != expected_id:
        return None
    return {item.item_id: item.row for item in items}


def needs_dataset(cases: Sequence[Mapping[str, Any]]) -> bool:
    """Whether some case did not record its ``critical`` flag (only then is the dataset read)."""
    return any(not isinstance(case.get("critical"), bool) for case in cases)


def summarise_loaded(root: Path, run: Run) -> RunSummary:
    """The summary of a run read from disk, its dataset standing in for unrecorded critical flags."""
    from evalsite.analysis.summary import summarise_run

    fallback = dataset_critical(root, run.header) if needs_dataset(run.cases) else None
    return summarise_run(run.cases, fallback)


TOP_ERRORS = 8


@dataclass(frozen=True)
class ErrorCount:
    """One error message of a run: its first line, where it came from (``generation`` or the
    evaluator that raised it), how many cases met it and the first few of their item ids."""

    message: str
    source: str
    count: int
    items: tuple[str, ...]


def top_errors(cases: list[Case], limit: int = TOP_ERRORS) -> list[ErrorCount]:
    """A run's error messages grouped by their first line, most frequent first (ties by message):
    what ``evalsite show`` lists and the run page's error panel shows."""
    def met() -> Iterator[tuple[str, Any, str]]:
        for case in cases:
            item = str(case.get("item_id"))
            if case.error:  # the message, whether the line stores a string or {type, message}
                yield "generation", case.error, item
            for score in case.get("scores") or []:
                if isinstance(score, dict) and score.get("error"):
                    yield str(score.get("evaluator")), score["error"], item

    return _ranked(met(), limit)


def top_errors_of(columns: CaseColumns, case_errors: Mapping[int, Any] | Sequence[Any],
                  score_errors: Mapping[int, Any] | Sequence[Any], limit: int = TOP_ERRORS) -> list[ErrorCount]:
    """:func:`top_errors` of a run read as columns (each case's generation error, then its scores'
    errors, in the order read): the columns' error flags say which rows have one, and the texts are
    looked up at those rows only (``case_errors`` by case row, ``score_errors`` by score row: a
    run's :class:`~evalsite.analysis.case_texts.CaseTexts` lists, or :func:`flagged_errors`)."""
    import numpy as np  # `evalsite show` and `runs` never load it for this module

    scores = columns.scores
    failed, scored = np.flatnonzero(columns.error), np.flatnonzero(scores.error)
    cases = np.r_[failed, scores.case[scored]]
    order = np.argsort(cases, kind="stable").tolist()  # a case's generation error before its scores'
    entries = [("generation", case_errors[row]) for row in failed.tolist()]
    entries += [(scores.evaluators[scores.evaluator[row]], score_errors[row]) for row in scored.tolist()]
    item_ids, items = columns.item_ids, columns.item[cases].tolist()
    return _ranked(((*entries[n], item_ids[items[n]]) for n in order), limit)


def flagged_errors(scanned: ScannedCases) -> tuple[dict[int, Any], dict[int, Any]]:
    """The error texts of a run read without its texts, at the rows whose columns flag one
    (case row → its generation error, score row → that score's error), for :func:`top_errors_of`:
    only the cases with an error are read again."""
    import numpy as np

    columns = scanned.columns
    scores = columns.scores
    failed, scored = np.flatnonzero(columns.error).tolist(), np.flatnonzero(scores.error)
    owners = scores.case[scored]
    within = (scored - np.searchsorted(scores.case, owners)).tolist()  # a score's place in its case's list
    recorded = scanned.errors_at(sorted({*failed, *owners.tolist()}))
    return ({row: recorded[row][0] for row in failed},
            {row: recorded[case][1][place] for row, case, place in zip(scored.tolist(), owners.tolist(), within)})


def _ranked(met: Iterable[tuple[str, Any, str]], limit: int) -> list[ErrorCount]:
    """(source, error, item) entries grouped by source and the error's first line, most frequent first."""
    found: dict[tuple[str, str], list[str]] = {}
    for source, error, item in met:
        found.setdefault((source, _first_line(error)), []).append(item)
    ranked = sorted(found.items(), key=lambda pair: (-len(pair[1]), pair[0][1], pair[0][0]))[:limit]
    return [ErrorCount(message, source, len(items), tuple(items[:5])) for (source, message), items in ranked]


def _first_line(error: Any) -> str:
    text = str(error).strip()
    return (text.splitlines() or [""])[0][:300]


@dataclass(frozen=True)
class RunOverview:
    """One run as ``evalsite show`` prints it; ``warnings`` are problems met reading it."""

    run_id: str
    arm: str | None
    experiment: str | None
    dataset_id: str | None
    status: str
    fingerprint_hash: str | None
    summary: RunSummary
    warnings: list[str] = field(default_factory=list)
    errors_seen: list[ErrorCount] = field(default_factory=list)
    emulated: bool = False  # answered by emulation.infra.llm: mock (the key is written only then)

    def to_json(self) -> dict[str, Any]:
        identity = {"run_id": self.run_id, "arm": self.arm, "experiment": self.experiment,
                    "dataset_id": self.dataset_id, "status": self.status, "fingerprint_hash": self.fingerprint_hash,
                    **({"emulated": True} if self.emulated else {})}
        errors = [{"message": e.message, "source": e.source, "count": e.count, "items": list(e.items)}
                  for e in self.errors_seen]
        return {**identity, **self.summary.to_json(), "top_errors": errors}


def _identity(run: Run) -> dict[str, Any]:
    """The :class:`RunOverview` fields that name the run."""
    return {"run_id": run.run_id, "arm": run.header.arm_id, "experiment": run.header.experiment,
            "dataset_id": run.header.dataset.dataset_id, "status": str(run.status),
            "fingerprint_hash": run.header.fingerprint_hash, "emulated": run.header.emulated}


#: From this size a run's cases file is read by DuckDB as columns (on every core, no Python object a
#: case: 100,000 ~1 KB cases in ~1 s rather than ~6 s and 780 MB); below it, loading DuckDB and
#: pyarrow costs more than reading the lines in Python saves.
COLUMNAR_MIN_BYTES = 8 << 20


def large_cases(cases: Path) -> bool:
    """Whether the cases file holds :data:`COLUMNAR_MIN_BYTES` or more (False when it cannot be read)."""
    try:
        return cases.stat().st_size >= COLUMNAR_MIN_BYTES
    except OSError:
        return False


def run_overview(project: Project, reference: str) -> RunOverview:
    """``evalsite show RUN``: RUN is an id, a unique prefix of one, or a run folder."""
    directory = resolve_run(project.runs_dir, reference)
    run = open_run(directory)
    if _as_columns(run):
        return _columns_overview(project, run)
    run = read_run(directory)
    return RunOverview(**_identity(run), summary=summarise_loaded(project.root, run), warnings=run.warnings,
                       errors_seen=top_errors(run.cases))


def _as_columns(run: Run) -> bool:
    """Whether the run is large and its cases are as written (every line a well-typed case with a
    key of its own, so reading them has nothing to warn about): then :func:`_columns_overview`."""
    cases = run.directory / CASES_FILE
    return large_cases(cases) and run.footer is not None and cases_as_written(cases, run.footer.raw.get(CASES_SHA256))


def _columns_overview(project: Project, run: Run) -> RunOverview:
    """:func:`run_overview` of a run read as columns, as the site reads it: the same summary
    (:func:`~evalsite.analysis.summary.summarise_run` of its columns) and errors
    (:func:`top_errors_of`, their texts read at the flagged rows only)."""
    from evalsite.analysis.case_columns import NONE, with_dataset_critical
    from evalsite.analysis.case_scan import scan_cases
    from evalsite.analysis.summary import summarise_run

    scanned = scan_cases(run.directory)  # the texts only where an error is flagged (most runs have none)
    columns = scanned.columns
    fallback = dataset_critical(project.root, run.header) if (columns.critical == NONE).any() else None
    return RunOverview(**_identity(run), summary=summarise_run(with_dataset_critical(columns, fallback)),
                       errors_seen=top_errors_of(columns, *flagged_errors(scanned)))


#: What ``evalsite runs`` prints of each run's summary.
LISTED = ("cases", "mean_score", "pass_rate")


@dataclass(frozen=True)
class RunListing:
    """``evalsite runs``: one row per readable run, newest first, and why others were skipped."""

    rows: list[dict[str, Any]]
    skipped: list[str]


def run_listing(project: Project) -> RunListing:
    """Every readable run with its cases, mean score and pass rate, as :func:`summarise_run`
    defines them, and the reason it is excluded from comparisons (None: it is not). A finished
    run's figures are its footer's, the summary its writer recorded, while the footer's
    ``cases_sha256`` is still its cases file's (:func:`~evalsite.runlog.store.cases_as_written`);
    only the other runs (running, interrupted, compacted, edited, or written before footers
    recorded the hash) are summarised from their case columns, read by DuckDB."""
    runs, skipped = scan_runs(project.runs_dir, run_folders(project.runs_dir))
    read = dict(zip([run.run_id for run in runs], side_by_side(_footer_figures, runs)))  # their cases hashed on every core
    figures = {run_id: found for run_id, found in read.items() if found is not None}
    figures.update(_summarised([run for run in runs if run.run_id not in figures]))
    excluded = excluded_runs(project.runs_dir)
    rows = []
    for run in sorted(runs, key=lambda run: run.run_id, reverse=True):
        exclusion = excluded.get(run.run_id)
        rows.append({"run_id": run.run_id, "arm": run.header.arm_id, "experiment": run.header.experiment,
                     "dataset_id": run.header.dataset.dataset_id, "status": str(run.status), **figures[run.run_id],
                     "excluded": exclusion.reason if exclusion else None})
    return RunListing(rows, skipped)


def _footer_figures(run: Run) -> dict[str, Any] | None:
    """The :data:`LISTED` figures of the run's footer, when its cases are still as written."""
    if run.footer is None or not cases_as_written(run.directory / CASES_FILE, run.footer.raw.get(CASES_SHA256)):
        return None
    totals = run.footer.totals
    if totals.cases is None:
        return None
    return {"cases": totals.cases, "mean_score": totals.mean_score, "pass_rate": totals.pass_rate}


def _summarised(runs: list[Run]) -> dict[str, dict[str, Any]]:
    """The :data:`LISTED` figures of these runs from their case columns (no Python object per case)."""
    if not runs:
        return {}
    from evalsite.analysis.case_scan import VIEW_COLUMNS_SQL, columns_by_run
    from evalsite.analysis.db import connect, define_case_views
    from evalsite.analysis.summary import summarise_run

    connection = connect()
    try:
        define_case_views(connection, [run.directory for run in runs])
        cases = columns_by_run(connection.sql(VIEW_COLUMNS_SQL).to_arrow_table())
    finally:
        connection.close()
    summaries = {run.run_id: summarise_run(cases[run.run_id] if run.run_id in cases else []) for run in runs}
    return {run_id: {name: getattr(summary, name) for name in LISTED} for run_id, summary in summaries.items()}
