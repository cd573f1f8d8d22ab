"""Baselines: promotions appended to ``runs/decisions.jsonl``, their validation, and which run a
run is compared against (explicit → promoted → most recent older completed run → none).

A baseline belongs to a dataset and an arm. "The same dataset" means the same questions: the
fingerprint's ``inputs_id`` (the dataset without its expected answers), so a ground-truth edit
keeps the baseline, and the comparison re-scores the edited items (see :mod:`evalsite.scoring.rescoring`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from evalsite.analysis.summary import summarise_cases
from evalsite.errors import DecisionError, EvalsiteError, RunLogError
from evalsite.experiment.locks import lock_path, locked_tier
from evalsite.project import Project, max_error_rate
from evalsite.runlog.fingerprint import fingerprint_hash, git_user
from evalsite.runlog.records import RunStatus
from evalsite.runlog.store import (
    RUN_FILE,
    iso,
    read_header,
    read_run,
    repair_torn_tail,
    resolve_run,
    run_directories,
    run_status,
    utc_now,
)

DECISIONS_FILE = "decisions.jsonl"
DECISION_FORMAT_VERSION = 1

EXPLICIT, PROMOTED, PRIOR, NONE = "explicit", "promoted", "prior", "none"


@dataclass(frozen=True)
class Decision:
    """One line of ``runs/decisions.jsonl``: a run made the baseline of its dataset and arm."""

    run_id: str
    dataset_id: str | None
    inputs_id: str | None
    arm_id: str | None
    fingerprint_hash: str
    reason: str
    at: str
    by: str | None
    allow_dirty: bool = False
    allow_critical: bool = False
    reference_tier: str | None = None
    decision: str = "promote"
    format_version: int = DECISION_FORMAT_VERSION

    @classmethod
    def from_json(cls, record: dict) -> Decision:
        known = {name: record.get(name) for name in cls.__dataclass_fields__ if name in record}
        return cls(**known)


@dataclass(frozen=True)
class BaselineChoice:
    """The run a comparison uses as its baseline and where that choice came from."""

    directory: Path | None
    source: str
    decision: Decision | None = None


def decisions_path(project: Project) -> Path:
    return project.runs_dir / DECISIONS_FILE


@dataclass(frozen=True)
class DatasetIds:
    """A run's dataset id and its questions' id (``inputs_id``, absent from older fingerprints)."""

    dataset_id: str | None
    inputs_id: str | None

    @classmethod
    def of(cls, header: dict) -> DatasetIds:
        recorded = ((header.get("fingerprint") or {}).get("dataset")) or {}
        return cls((header.get("dataset") or {}).get("dataset_id"), recorded.get("inputs_id"))

    def same_questions(self, other: DatasetIds) -> bool:
        """Equal ``inputs_id`` when both runs record one, else equal ``dataset_id``."""
        if self.inputs_id and other.inputs_id:
            return self.inputs_id == other.inputs_id
        return self.dataset_id is not None and self.dataset_id == other.dataset_id


def promote(
    project: Project, run: str, reason: str, *, allow_dirty: bool = False, allow_critical: bool = False
) -> Decision:
    """Append a promotion of ``run`` to ``runs/decisions.jsonl``, or refuse with the reason."""
    if not reason.strip():
        raise DecisionError("promote: --reason is empty; say why this run should be the baseline")
    directory = resolve_run(project.runs_dir, run)
    header = read_header(directory)
    run_id = header["run_id"]
    status = run_status(directory)
    if status != RunStatus.COMPLETED:
        raise DecisionError(f"{run_id}: refusing to promote a run whose status is {status}; only a completed run can be a baseline")
    fingerprint = header.get("fingerprint")
    if not isinstance(fingerprint, dict) or fingerprint_hash(fingerprint) != header.get("fingerprint_hash"):
        raise DecisionError(f"{run_id}: refusing to promote: {RUN_FILE} has no fingerprint matching its recorded fingerprint_hash")
    if not allow_dirty:
        _refuse_unknown_code(run_id, fingerprint.get("code") or {})
    _refuse_failing(project, directory, run_id, allow_critical)
    decision = Decision(
        run_id=run_id,
        dataset_id=(header.get("dataset") or {}).get("dataset_id"),
        inputs_id=DatasetIds.of(header).inputs_id,
        arm_id=header.get("arm_id"),
        fingerprint_hash=header["fingerprint_hash"],
        reason=reason.strip(),
        at=iso(utc_now()),
        by=git_user(project.root),
        allow_dirty=allow_dirty,
        allow_critical=allow_critical,
        reference_tier=(header.get("dataset") or {}).get("reference_tier"),
    )
    append_decision(decisions_path(project), decision)
    return decision


def _refuse_failing(project: Project, directory: Path, run_id: str, allow_critical: bool) -> None:
    """A baseline passes its critical rows (unless ``allow_critical``) and fails no more
    generations than ``[ci] max_error_rate`` allows."""
    totals = summarise_cases(read_run(directory).cases)
    failed = totals["critical_failures"]
    if failed and not allow_critical:
        shown = ", ".join(failed[:10]) + (f" and {len(failed) - 10} more" if len(failed) > 10 else "")
        raise DecisionError(
            f"{run_id}: refusing to promote a run whose critical rows failed ({shown}); fix them or pass --allow-critical"
        )
    limit = max_error_rate(project)
    rate = totals["errors"] / totals["cases"] if totals["cases"] else 0.0
    if rate > limit:
        raise DecisionError(
            f"{run_id}: refusing to promote a run with {totals['errors']} of {totals['cases']} generations failed "
            f"({rate:.0%}), above [ci] max_error_rate = {limit:g} in evalsite.toml"
        )


def _refuse_unknown_code(run_id: str, code: dict) -> None:
    if not code.get("commit"):
        raise DecisionError(
            f"{run_id}: refusing to promote a run from an unknown build (the project was not a git checkout); "
            "commit the project and rerun, or pass --allow-dirty"
        )
    if code.get("dirty") is not False:
        raise DecisionError(
            f"{run_id}: refusing to promote a run from a dirty tree (uncommitted changes on {code['commit'][:12]}); "
            "commit and rerun, or pass --allow-dirty"
        )


def append_decision(path: Path, decision: Decision) -> None:
    """Append one decision line, flushed and synced; a torn last line is cut first so it never glues on."""
    path.parent.mkdir(parents=True, exist_ok=True)
    repair_torn_tail(path)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(asdict(decision), ensure_ascii=False, sort_keys=True) + "\n")
        handle.flush()
        os.fsync(handle.fileno())


@dataclass(frozen=True)
class DecisionLine:
    line: int
    record: dict


def read_decisions(path: Path) -> tuple[list[DecisionLine], list[str]]:
    """Every readable decision with its line number, and a problem per unreadable line.
    A torn last line (a crash mid-append) is not a problem: it never became a decision."""
    if not path.exists():
        return [], []
    lines = path.read_text(encoding="utf-8", errors="replace").split("\n")
    decisions, problems = [], []
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            record = json.loads(text)
        except json.JSONDecodeError:
            if number < len(lines):
                problems.append(f"line {number} is not valid JSON")
            continue
        if not isinstance(record, dict) or not isinstance(record.get("run_id"), str):
            problems.append(f"line {number} is not a decision (it needs a run_id)")
            continue
        decisions.append(DecisionLine(number, record))
    return decisions, problems


def validate_decisions(project: Project) -> list[str]:
    """One message per bad decision: unreadable, its run missing, or its fingerprint no longer matching."""
    path = decisions_path(project)
    where = project.relative(path)
    decisions, problems = read_decisions(path)
    messages = [f"{where}: {problem}" for problem in problems]
    for entry in decisions:
        run_id = entry.record["run_id"]
        prefix = f"{where}: line {entry.line}: run {run_id}"
        try:
            header = read_header(project.runs_dir / run_id)
        except RunLogError as exc:
            missing = not (project.runs_dir / run_id / RUN_FILE).exists()
            messages.append(f"{prefix} is missing" if missing else f"{prefix}: {exc.message}")
            continue
        now = fingerprint_hash(header.get("fingerprint") or {})
        if now != entry.record.get("fingerprint_hash"):
            messages.append(
                f"{prefix}: fingerprint no longer matches the decision "
                f"(decided {entry.record.get('fingerprint_hash')}, run now {now})"
            )
        messages += [f"{prefix}: {problem}" for problem in _tier_problems(project, entry.record, header)]
    return messages


def _tier_problems(project: Project, decision: dict, header: dict) -> list[str]:
    """A promotion's reference tier must still be its run's, and the one its dataset's lock declares."""
    if "reference_tier" not in decision:  # decided before tiers were recorded
        return []
    decided = decision.get("reference_tier")
    dataset = header.get("dataset") or {}
    if dataset.get("reference_tier") != decided:
        return [f"reference tier no longer matches the decision (decided {decided}, run {dataset.get('reference_tier')})"]
    path = project.root / dataset["path"] if dataset.get("path") else None
    try:
        now = locked_tier(path) if path is not None and path.is_file() else None
    except EvalsiteError as exc:
        return [exc.message]
    if now is not None and now != decided:
        return [f"reference tier no longer matches the dataset: decided {decided}, "
                f"{project.relative(lock_path(path))} now declares {now}"]
    return []


def resolve_baseline(project: Project, current: dict, explicit: str | None = None) -> BaselineChoice:
    """The baseline for the run with header ``current``: ``explicit`` if given, else the latest
    promotion for its dataset and arm, else its most recent older completed run, else none."""
    if explicit is not None:
        return BaselineChoice(resolve_run(project.runs_dir, explicit), EXPLICIT)
    return BaselineResolver.read(project).choose(current)


@dataclass(frozen=True)
class KnownRun:
    """What choosing a baseline needs of a run already read: its folder, header and status."""

    directory: Path
    header: dict
    status: str

    @property
    def run_id(self) -> str:
        return self.header["run_id"]


class BaselineResolver:
    """The promoted → prior → none rule of :func:`resolve_baseline` over runs and decisions read
    once, so the baselines of many runs (the site's every run) cost no further reading.

    ``runs``: every readable run; ``decisions``: ``decisions.jsonl`` in file order; ``unreadable``:
    run id → folder of runs whose header could not be read (a promotion of one still wins, and
    reading it then fails with the reason)."""

    def __init__(self, runs: Iterable[KnownRun], decisions: Iterable[Decision], unreadable: dict[str, Path] | None = None):
        self._runs = {run.run_id: run for run in runs}
        self._promotions = [decision for decision in decisions if decision.decision == "promote"]
        self._unreadable = unreadable or {}

    @classmethod
    def read(cls, project: Project) -> BaselineResolver:
        runs, unreadable = [], {}
        for directory in run_directories(project.runs_dir):
            try:
                runs.append(KnownRun(directory, read_header(directory), run_status(directory)))
            except RunLogError:
                if (directory / RUN_FILE).exists():
                    unreadable[directory.name] = directory
        lines, _ = read_decisions(decisions_path(project))
        return cls(runs, [Decision.from_json(entry.record) for entry in lines], unreadable)

    def choose(self, current: dict) -> BaselineChoice:
        """The baseline of the run with header ``current`` (explicit choices are the caller's)."""
        promoted = self._promoted(current)
        if promoted is not None:
            return promoted
        prior = self._prior_run(current)
        return BaselineChoice(prior.directory, PRIOR) if prior is not None else BaselineChoice(None, NONE)

    def _promoted(self, current: dict) -> BaselineChoice | None:
        questions = DatasetIds.of(current)
        for decision in reversed(self._promotions):
            if decision.run_id == current["run_id"] or decision.arm_id != current.get("arm_id"):
                continue
            if not DatasetIds(decision.dataset_id, decision.inputs_id).same_questions(questions):
                continue
            known = self._runs.get(decision.run_id)
            directory = known.directory if known is not None else self._unreadable.get(decision.run_id)
            if directory is not None:
                return BaselineChoice(directory, PROMOTED, decision)
        return None

    def _prior_run(self, current: dict) -> KnownRun | None:
        started = current.get("started_at") or ""
        best: KnownRun | None = None
        for run in self._runs.values():
            moment = run.header.get("started_at") or ""
            if run.run_id == current["run_id"] or not moment < started or run.status != RunStatus.COMPLETED:
                continue
            if _same_scope(run.header, current) and (best is None or moment > (best.header.get("started_at") or "")):
                best = run
        return best


def _same_scope(header: dict, current: dict) -> bool:
    return header.get("arm_id") == current.get("arm_id") and DatasetIds.of(header).same_questions(DatasetIds.of(current))
