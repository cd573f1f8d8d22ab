"""Pieces several page families share: the runs table, run facts, and page splitting."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

from evalsite.analysis.summary import RunSummary
from evalsite.runlog.store import Run
from evalsite.site import paths
from evalsite.site.pages import doc
from evalsite.site.tables import Column, Link, Table

T = TypeVar("T")

RUN_COLUMNS = [
    Column("run", "run", "code"),
    Column("experiment", "experiment"),
    Column("arm", "arm"),
    Column("dataset", "dataset", "code"),
    Column("status", "status", "status"),
    Column("cases", "n", "count", "cases: items × repeats"),
    Column("mean_score", "score", "number", "mean over items of each item's mean score"),
    Column("pass_rate", "pass rate", "percent", "mean over items of each item's share of passed repeats"),
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


def run_row(run: Run, summary: RunSummary | None) -> dict:
    critical = None if summary is None or summary.critical_failures is None else len(summary.critical_failures)
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
        "critical_failures": critical,
        "cost_usd": summary.cost.total if summary else None,
        "started_at": run.header.started_at,
        "_class": f"status-{run.status}" + _error_classes(summary),
    }


def _error_classes(summary: RunSummary | None) -> str:
    """Row classes that turn a run's status badge amber (some cases errored) or red (every case did)."""
    if summary is None or not summary.errors:
        return ""
    return " run-errored run-all-errored" if summary.errors == summary.cases else " run-errored"


def runs_table(table_id: str, runs: Iterable[Run], digests: dict[str, RunSummary], caption: str = "",
               baselines: dict[str, str | None] | None = None,
               changes: dict[str, tuple[int, int, int] | None] | None = None) -> Table:
    """Runs newest first; with ``baselines`` (run id → its baseline's id) a column links each
    run's compare page, and with ``changes`` (run id → items improved, regressed, unchanged against
    that baseline) three more columns count them."""
    ordered = sorted(runs, key=lambda r: r.recency, reverse=True)
    rows = [run_row(run, digests.get(run.run_id)) for run in ordered]
    if baselines is None:
        return Table(table_id, RUN_COLUMNS, rows, caption=caption)
    for run, row in zip(ordered, rows):
        baseline = baselines.get(run.run_id)
        row["compare"] = Link("compare", paths.compare(run.run_id, baseline)) if baseline else None
    columns = [*RUN_COLUMNS, Column("compare", "vs baseline", help="the run against its baseline, as `evalsite compare` resolves it")]
    if changes is not None:
        for run, row in zip(ordered, rows):
            row["improved"], row["regressed"], row["unchanged"] = changes.get(run.run_id) or (None, None, None)
        columns += [Column("improved", "improved", "count", "items better than in the baseline (beyond the threshold)"),
                    Column("regressed", "regressed", "count", "items worse than in the baseline"),
                    Column("unchanged", "unchanged", "count", "items within the threshold")]
    return Table(table_id, columns, rows, caption=caption)


def paginate(records: list[T], max_count: int, budget_bytes: int, size_of: Callable[[T], int]) -> list[list[T]]:
    """Split ``records`` into pages of at most ``max_count``, closing a page early once it holds
    ``budget_bytes`` (a single record larger than the budget gets a page of its own). Always at least one page."""
    pages: list[list[T]] = [[]]
    used = 0
    for record in records:
        size = size_of(record)
        if pages[-1] and (len(pages[-1]) >= max_count or used + size > budget_bytes):
            pages.append([])
            used = 0
        pages[-1].append(record)
        used += size
    return pages


@dataclass(kw_only=True)
class ViewLink:
    """One filter of a paged listing (e.g. failed cases), with how many records it holds."""

    name: str = doc("Filter name used in file names (all, passed, failed, …).")
    label: str = doc("Filter label shown to the reader.")
    count: int = doc("Records in this filter.")
    href: str | None = doc("Site-root-relative link to its first page; None when it is empty.")
    current: bool = doc("True for the filter the page shows.")


@dataclass(kw_only=True)
class PageLink:
    """A link to one page of a listing."""

    number: int = doc("Page number, from 1.")
    href: str = doc("Site-root-relative link to the page.")
    current: bool = doc("True for the page being shown.")


@dataclass(kw_only=True)
class Pager:
    """Where a page sits in a filtered, paginated listing; every link works with JavaScript off."""

    view: str = doc("The filter shown.")
    views: list[ViewLink] = doc("Every filter, with counts and links.")
    pages: list[PageLink] = doc("Every page of the shown filter.")
    previous: str | None = doc("Link to the previous page, if any.")
    next: str | None = doc("Link to the next page, if any.")
    first: int = doc("1-based position of the first record on this page within the filter.")
    last: int = doc("Position of the last record on this page.")
    total: int = doc("Records in the shown filter.")


@dataclass(frozen=True)
class Shard(Generic[T]):
    """One page of one filter: its path, its place in the listing, and its records."""

    path: str = doc("Site-root-relative path of the page.")
    pager: Pager = doc("Its place among the filters and pages.")
    records: list[T] = doc("The records on the page.")


def paged_views(records: list[T], views: dict[str, tuple[str, Callable[[T], bool]]], path_of: Callable[[str, int], str],
                *, max_count: int, budget_bytes: int, size_of: Callable[[T], int],
                view_sizes: dict[str, Callable[[T], int]] | None = None) -> list[Shard[T]]:
    """Every page of every non-empty filter (``all`` always has at least one page); ``view_sizes``
    sizes a view's records differently when its pages show more or less of each record."""
    selected = {name: [r for r in records if keep(r)] for name, (_, keep) in views.items()}
    sizes = view_sizes or {}
    split = {name: paginate(chosen, max_count, budget_bytes, sizes.get(name, size_of))
             for name, chosen in selected.items() if chosen or name == "all"}
    shards = []
    for name, pages in split.items():
        links = [PageLink(number=n, href=path_of(name, n), current=False) for n in range(1, len(pages) + 1)]
        offset = 0
        for number, page in enumerate(pages, start=1):
            pager = Pager(
                view=name,
                views=[ViewLink(name=v, label=label, count=len(selected[v]), href=path_of(v, 1) if v in split else None,
                                current=v == name) for v, (label, _) in views.items()],
                pages=[PageLink(number=link.number, href=link.href, current=link.number == number) for link in links],
                previous=path_of(name, number - 1) if number > 1 else None,
                next=path_of(name, number + 1) if number < len(pages) else None,
                first=offset + 1 if page else 0,
                last=offset + len(page),
                total=len(selected[name]),
            )
            shards.append(Shard(path_of(name, number), pager, page))
            offset += len(page)
    return shards
