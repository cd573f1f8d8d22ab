"""The Python API: the same functions the command line calls, for scripts and notebooks.

Every function takes an optional ``project`` (a folder path or a :class:`~evalsite.project.Project`;
default: the project containing the current folder). Synchronous functions also work inside a
running event loop (Jupyter); :func:`run_experiment_async` is the awaitable form of a run.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalsite.project import Project, find_project

if TYPE_CHECKING:
    from evalsite.analysis.compare import ComparisonReport
    from evalsite.analysis.leaderboard import Leaderboard
    from evalsite.execute.outcomes import BatchOutcome
    from evalsite.experiment.plan import Plan
    from evalsite.runlog.records import Case
    from evalsite.runlog.store import Run
    from evalsite.site.build import SiteReport


def _project(project: Project | str | Path | None) -> Project:
    if isinstance(project, Project):
        return project
    return find_project(None if project is None else Path(project))


def _reading(project: Project | str | Path | None) -> Project:
    """The project, its mirror of a URI runs location refreshed (as reading commands do)."""
    where = _project(project)
    if "://" in (where.runs_location or ""):
        from evalsite.analysis.remote import refresh_project_store

        refresh_project_store(where)
    return where


def _prepared(manifest: str | Path, project: Project, arms: Sequence[str], overrides: Sequence[str],
              repeat: int | None) -> Plan:
    from evalsite.execute.prepare import prepare_plan

    path = Path(manifest)
    path = path if path.is_absolute() or path.exists() else project.root / path
    return prepare_plan(project, path, overrides=tuple(overrides), arm_ids=tuple(arms), repeat=repeat)


def run_experiment(
    manifest: str | Path, *, project: Project | str | Path | None = None, arms: Sequence[str] = (),
    overrides: Sequence[str] = (), repeat: int | None = None, concurrency: int | None = None,
    max_cost_usd: float | None = None, resume: str | None = None,
) -> BatchOutcome:
    """``evalsite run MANIFEST``: validate, plan and execute; returns the batch (its runs and why it stopped)."""
    from evalsite.execute.runner import execute_plan

    where = _project(project)
    plan = _prepared(manifest, where, arms, overrides, repeat)
    return execute_plan(where, plan, concurrency=concurrency, max_cost_usd=max_cost_usd, resume=resume)


async def run_experiment_async(
    manifest: str | Path, *, project: Project | str | Path | None = None, arms: Sequence[str] = (),
    overrides: Sequence[str] = (), repeat: int | None = None, concurrency: int | None = None,
    max_cost_usd: float | None = None, resume: str | None = None,
) -> BatchOutcome:
    """:func:`run_experiment` as a coroutine, on the caller's event loop."""
    from evalsite.execute.runner import execute_plan_async

    where = _project(project)
    plan = _prepared(manifest, where, arms, overrides, repeat)
    return await execute_plan_async(where, plan, concurrency=concurrency, max_cost_usd=max_cost_usd, resume=resume)


def cases_in_dataset_order(run: Run, *, project: Project | str | Path | None = None) -> list[Case]:
    """``run``'s cases in the order of its dataset's items, each item's repeats in order, however
    they were scheduled (the file keeps completion order)."""
    from evalsite.analysis.dataset_order import in_dataset_order

    return in_dataset_order(_reading(project).root, run)


def load_runs(*, project: Project | str | Path | None = None) -> list[Run]:
    """Every readable run of the project, oldest first (an unreadable one is skipped)."""
    from evalsite.errors import RunLogError
    from evalsite.runlog.store import read_run, run_directories

    runs = []
    for directory in run_directories(_reading(project).runs_dir):
        try:
            runs.append(read_run(directory))
        except RunLogError:
            continue
    return runs


def leaderboard(dataset: str | None = None, *, project: Project | str | Path | None = None,
                evaluator: str | None = None) -> Leaderboard:
    """``evalsite leaderboard``: every comparable arm on one dataset, with its verdict."""
    from evalsite.analysis.leaderboard import leaderboard as board

    return board(_reading(project), dataset, evaluator=evaluator)


def compare(run: str, *, baseline: str | None = None, project: Project | str | Path | None = None,
            **options: Any) -> ComparisonReport:
    """``evalsite compare RUN``: the fingerprint diff and, if comparable, the regression report."""
    from evalsite.analysis.compare import compare_runs

    return compare_runs(_reading(project), run, baseline=baseline, **options)


def build_site(*, project: Project | str | Path | None = None, out_dir: str | Path | None = None,
               full: bool = False) -> SiteReport:
    """``evalsite build``: render the static site (default ``site/``)."""
    from evalsite.site.build import build_site as build

    return build(_reading(project), None if out_dir is None else Path(out_dir), full=full)
