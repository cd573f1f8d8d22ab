"""Execute a plan: one run per config, cases through an async pool, every case appended as it ends.

A batch (one ``evalsite run``) executes its configs in turn. Within a run, ``concurrency``
workers take (item, repeat) pairs from one queue; each case is one target call (or one call
per user turn for a ``turns`` row) under the retry policy, then scored and appended to
``cases.jsonl`` (handed to the operating system at once, made durable by one ``fsync`` per run
before its next batch of cases is scheduled: :class:`~evalsite.execute.schedule.CaseQueue`).
Stopping is cooperative: a cost ceiling, the batch's deadline (``--timeout``,
``limits.timeout_s``) or Ctrl-C stops new calls, lets the ones in flight finish (the deadline and
Ctrl-C abandon them after a grace period) and writes the footer with the reason, so ``--resume``
can continue the run without paying for anything twice.
"""

from __future__ import annotations

import asyncio
import importlib
import random
import signal
import sys
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalsite.aio import run_sync
from evalsite.calls.context import Abandoned, CallContext
from evalsite.calls.retry import RetryPolicy
from evalsite.calls.targets import Target, make_target, replays_turns, with_model
from evalsite.collector import kept_frozen
from evalsite.errors import PlanError, RunLogError, TargetError
from evalsite.execute.cache import cache_mode, with_cache
from evalsite.execute.cases import CaseExecutor, Job, prepare_input
from evalsite.execute.emulation import MOCK, llm_mode, mock_target
from evalsite.execute.outcomes import BatchOutcome, RunOutcome
from evalsite.execute.prepare import require_evaluator_secrets
from evalsite.execute.progress import Progress
from evalsite.execute.schedule import CaseQueue, Schedule, pending_in_walk_order
from evalsite.execute.stopping import Budget, StopControl, manifest_ceiling, manifest_deadline
from evalsite.execute.study import StudyPipeline, load_study
from evalsite.experiment.datasets import Dataset, Item
from evalsite.experiment.plan import Config, Plan
from evalsite.project import Project
from evalsite.runlog.builders import DatasetRecord, FooterRecord, HeaderRecord, PlanRecord
from evalsite.runlog.fingerprint import build_fingerprint, diff_fingerprints, git_identity
from evalsite.runlog.records import Case, RunStatus
from evalsite.runlog.store import CASES_FILE, RunWriter, iso, new_run_id, read_cases, read_header, resolve_run, utc_now
from evalsite.runlog.totals import RunTotals
from evalsite.scoring.evaluators import Evaluator, build_evaluators, describe_evaluators

if TYPE_CHECKING:
    from evalsite.execute.decided import DecidedWalk

#: the run summary a footer records: with it numpy (~0.13 s of CPU), which no call needs
_SUMMARY = "evalsite.analysis.summary"

CANCEL_GRACE_SECONDS = 5.0


def dataset_record(project: Project, dataset: Dataset, reference_tier: str | None = None) -> DatasetRecord:
    """A dataset as a run header records it (rescore builds its header with this too)."""
    return DatasetRecord(project.relative(dataset.path), dataset.dataset_id, len(dataset.items),
                         reference_tier=reference_tier)


def execute_plan(project: Project, plan: Plan, **options: Any) -> BatchOutcome:
    """:func:`execute_plan_async` from synchronous code (also inside a running event loop)."""
    return run_sync(execute_plan_async(project, plan, **options))


async def execute_plan_async(
    project: Project,
    plan: Plan,
    *,
    concurrency: int | None = None,
    max_cost_usd: float | None = None,
    resume: str | None = None,
    progress: Progress | None = None,
    timeout_s: float | None = None,
    cache: str | None = None,
    batch_id: str | None = None,
) -> BatchOutcome:
    """Run every config of ``plan`` in turn (or continue the run ``resume`` names), stopping
    new calls ``timeout_s`` seconds in (default ``limits.timeout_s``; None: no deadline).

    Everything that can be checked is checked before the first call: targets and their
    settings, the schedule, every row's rendered input, and for a resume the fingerprint.
    """
    evaluators = build_evaluators(plan.manifest.evaluators, project.root)
    require_evaluator_secrets(evaluators)
    code = git_identity(project.root)
    batch_id = batch_id or new_run_id("batch")
    decided = _decided_walk(project, plan)
    batch = BatchRunner(
        project=project,
        plan=plan,
        evaluators=evaluators,
        code=code,
        concurrency=concurrency or plan.manifest.concurrency,
        budget=Budget(max_cost_usd if max_cost_usd is not None else manifest_ceiling(plan.manifest)),
        progress=progress or Progress(enabled=False),
        deadline_s=timeout_s if timeout_s is not None else manifest_deadline(plan.manifest),
        cache_mode=cache_mode(plan.manifest, cache),
        study=StudyPipeline(project, plan, batch_id, *load_study(project, plan)),
        batch_id=batch_id,  # shards of one batch share it (experiment.shards)
        schedule=Schedule.of(plan.manifest.schedule, paired=decided is not None),
        decided=decided,
    )
    directories: list[Path | None] = [None] * len(plan.configs)
    configs = plan.configs
    if resume is not None:  # an adaptive batch's runs resume together (execute.decided)
        from evalsite.execute.decided import resumable_batch  # numpy: kept off a plain run's start

        found = resumable_batch(project.runs_dir, resolve_run(project.runs_dir, resume))
        configs, directories = [batch.check_resumable(directory) for directory in found], list(found)
    jobs = [batch.prepare(config, directory) for config, directory in zip(configs, directories)]
    # what exists now (modules, the plan, the dataset's rows) lives as long as the batch: keeping
    # it out of the collector's full passes saves most of their cost (gc.freeze's documented use)
    with kept_frozen():
        return await batch.execute(jobs)


@dataclass
class BatchRunner:
    project: Project
    plan: Plan
    evaluators: list[Evaluator]
    code: dict[str, Any]
    concurrency: int
    budget: Budget
    progress: Progress
    study: StudyPipeline
    deadline_s: float | None = None
    cache_mode: str = "off"
    schedule: Schedule = field(default_factory=Schedule)
    stop: StopControl = field(default_factory=StopControl)
    batch_id: str = field(default_factory=lambda: new_run_id("batch"))
    rng: random.Random = field(default_factory=random.Random)  # backoff jitter only
    calls: CallContext = field(default_factory=CallContext)  # the batch's, set when it starts
    decided: DecidedWalk | None = None  # stop_when: the adaptive walk

    # ----- before anything is spent

    def prepare(self, config: Config, resume_directory: Path | None) -> Job:
        emulated = llm_mode(self.plan.manifest) == MOCK  # nothing built, nothing called, nothing cached
        try:
            target = self._target(config, emulated)
            policy = RetryPolicy.from_schedule(self.plan.manifest.schedule, config.settings)
        except TargetError as exc:
            raise TargetError(f"arm {config.arm_id!r}: {exc.message}") from None
        replaying = replays_turns(target)
        inputs = {
            item.item_id: prepare_input(self.plan, item, config, replaying) for item, _ in self.plan.case_keys(config)
        }
        fresh = partial(self._target, config, emulated, fresh=True) if self.schedule.reset_state else None
        return Job(config, target, policy, inputs, resume_directory, emulated=emulated, fresh=fresh)

    def _target(self, config: Config, emulated: bool, *, fresh: bool = False) -> Target:
        """The arm's target, wrapped (pre steps, response cache); ``fresh``: for one case (reset_state)."""
        if emulated:
            return self.study.wrap(mock_target(self.plan.manifest), config)
        target = make_target(with_model(config.target, config.params.get("model")), config.settings, self.project.root,
                             fresh=fresh)
        return with_cache(self.study.wrap(target, config), self.cache_mode, self.project.root, config)

    def check_resumable(self, directory: Path) -> Config:
        """The config a stored run was made with; refuses when anything it depends on changed."""
        stored = read_header(directory)
        same_arm = [c for c in self.plan.configs if c.arm_id == stored.arm_id]
        config = next((c for c in self.plan.configs if c.config_id == stored.config_id), None)
        config = config or (same_arm[0] if len(same_arm) == 1 else None)
        if config is None:
            raise PlanError(
                f"cannot resume {stored.run_id}: its arm {stored.arm_id!r} is not among the arms "
                f"this command runs ({', '.join(c.arm_id for c in self.plan.configs)})"
            )
        fresh = self.header(config).to_json()
        changed = [f"{section}.{d.path}: {_brief(d.old)} → {_brief(d.new)}"
                   for section in ("fingerprint", "plan", "stop_when") for d in diff_fingerprints(stored.raw.get(section), fresh.get(section))]
        if changed or stored.fingerprint_hash != fresh["fingerprint_hash"]:
            raise PlanError(
                f"cannot resume {stored.run_id}: what its numbers depend on changed "
                f"({'; '.join(changed) or 'fingerprint_hash'}); start a new run instead"
            )
        return config

    def header(self, config: Config) -> HeaderRecord:
        plan, project = self.plan, self.project
        fingerprint = build_fingerprint(
            project=project,
            dataset=plan.dataset,
            config=config,
            prompt=plan.manifest.prompt,
            evaluators=self.evaluators,
            code=self.code,
        )
        if self.cache_mode != "off":  # recorded, but never a reason to refuse a comparison
            fingerprint["emulation"] = {"cache": self.cache_mode}
        if llm_mode(plan.manifest) == MOCK:  # replaces the cache; compare refuses a mock against a live run
            fingerprint["emulation"] = {"llm": MOCK}
        sections: dict[str, Any] = {
            "manifest_path": project.relative(plan.manifest.path),
            "submitted_manifest": plan.manifest.text,
            **({"prompt": _prompt_pin(plan.manifest.prompt_ref)} if plan.manifest.prompt_ref else {}),
            **({"shard": plan.shard.record()} if plan.shard else {}),
            **({"stop_when": self.decided.header_record(plan)} if self.decided else {}),
        }
        return HeaderRecord.of(
            batch_id=self.batch_id, experiment=plan.manifest.name, arm_id=config.arm_id, config=config.resolved,
            config_id=config.config_id, dataset=dataset_record(project, plan.dataset, plan.reference_tier),
            evaluators=describe_evaluators(self.evaluators), fingerprint=fingerprint, started_at=iso(utc_now()),
            plan=PlanRecord.of(plan.totals(config)), sections=sections,
        )

    def schedule_record(self, policy: RetryPolicy) -> dict[str, Any]:
        return {
            "concurrency": self.concurrency,
            "timeout_s": policy.timeout,
            "max_attempts": policy.max_attempts,
            "backoff_s": policy.backoff,
            "max_backoff_s": policy.max_backoff,
            "max_cost_usd": self.budget.limit,
            "deadline_s": self.deadline_s,
            **self.schedule.record(),
        }

    # ----- the batch

    async def execute(self, jobs: list[Job]) -> BatchOutcome:
        loop = asyncio.get_running_loop()
        # sync python targets run in threads: as many as cases in flight, not the default few
        threads = self.concurrency * self.schedule.parallel_arms
        loop.set_default_executor(ThreadPoolExecutor(max_workers=threads, thread_name_prefix="evalsite"))
        handled = self._handle_signals(loop)
        self.progress.plan(len(jobs))
        deadline = None if self.deadline_s is None else loop.call_later(self.deadline_s, self._timed_out, loop)
        self.calls = CallContext.for_batch(self.stop.requested, self.budget, self.deadline_s)  # generation and judges
        self.study.calls = self.calls  # an eval step's judges too
        runs: list[RunOutcome] = []
        not_started: list[str] = []
        try:
            runs = await self._execute_groups(jobs, not_started)
            completed = not not_started and all(run.status == RunStatus.COMPLETED for run in runs)
            experiment_errors = await self.study.batch_done(completed)
        finally:
            if deadline is not None:
                deadline.cancel()
            for signal_number in handled:
                loop.remove_signal_handler(signal_number)
            for job in jobs:
                await job.target.aclose()
        hook_errors = [error for run in runs for error in run.hook_errors] + experiment_errors
        return BatchOutcome(runs, not_started, self.stop.reason, self.budget.limit, self.budget.spent, hook_errors,
                            self.budget.unknown, together=self.decided is not None)

    def _handle_signals(self, loop: asyncio.AbstractEventLoop) -> list[int]:
        handled: list[int] = []
        for signal_number in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(signal_number, self._interrupted, loop)
            except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or no signals here
                continue
            handled.append(signal_number)
        return handled

    def _interrupted(self, loop: asyncio.AbstractEventLoop) -> None:
        """First Ctrl-C: no new calls, in-flight ones get a grace period. Second: abandon them now."""
        if self.stop.requested():
            self.stop.abandon_in_flight()
            return
        self.stop.request(RunStatus.CANCELED)
        self.progress.notice(
            f"canceling: no new calls; waiting up to {CANCEL_GRACE_SECONDS:g} s for calls in flight "
            "(Ctrl-C again to abandon them)"
        )
        loop.call_later(CANCEL_GRACE_SECONDS, self.stop.abandon_in_flight)

    def _timed_out(self, loop: asyncio.AbstractEventLoop) -> None:
        """The deadline: no new calls; calls in flight get the grace period, then are abandoned."""
        if self.stop.requested():
            return
        self.stop.request(RunStatus.TIMED_OUT)
        self.progress.notice(f"timed out after {self.deadline_s:g} s: no new calls; waiting up to "
                             f"{CANCEL_GRACE_SECONDS:g} s for calls in flight")
        loop.call_later(CANCEL_GRACE_SECONDS, self.stop.abandon_in_flight)

    # ----- one run

    async def _execute_groups(self, jobs: list[Job], not_started: list[str]) -> list[RunOutcome]:
        """Every group of runs the schedule makes, ``parallel_arms`` groups at once (coverage: one)."""
        gate = asyncio.Semaphore(self.schedule.group_parallelism())

        async def group(members: list[Job]) -> list[RunOutcome]:
            async with gate:
                if self.stop.requested():
                    not_started.extend(job.config.arm_id for job in members)
                    return []
                return await self._execute_runs(members)

        done = await asyncio.gather(*(group(g) for g in self.schedule.groups(jobs)), return_exceptions=True)
        failure = next((outcome for outcome in done if isinstance(outcome, BaseException)), None)
        if failure is not None:
            raise failure
        return [outcome for outcomes in done if not isinstance(outcomes, BaseException) for outcome in outcomes]

    async def _execute_runs(self, jobs: list[Job]) -> list[RunOutcome]:
        """Open the runs, walk their cases through one queue, close each with its footer."""
        states = [self._open_run(job) for job in jobs]
        self.progress.start(" + ".join(job.config.arm_id for job in jobs), sum(len(s.keys) for s in states),
                            sum(len(s.keys) - len(s.pending) for s in states))
        try:
            if self.decided is None:
                await self._work(states, pending_in_walk_order(states))
            else:
                await self.decided.walk(states, self._work, self.stop.requested)
                self.decided.close(states)
            for state in states:
                missing = len(state.pending) - len(state.cases) - state.not_needed
                state.status = RunStatus.COMPLETED if missing == 0 else (self.stop.reason or RunStatus.FAILED)
                state.hook_errors, state.artifacts = await self._finish_study(state.job.config, state.status)
        except asyncio.CancelledError:  # the whole batch was canceled from outside: stop here
            self.stop.request(RunStatus.CANCELED)
            self._fail_open(states, RunStatus.CANCELED, None)
        except OSError as exc:
            self._fail_open(states, RunStatus.FAILED, f"cannot write the run: {exc}")
            raise RunLogError(f"run {states[0].writer.run_id}: cannot write the run: {exc}") from None
        except BaseException as exc:
            self._fail_open(states, RunStatus.FAILED, f"{type(exc).__name__}: {exc}")
            raise
        finally:
            self.progress.finish()
            for state in states:
                self._close_run(state)
        return [state.outcome() for state in states]

    def _open_run(self, job: Job) -> RunState:
        config = job.config
        if job.resume_directory is None:
            header = self.header(config).with_sections(schedule=self.schedule_record(job.policy))
            writer = RunWriter.create(self.project.runs_dir, config.arm_id, header.to_json())
        else:
            writer = RunWriter.reopen(job.resume_directory, {
                "resumed_at": iso(utc_now()), "batch_id": self.batch_id, "schedule": self.schedule_record(job.policy),
            })
        previous = read_cases(writer.directory / CASES_FILE)
        done = {case.key for case in previous}
        keys = self.plan.case_keys(config)
        pending = [(item, repeat) for item, repeat in keys if (item.item_id, repeat) not in done]
        self.study.run_started(config, writer.directory, keys, pending)
        return RunState(job, writer, previous, keys, pending, asyncio.Semaphore(self.concurrency))

    @staticmethod
    def _fail_open(states: list[RunState], status: RunStatus, error: str | None) -> None:
        for state in states:
            if state.status is None:
                state.status = status
                state.error = error

    def _close_run(self, state: RunState) -> None:
        # the records as this writer wrote them: read a field at a time when every line was well typed
        if not state.previous and state.writer.well_typed:
            state.totals = run_totals(state.cases, len(state.keys), checked=True)
        else:
            state.totals = run_totals([*state.previous, *state.cases], len(state.keys))
        footer = FooterRecord(  # the status is set by now (the walk, or _fail_open): FAILED only for the type
            status=state.status or RunStatus.FAILED, ended_at=iso(utc_now()), totals=state.totals, error=state.error,
            hook_errors=state.hook_errors, artifacts=state.artifacts, stop_when=state.stop_when,
            cost_ceiling=None if self.budget.limit is None else self.budget.record(),
        )
        state.writer.finish(footer.to_json())

    async def _finish_study(self, config: Config, status: RunStatus) -> tuple[tuple[str, ...], dict[str, Any]]:
        """The run's post steps: what failed and the artifacts they left (nothing without a pipeline)."""
        errors = await self.study.run_done(config, status == RunStatus.COMPLETED)
        return tuple(errors), self.study.artifacts_of(config)

    async def _work(self, states: list[RunState], entries: list[tuple[Any, ...]]) -> None:
        cases_executor = CaseExecutor(self.evaluators, self.calls, self.rng, self.plan.manifest.name)
        count = self.schedule.workers(self.concurrency, len(states))
        bounded = count > self.concurrency  # else no run can have more cases in flight than its bound
        syncing = ThreadPoolExecutor(max_workers=1, thread_name_prefix="evalsite-sync")  # never behind targets' threads

        async def sync_runs() -> None:
            writers = [state.writer for state in states if state.writer.unsynced]
            if writers:  # in a thread: the calls in flight go on while the disk syncs
                await asyncio.get_running_loop().run_in_executor(syncing, _sync_all, writers)

        queue = CaseQueue(entries, count, sync_runs)

        async def worker() -> None:
            while not self.stop.requested() and (entry := await queue.take()) is not None:
                state, item, repeat = entry
                try:
                    if bounded:
                        async with state.in_flight:
                            case = await cases_executor.execute(state.job, item, repeat)
                    else:
                        case = await cases_executor.execute(state.job, item, repeat)
                except Abandoned:  # left unrecorded; if one of its calls reached the ceiling, that is why
                    if self.budget.reached():
                        self.stop.request(RunStatus.STOPPED_COST_CEILING)
                    continue
                case = state.writer.append_case(case)  # as written: numbers out of range made null
                state.cases.append(case)
                if not self.study.pipeline.empty:  # (a coroutine a case to find it empty, else)
                    await self.study.case_done(state.job.config, case)
                if self.budget.count_case(case, state.job.config):
                    self.stop.request(RunStatus.STOPPED_COST_CEILING)
                self.progress.advance(bool(case["error"]), _case_cost(case))
                if self.schedule.pause_between_s:
                    await asyncio.sleep(self.schedule.pause_between_s)

        workers = [asyncio.create_task(worker()) for _ in range(count)]
        _load_summary_meanwhile()
        self.stop.workers.extend(workers)
        try:
            done, _ = await asyncio.wait(workers, return_when=asyncio.FIRST_EXCEPTION)
            for task in done:
                failure = None if task.cancelled() else task.exception()
                if failure is not None:
                    raise failure
        finally:
            for task in workers:
                task.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
            await queue.drain()
            syncing.shutdown()
            self.stop.workers = [task for task in self.stop.workers if task not in workers]


@dataclass
class RunState:
    """One open run while its cases are walked."""

    job: Job
    writer: RunWriter
    previous: list[Case]
    keys: list[tuple[Item, int]]
    pending: list[tuple[Item, int]]
    in_flight: asyncio.Semaphore  # at most `concurrency` of this run's cases at once (with more workers than that)
    cases: list[dict[str, Any]] = field(default_factory=list)
    status: RunStatus | None = None
    totals: RunTotals = field(default_factory=RunTotals)
    not_needed: int = 0  # pending cases an adaptive walk stopped before (execute.decided)
    # what the footer records beside the totals (builders.FooterRecord)
    error: str | None = None
    hook_errors: tuple[str, ...] = ()
    artifacts: dict[str, Any] = field(default_factory=dict)
    stop_when: dict[str, Any] | None = None  # set by execute.decided

    def outcome(self) -> RunOutcome:
        # a run never closed has no footer, so the reader calls it interrupted: say the same
        return RunOutcome(self.writer.run_id, self.job.config.arm_id, self.status or RunStatus.INTERRUPTED, self.totals,
                          self.hook_errors)


def run_totals(cases: Sequence[Mapping[str, Any]] | list[dict[str, Any]], planned: int, checked: bool = False) -> RunTotals:
    """The run's summary (:func:`~evalsite.analysis.summary.summarise_run`) plus what only the
    runner knows: the planned cases and the truncated items. ``checked``: ``cases`` are records a
    writer returned while every line it wrote was well typed (:attr:`RunWriter.well_typed`), so
    known bounded and well typed: their columns are read a field at a time (the same figures)."""
    # loaded while the calls ran: _load_summary_meanwhile
    from evalsite.analysis.case_columns import batch_columns
    from evalsite.analysis.summary import summarise_run

    truncated = tuple(sorted({c["item_id"] for c in cases if c.get("finish_reason") == "length"}))
    columns = batch_columns([(cases, True)]) if checked and isinstance(cases, list) else cases
    return summarise_run(columns).totals(planned=planned, truncated_items=truncated)


def _decided_walk(project: Project, plan: Plan) -> DecidedWalk | None:
    """``stop_when``'s adaptive walk, its module (numpy, the sequences) loaded only for a plan with one."""
    if plan.manifest.stop_when is None:
        return None
    from evalsite.execute.decided import DecidedWalk

    return DecidedWalk.of(project, plan)


def _load_summary_meanwhile() -> None:
    """Import the run summary in a thread while the first calls are in flight: before them it
    delayed every call (numpy's ~0.13 s); the footer's :func:`run_totals` then finds it loaded, or
    waits for the import to finish (the module's import lock)."""
    if _SUMMARY not in sys.modules:
        threading.Thread(target=importlib.import_module, args=(_SUMMARY,), name="evalsite-import", daemon=True).start()


def _sync_all(writers: list[RunWriter]) -> None:
    for writer in writers:
        writer.sync()


def _prompt_pin(reference: Mapping[str, Any]) -> dict[str, Any]:
    """A versioned prompt as the header pins it: name, submitted and resolved version, hash, file."""
    return {key: reference[key] for key in ("name", "submitted", "version", "hash", "path")}


def _brief(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _case_cost(case: Mapping[str, Any]) -> float | None:
    """What one case spent (its generation and its scoring); None when neither is known."""
    cost: float | None = case.get("cost_usd")
    scoring: float | None = case.get("scoring_cost_usd")
    if scoring is None or cost is None:
        return cost if scoring is None else scoring
    return cost + scoring
