"""Baselines: promoting a run (a line appended to ``runs/decisions.jsonl``, see
:mod:`evalsite.runlog.decisions`) and which run a run is compared against (explicit → promoted →
most recent older completed run → none).

A baseline belongs to a dataset and an arm. "The same dataset" means the same questions: the
fingerprint's ``inputs_id`` (the dataset without its expected answers), so a ground-truth edit
keeps the baseline, and the comparison re-scores the edited items (see :mod:`evalsite.scoring.ground_truth`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalsite.analysis.summary import summarise_run
from evalsite.errors import DecisionError, EvalsiteError, RunLogError, listed
from evalsite.experiment.locks import lock_path, locked_tier
from evalsite.project import Project, error_rate_problem, max_error_rate
from evalsite.runlog.decisions import PROMOTE, Decision, append_decision, decisions_path, exclusions, read_decisions
from evalsite.runlog.fingerprint import fingerprint_hash, git_user
from evalsite.runlog.records import DatasetRef, RunHeader, RunStatus
from evalsite.runlog.store import (
    RUN_FILE,
    Run,
    iso,
    open_run,
    read_run,
    resolve_run,
    run_directories,
    scan_runs,
    utc_now,
)

EXPLICIT, PROMOTED, PRIOR, NONE = "explicit", "promoted", "prior", "none"


@dataclass(frozen=True)
class BaselineChoice:
    """The run a comparison uses as its baseline and where that choice came from."""

    directory: Path | None
    source: str
    decision: Decision | None = None


def promote(
    project: Project, run: str, reason: str, *, allow_dirty: bool = False, allow_critical: bool = False
) -> Decision:
    """Append a promotion of ``run`` to ``runs/decisions.jsonl``, or refuse with the reason."""
    if not reason.strip():
        raise DecisionError("promote: --reason is empty; say why this run should be the baseline")
    known = open_run(resolve_run(project.runs_dir, run))
    header, run_id = known.header, known.run_id
    if known.status != RunStatus.COMPLETED:
        raise DecisionError(f"{run_id}: refusing to promote a run whose status is {known.status}; only a completed run can be a baseline")
    if not header.fingerprint or fingerprint_hash(header.fingerprint) != header.fingerprint_hash:
        raise DecisionError(f"{run_id}: refusing to promote: {RUN_FILE} has no fingerprint matching its recorded fingerprint_hash")
    if not allow_dirty:
        code = header.fingerprint.get("code")
        _refuse_unknown_code(run_id, code if isinstance(code, dict) else {})
    _refuse_failing(project, known.directory, run_id, allow_critical)
    decision = Decision.about(header, kind=PROMOTE, reason=reason.strip(), at=iso(utc_now()), by=git_user(project.root),
                              allow_dirty=allow_dirty, allow_critical=allow_critical)
    append_decision(decisions_path(project.runs_dir), decision)
    return decision


def _refuse_failing(project: Project, directory: Path, run_id: str, allow_critical: bool) -> None:
    """A baseline passes its critical rows (unless ``allow_critical``) and the error-rate rule ``run``
    applies (:func:`evalsite.project.error_rate_problem`): a run with no successful case is never one."""
    summary = summarise_run(read_run(directory).cases)
    failed = summary.critical_failures or ()
    if failed and not allow_critical:
        shown = listed(list(failed), 10)
        raise DecisionError(
            f"{run_id}: refusing to promote a run whose critical rows failed ({shown}); fix them or pass --allow-critical"
        )
    too_many = error_rate_problem(summary.errors, summary.cases, max_error_rate(project))
    if too_many:
        raise DecisionError(f"{run_id}: refusing to promote: {too_many} (evalsite.toml [ci])")


def _refuse_unknown_code(run_id: str, code: dict[str, Any]) -> None:
    if not code.get("commit"):
        raise DecisionError(
            f"{run_id}: refusing to promote a run from an unknown build (the project was not a git checkout); "
            "commit the project and rerun, or pass --allow-dirty"
        )
    if code.get("dirty") is not False:
        raise DecisionError(
            f"{run_id}: refusing to promote a run from a dirty tree (uncommitted changes on {str(code['commit'])[:12]}); "
            "commit and rerun, or pass --allow-dirty"
        )


def tier_problems(project: Project) -> list[str]:
    """A promotion's reference tier must still be its run's, and the one its dataset's lock declares
    (decisions that recorded no tier are not checked)."""
    path = decisions_path(project.runs_dir)
    where = str(project.relative(path))
    entries, _ = read_decisions(path, where)
    messages = []
    for entry in entries:
        if entry.decision.reference_tier is None:
            continue
        try:
            header = open_run(project.runs_dir / entry.decision.run_id).header
        except RunLogError:
            continue  # validate_decisions names a missing or unreadable run
        prefix = f"{where}: line {entry.line}: run {entry.decision.run_id}"
        messages += [f"{prefix}: {problem}" for problem in _tier_problems(project, entry.decision.reference_tier, header)]
    return messages


def _tier_problems(project: Project, decided: str | None, header: RunHeader) -> list[str]:
    dataset = header.dataset
    if dataset.reference_tier != decided:
        return [f"reference tier no longer matches the decision (decided {decided}, run {dataset.reference_tier})"]
    path = project.root / dataset.path if dataset.path else None
    if path is None or not path.is_file():
        return []
    try:
        now = locked_tier(path)
    except EvalsiteError as exc:
        return [exc.message]
    if now is not None and now != decided:
        return [f"reference tier no longer matches the dataset: decided {decided}, "
                f"{project.relative(lock_path(path))} now declares {now}"]
    return []


def resolve_baseline(project: Project, current: RunHeader, explicit: str | None = None) -> BaselineChoice:
    """The baseline for the run with header ``current``: ``explicit`` if given, else the latest
    promotion for its dataset and arm, else its most recent older completed run, else none."""
    if explicit is not None:
        return BaselineChoice(resolve_run(project.runs_dir, explicit), EXPLICIT)
    return BaselineResolver.read(project).choose(current)


class BaselineResolver:
    """The promoted → prior → none rule of :func:`resolve_baseline` over runs and decisions read
    once, so the baselines of many runs (the site's every run) cost no further reading.

    ``runs``: every readable run; ``decisions``: ``decisions.jsonl`` in file order; ``unreadable``:
    run id → folder of runs whose header could not be read (a promotion of one still wins, and
    reading it then fails with the reason)."""

    def __init__(self, runs: Iterable[Run], decisions: Iterable[Decision], unreadable: dict[str, Path] | None = None):
        self._runs = {run.run_id: run for run in runs}
        decisions = list(decisions)
        self._excluded = exclusions(decisions)
        self._promotions = [d for d in decisions if d.decision == PROMOTE and d.run_id not in self._excluded]
        self._unreadable = unreadable or {}

    @classmethod
    def read(cls, project: Project) -> BaselineResolver:
        runs, _ = scan_runs(project.runs_dir)
        readable = {run.directory.name for run in runs}
        unreadable = {d.name: d for d in run_directories(project.runs_dir) if d.name not in readable}
        lines, _ = read_decisions(decisions_path(project.runs_dir))
        return cls(runs, [entry.decision for entry in lines], unreadable)

    def choose(self, current: RunHeader) -> BaselineChoice:
        """The baseline of the run with header ``current`` (explicit choices are the caller's)."""
        promoted = self._promoted(current)
        if promoted is not None:
            return promoted
        prior = self._prior_run(current)
        return BaselineChoice(prior.directory, PRIOR) if prior is not None else BaselineChoice(None, NONE)

    def _promoted(self, current: RunHeader) -> BaselineChoice | None:
        for decision in reversed(self._promotions):
            if decision.run_id == current.run_id or decision.arm_id != current.arm_id:
                continue
            promoted = DatasetRef(dataset_id=decision.dataset_id, inputs_id=decision.inputs_id)
            if not promoted.same_questions(current.dataset):
                continue
            known = self._runs.get(decision.run_id)
            directory = known.directory if known is not None else self._unreadable.get(decision.run_id)
            if directory is not None:
                return BaselineChoice(directory, PROMOTED, decision)
        return None

    def _prior_run(self, current: RunHeader) -> Run | None:
        started = current.started_at or ""
        best: Run | None = None
        for run in self._runs.values():
            moment = run.header.started_at or ""
            if run.run_id == current.run_id or not moment < started or run.status != RunStatus.COMPLETED \
                    or run.run_id in self._excluded:
                continue
            if _same_scope(run.header, current) and (best is None or moment > (best.header.started_at or "")):
                best = run
        return best


def _same_scope(header: RunHeader, current: RunHeader) -> bool:
    return header.arm_id == current.arm_id and header.dataset.same_questions(current.dataset)
