"""The Python API: the same functions the command line calls, for scripts and notebooks.

Every function takes an optional ``project`` (a folder path or a :class:`~evalsite.project.Project`;
default: the project containing the current folder). Synchronous functions also work inside a
running event loop (Jupyter); :func:`run_experiment_async` is the awaitable form of a run, and
the one batch function ``evalsite run`` calls: every guard of a run is in it, the command only
parses its options and prints the :class:`BatchResult`.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

from evalsite.collector import collector_paused, kept_frozen
from evalsite.errors import EvalsiteError, OutputError, ProjectError, did_you_mean
from evalsite.project import RUNS_ENV, Project, find_project, max_error_rate

if TYPE_CHECKING:
    from evalsite.analysis.ci_files import TestOutcome
    from evalsite.analysis.compare import ComparisonReport
    from evalsite.analysis.leaderboard import Leaderboard
    from evalsite.execute.merge import MergedRun
    from evalsite.execute.outcomes import BatchOutcome, RunOutcome
    from evalsite.experiment.estimate import PlanEstimate
    from evalsite.experiment.plan import Plan
    from evalsite.runlog.records import Case
    from evalsite.runlog.store import Run
    from evalsite.site.report import SiteReport

log = logging.getLogger(__name__)

#: The study levels, outermost first: ``depth`` names the outermost whose post steps run.
Depth = Literal["experiment", "arm", "item", "case"]
#: ``decided``: stop once every pair of arms is decided (the manifest's stop_when, or its defaults).
Until = Literal["decided"]
#: ``local``: in this process; ``ray``: the plan's shards as Ray tasks, merged.
Executor = Literal["local", "ray"]
#: The response cache mode, over the manifest's ``emulation.cache``.
CacheMode = Literal["off", "record", "replay", "auto"]
#: ``regression``: with ``baseline``, a failed gate or a baseline that is not comparable fails the batch.
FailOn = Literal["regression"]
#: How many shards the Ray executor splits a plan into unless ``shards`` says.
DEFAULT_SHARDS = 2


class OptionError(EvalsiteError, ValueError):
    """An option of an API call is not one it takes (a word not in its choices, a number out of
    range); the message names the option and the value. Exit code 2, as click gives a bad option."""

    exit_code = 2


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


def _writing(project: Project | str | Path | None) -> Project:
    """The project, refused when its runs live at a URI: the local folder is a mirror that only
    ``evalsite compact --to`` writes, and a run there would never reach the store."""
    where = _project(project)
    if where.runs_dir != where.local_runs_dir:
        raise ProjectError(f"the runs location is {where.runs_location}, which only `evalsite compact --to` writes; "
                           f"unset {RUNS_ENV} / [store] runs to run here, then compact --to it")
    return where


def _choice(option: str, value: str | None, words: Any) -> None:
    """Refuse ``value`` unless it is one of the ``Literal`` ``words`` (or None)."""
    allowed = get_args(words)
    if value is not None and value not in allowed:
        raise OptionError(f"{option}={value!r} is not one of {', '.join(map(repr, allowed))}"
                          f"{did_you_mean(value, allowed)}")


def _in_range(option: str, value: float | None, low: float, high: float = math.inf) -> None:
    if value is not None and not (math.isfinite(value) and low <= value <= high):
        raise OptionError(f"{option}={value!r} is not a finite number from {low:g} to {high:g}")


@dataclass(frozen=True)
class RunOptions:
    """What one batch runs, checked (:meth:`check`) before the manifest is read."""

    arms: tuple[str, ...] = ()
    item_ids: tuple[str, ...] = ()
    depth: Depth | None = None
    overrides: tuple[str, ...] = ()
    repeat: int | None = None
    concurrency: int | None = None
    until: Until | None = None
    max_cost_usd: float | None = None
    timeout_s: float | None = None
    resume: str | None = None
    cache: CacheMode | None = None
    shard: str | None = None
    batch_name: str | None = None
    executor: Executor | None = None
    shards: int | None = None

    def check(self) -> None:
        from evalsite.experiment.safety import MAX_CONCURRENCY, MAX_REPEAT

        for option, value, words in (("depth", self.depth, Depth), ("until", self.until, Until),
                                     ("executor", self.executor, Executor), ("cache", self.cache, CacheMode)):
            _choice(option, value, words)
        for option, number, low, high in (("repeat", self.repeat, 1, MAX_REPEAT),
                                          ("concurrency", self.concurrency, 1, MAX_CONCURRENCY),
                                          ("shards", self.shards, 1, math.inf), ("max_cost_usd", self.max_cost_usd, 0, math.inf),
                                          ("timeout", self.timeout_s, 0, math.inf)):
            _in_range(option, number, low, high)
        for assignment in self.overrides:
            if "=" not in assignment or not assignment.partition("=")[0].strip():
                raise OptionError(f"{assignment!r} is not KEY=VALUE (e.g. arms.base.params.temperature=0)")

    @property
    def plan_overrides(self) -> tuple[str, ...]:
        """``until='decided'`` is an override: a manifest's own stop_when settings stay."""
        return ("stop_when.decided=true", *self.overrides) if self.until == "decided" else self.overrides


@dataclass(frozen=True)
class BatchResult:
    """What one batch did, everything ``evalsite run`` prints and its exit code.

    Exactly one of ``batch`` (a local run), ``estimate`` (``dry_run``) and ``merged`` (the Ray
    executor's merged runs) is set. ``reasons`` says, one line each, why the batch fails (empty
    when it passes); ``baselines`` holds each run's comparison with ``baseline``, by run id."""

    manifest: str
    warnings: tuple[str, ...] = ()
    batch: BatchOutcome | None = None
    estimate: PlanEstimate | None = None
    merged: tuple[MergedRun, ...] = ()
    baselines: Mapping[str, ComparisonReport] = field(default_factory=dict)
    reasons: tuple[str, ...] = ()
    regression_failed: bool = False
    stop_line: str | None = None
    markdown: str = ""
    junit: tuple[str, list[TestOutcome]] | None = None
    site: SiteReport | None = None

    @property
    def runs(self) -> list[RunOutcome]:
        """The local batch's runs (none for a dry run or the Ray executor: see ``merged``)."""
        return self.batch.runs if self.batch is not None else []

    @property
    def finished(self) -> bool:
        """The batch ran and every run completed (:attr:`BatchOutcome.finished`; a merged run's status)."""
        if self.batch is not None:
            return self.batch.finished
        return bool(self.merged) and all(run.status == "completed" for run in self.merged)

    @property
    def ok(self) -> bool:
        """Exit 0: no failure reason, and no failed regression gate under ``fail_on='regression'``."""
        return not self.reasons and not self.regression_failed

    def rows(self, resume: Callable[[RunOutcome], str | None] | None = None) -> list[dict[str, Any]]:
        """One record per run (``evalsite run --json``): id, arm, status, its summary, with
        ``resume`` the command that finishes it, and its ``baseline_diff`` when compared."""
        return [
            {"run_id": o.run_id, "arm": o.arm_id, "status": o.status, **o.summary.to_json(),
             **({"resume": resume(o)} if resume is not None else {}),
             **({"baseline_diff": self.baselines[o.run_id].to_json()} if o.run_id in self.baselines else {})}
            for o in self.runs
        ]


def _manifest_path(manifest: str | Path, project: Project) -> Path:
    """``manifest`` as given when it exists from here (or nowhere: an error then names it as
    given), else inside the project."""
    path, inside = Path(manifest), project.root / manifest
    return inside if not path.is_absolute() and not path.exists() and inside.exists() else path


def _names(value: str | Sequence[str]) -> tuple[str, ...]:
    """A sequence of names; one name given as a plain string is that one name, not its letters."""
    return (value,) if isinstance(value, str) else tuple(value)


def _prepared(path: Path, project: Project, options: RunOptions) -> Plan:
    from evalsite.execute.prepare import prepare_plan
    from evalsite.experiment.shards import parse_shard

    plan = prepare_plan(project, path, overrides=options.plan_overrides, arm_ids=options.arms, repeat=options.repeat,
                        item_ids=options.item_ids)
    if options.shard is not None:
        plan = replace(plan, shard=parse_shard(options.shard))
    return plan if options.depth is None else replace(plan, depth=options.depth)


def _refuse_junit(junit: str | Path | None, dry_run: bool, executor: str) -> None:
    if junit is not None and (dry_run or executor == "ray"):
        raise OutputError(f"{junit}: run {'--dry-run' if dry_run else '--executor ray'} has no test cases "
                          "to write as JUnit XML; use .json, .csv, .md or .html")


def run_experiment(
    manifest: str | Path, *, project: Project | str | Path | None = None, arms: Sequence[str] = (),
    item_ids: Sequence[str] = (), depth: Depth | None = None, overrides: Sequence[str] = (),
    repeat: int | None = None, concurrency: int | None = None, until: Until | None = None,
    max_cost_usd: float | None = None, timeout: float | str | None = None, resume: str | None = None,
    cache: CacheMode | None = None, shard: str | None = None, batch_name: str | None = None,
    executor: Executor | None = None, shards: int | None = None, dry_run: bool = False,
    allow_failures: bool = False, baseline: str | None = None, fail_on: FailOn | None = None,
    junit: str | Path | None = None, build: bool = False, progress: bool | None = None,
) -> BatchResult:
    """``evalsite run MANIFEST``: validate, plan and execute (also inside a running event loop);
    see :func:`run_experiment_async` for the options."""
    from evalsite.aio import run_sync

    return run_sync(run_experiment_async(
        manifest, project=project, arms=arms, item_ids=item_ids, depth=depth, overrides=overrides, repeat=repeat,
        concurrency=concurrency, until=until, max_cost_usd=max_cost_usd, timeout=timeout, resume=resume, cache=cache,
        shard=shard, batch_name=batch_name, executor=executor, shards=shards, dry_run=dry_run,
        allow_failures=allow_failures, baseline=baseline, fail_on=fail_on, junit=junit, build=build, progress=progress))


async def run_experiment_async(
    manifest: str | Path, *, project: Project | str | Path | None = None, arms: Sequence[str] = (),
    item_ids: Sequence[str] = (), depth: Depth | None = None, overrides: Sequence[str] = (),
    repeat: int | None = None, concurrency: int | None = None, until: Until | None = None,
    max_cost_usd: float | None = None, timeout: float | str | None = None, resume: str | None = None,
    cache: CacheMode | None = None, shard: str | None = None, batch_name: str | None = None,
    executor: Executor | None = None, shards: int | None = None, dry_run: bool = False,
    allow_failures: bool = False, baseline: str | None = None, fail_on: FailOn | None = None,
    junit: str | Path | None = None, build: bool = False, progress: bool | None = None,
) -> BatchResult:
    """``evalsite run MANIFEST`` on the caller's event loop: the one batch function. Each option is
    the command's (docs/reference/python-api.md lists them); ``junit`` writes JUnit XML there,
    ``build`` builds the site afterwards, ``progress`` (None: a bar on a terminal, lines elsewhere)
    draws progress on stderr. A bad option raises :class:`OptionError`; nothing is spent before
    every option, the manifest and the plan are checked."""
    _choice("fail_on", fail_on, FailOn)
    options = RunOptions(_names(arms), _names(item_ids), depth, _names(overrides), repeat, concurrency, until, max_cost_usd,
                         _seconds(timeout), resume, cache, shard, batch_name, executor, shards)
    options.check()
    # what the preparation makes (the modules a run loads, the dataset's rows, the plan) is kept: the
    # collector's passes over it freed nothing (~0.05 s of a 6,000-row run's start-up, bench/runner.py);
    # frozen before the collector is back on (else its next pass walks all of it once), until the batch
    # ends (preparing awaits nothing, so no other task runs meanwhile)
    with ExitStack() as frozen:
        with collector_paused():
            where = _writing(project)
            error_rate = max_error_rate(where)  # read before anything is spent
            path = _manifest_path(manifest, where)
            plan = _prepared(path, where, options)
            frozen.enter_context(kept_frozen())
        return await _planned(where, path, plan, options, progress, error_rate=error_rate, dry_run=dry_run,
                              allow_failures=allow_failures, baseline=baseline, fail_on=fail_on, junit=junit, build=build)


async def _planned(where: Project, path: Path, plan: Plan, options: RunOptions, progress: bool | None, *,
                   error_rate: float, dry_run: bool, allow_failures: bool, baseline: str | None,
                   fail_on: FailOn | None, junit: str | Path | None, build: bool) -> BatchResult:
    """The batch of a checked plan: its estimate (``dry_run``), its shards on Ray, or its runs here."""
    chosen = options.executor or plan.manifest.schedule.get("runner", "local")  # executor over schedule.runner
    _refuse_junit(junit, dry_run, chosen)
    for message in plan.warnings:
        log.warning(message)
    if dry_run:
        from evalsite.experiment.estimate import estimate_plan

        return BatchResult(plan.manifest.name, plan.warnings, estimate=estimate_plan(plan))
    if chosen == "ray":
        return _on_ray(where, path, plan, options)
    result = await _run_locally(where, plan, options, progress, baseline=baseline, allow_failures=allow_failures,
                                error_rate=error_rate, fail_on=fail_on, junit=junit)
    return replace(result, site=_built(where) if build else None)


def _seconds(timeout: float | str | None) -> float | None:
    if not isinstance(timeout, str):
        return timeout
    from evalsite.execute.stopping import parse_duration

    try:
        return parse_duration(timeout)
    except ValueError as exc:
        raise OptionError(f"timeout: {exc}") from None


def _on_ray(project: Project, manifest: Path, plan: Plan, options: RunOptions) -> BatchResult:
    """The plan's shards as Ray tasks, merged; a merged run that did not complete fails. Ray's
    driver runs in this thread (its ``init`` expects the main thread), blocking the loop meanwhile."""
    from evalsite.execute.ray_executor import run_on_ray, shard_requests

    requests, batch_id = shard_requests(
        project.root, manifest.resolve(), plan, options.shards or DEFAULT_SHARDS, overrides=options.plan_overrides,
        arm_ids=options.arms, repeat=options.repeat, item_ids=options.item_ids, depth=plan.depth,
        concurrency=options.concurrency, max_cost_usd=options.max_cost_usd, batch_name=options.batch_name)
    merged = tuple(run_on_ray(requests, project.runs_dir, batch_id))
    reasons = tuple(f"{run.arm_id}: run {run.run_id} is {run.status}, not completed"
                    for run in merged if run.status != "completed")
    return BatchResult(plan.manifest.name, plan.warnings, merged=merged, reasons=reasons)


async def _run_locally(project: Project, plan: Plan, options: RunOptions, progress: bool | None, *,
                       baseline: str | None, allow_failures: bool, error_rate: float, fail_on: FailOn | None,
                       junit: str | Path | None) -> BatchResult:
    from evalsite.analysis.ci_files import write_junit
    from evalsite.analysis.markdown import compare_markdown, run_junit_outcomes, runs_markdown
    from evalsite.execute.progress import Progress
    from evalsite.execute.runner import execute_plan_async
    from evalsite.experiment.shards import plan_batch_id

    batch_id = plan_batch_id(plan, options.batch_name) if options.shard is not None or options.batch_name else None
    batch = await execute_plan_async(
        project, plan, concurrency=options.concurrency, max_cost_usd=options.max_cost_usd, resume=options.resume,
        progress=Progress(enabled=progress), timeout_s=options.timeout_s, cache=options.cache, batch_id=batch_id)
    diffs = baseline_reports(project, batch, baseline)
    suite = f"evalsite.run.{plan.manifest.name}"
    cases = None
    if junit is not None:
        cases = run_junit_outcomes(project, batch)
        write_junit(Path(junit), suite, cases)
    return BatchResult(
        plan.manifest.name, plan.warnings, batch=batch, baselines=diffs,
        reasons=tuple(batch.failure_reasons(allow_failures, error_rate)),
        regression_failed=fail_on == "regression" and regression_failed(diffs), stop_line=stop_line(project, batch),
        markdown="\n\n".join([runs_markdown(plan.manifest.name, batch), *map(compare_markdown, diffs.values())]),
        junit=None if cases is None else (suite, cases))


def _built(project: Project) -> SiteReport:
    from evalsite.site import build_site as build  # only here: a run without build needs no Jinja/DuckDB

    return build(project)


def baseline_reports(project: Project, batch: BatchOutcome, baseline: str | None) -> dict[str, ComparisonReport]:
    """``baseline``: each completed run of the batch against it (a run, or ``promoted``), by run
    id; nothing while the batch did not complete."""
    if baseline is None or not batch.finished:
        return {}
    from evalsite.analysis.compare import compare_runs  # the statistics load only with a baseline

    return {run.run_id: compare_runs(project, run.run_id, baseline=baseline) for run in batch.runs}


def regression_failed(reports: Mapping[str, ComparisonReport]) -> bool:
    """``fail_on='regression'``: a gate failed, or a baseline could not be compared."""
    return any((r.gate is not None and r.gate.failed) or (r.comparability is not None and not r.comparability.comparable)
               for r in reports.values())


def stop_line(project: Project, batch: BatchOutcome) -> str | None:
    """When a stop_when batch stopped: why, after how many items, and the calls it saved."""
    from evalsite.runlog.records import RunStatus
    from evalsite.runlog.store import read_footer

    footers = [read_footer(project.runs_dir / run.run_id) for run in batch.runs]
    records = [f.stop_when for f in footers if f is not None and f.stop_when and f.status == RunStatus.COMPLETED]
    if not records:
        return None
    first = records[0]
    detail = f" ({first['budget']})" if first.get("budget") else ""
    return (f"stop_when: {first['reason']}{detail} at look {first['look']}, after {first['items_used']:,} of "
            f"{first['items_planned']:,} items; {sum(r['calls_saved'] for r in records):,} calls saved")


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
    """``evalsite build``: render the static site (default ``site/``); nothing is rendered, or even
    loaded, when nothing has changed since the last build (:mod:`evalsite.site.unchanged`)."""
    from evalsite.site import build_site as build

    return build(_reading(project), None if out_dir is None else Path(out_dir), full=full)
