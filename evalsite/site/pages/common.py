"""Pieces several page families share: the runs table and run links."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any, TypeVar

from evalsite.runlog.store import Run
from evalsite.site import paths
from evalsite.site.figures import RunFigures
from evalsite.site.tables import Column, Link, Table

T = TypeVar("T")

RUN_COLUMNS = [
    Column("run", "run", "code", download="run_id"),
    Column("experiment", "experiment"),
    Column("arm", "arm"),
    Column("dataset", "dataset", "code"),
    Column("status", "status", "status"),
    Column("cases", "n", "count", "cases: items × repeats", secondary=True),
    Column("mean_score", "score", "number", "mean over items of each item's mean score"),
    Column("pass_rate", "pass rate", "percent", "mean over items of each item's share of passed repeats", secondary=True),
    Column("errors", "errors", "count", "cases whose generation failed"),
    Column("critical_failures", "critical failures", "count", "metadata.critical rows that errored or failed"),
    Column("cost_usd", "cost", "usd", "total cost; unknown when any case has no cost"),
    Column("started_at", "when", "when", "when the run started (UTC)"),
]


def runs_by(runs: Iterable[Run], key: Callable[[Run], str | None]) -> dict[str, list[Run]]:
    """Runs grouped by ``key`` (runs whose key is empty are left out), groups in key order."""
    groups: dict[str, list[Run]] = {}
    for run in runs:
        value = key(run)
        if value:
            groups.setdefault(value, []).append(run)
    return dict(sorted(groups.items()))


def run_link(run: Run) -> Link:
    return Link(run.run_id, paths.run(run.run_id))


def experiment_link(name: str | None) -> Link | str:
    return Link(name, paths.experiment(name)) if name else "—"


def dataset_link(dataset_id: str | None) -> Link | str:
    return Link(dataset_id, paths.dataset(dataset_id)) if dataset_id else "—"


def run_row(run: Run, summary: RunFigures | None) -> dict[str, Any]:
    return {
        "run": run_link(run),
        "experiment": experiment_link(run.header.experiment),
        "arm": run.header.arm_id,
        "dataset": dataset_link(run.header.dataset.dataset_id),
        "status": run.status,
        "cases": summary.cases if summary else None,
        "mean_score": summary.mean_score if summary else None,
        "pass_rate": summary.pass_rate if summary else None,
        "errors": summary.errors if summary else None,
        "critical_failures": summary.critical_failures if summary else None,
        "cost_usd": summary.cost_total if summary else None,
        "started_at": run.header.started_at,
        "_class": f"status-{run.status}" + _error_classes(summary),
    }


def _error_classes(summary: RunFigures | None) -> str:
    """Row classes that turn a run's status badge amber (some cases errored) or red (every case did)."""
    if summary is None or not summary.errors:
        return ""
    return " run-errored run-all-errored" if summary.errors == summary.cases else " run-errored"


#: Columns that go behind "show more columns" when every row holds the same value (one dataset, one experiment).
UNIFORM_SECONDARY = ("experiment", "dataset")


def _same_everywhere_secondary(columns: list[Column], rows: list[dict[str, Any]]) -> list[Column]:
    """The runs table fits a 1280 px screen: a column that says the same on every row is secondary."""
    def uniform(key: str) -> bool:
        return len(rows) > 1 and len({str(row.get(key)) for row in rows}) == 1

    return [replace(c, secondary=True) if c.key in UNIFORM_SECONDARY and uniform(c.key) else c for c in columns]


def runs_table(table_id: str, runs: Iterable[Run], figures: dict[str, RunFigures], caption: str = "",
               baselines: dict[str, str | None] | None = None,
               changes: dict[str, tuple[int, int, int] | None] | None = None,
               excluded: dict[str, str] | None = None) -> Table:
    """Runs newest first; with ``baselines`` (run id → its baseline's id) a column links each
    run's compare page, and with ``changes`` (run id → items improved, regressed, unchanged against
    that baseline) three more columns count them. With ``excluded`` (run id → the reason it is kept
    out of comparisons) an excluded run's row is marked and says why (the runs table only: every
    other listing leaves excluded runs out)."""
    ordered = sorted(runs, key=lambda r: r.recency, reverse=True)
    rows = [run_row(run, figures.get(run.run_id)) for run in ordered]
    if excluded is not None:
        for run, row in zip(ordered, rows):
            row["excluded"] = excluded.get(run.run_id)
            row["_class"] += " run-excluded" if run.run_id in excluded else ""
    columns = [*RUN_COLUMNS]
    if excluded is not None:
        columns.append(Column("excluded", "excluded", help="why `evalsite runs --exclude` keeps the run out of leaderboards, claims and baselines"))
    if baselines is None:
        return Table(table_id, _same_everywhere_secondary(columns, rows), rows, caption=caption)
    for run, row in zip(ordered, rows):
        baseline = baselines.get(run.run_id)
        row["compare"] = Link("compare", paths.compare(run.run_id, baseline)) if baseline else None
    columns.append(Column("compare", "vs baseline", help="the run against its baseline, as `evalsite compare` resolves it"))
    if changes is not None:
        for run, row in zip(ordered, rows):
            row["improved"], row["regressed"], row["unchanged"] = changes.get(run.run_id) or (None, None, None)
        columns += [Column("improved", "improved", "count", "items better than in the baseline (beyond the threshold)"),
                    Column("regressed", "regressed", "count", "items worse than in the baseline"),
                    Column("unchanged", "unchanged", "count", "items within the threshold", secondary=True)]
    return Table(table_id, _same_everywhere_secondary(columns, rows), rows, caption=caption)
