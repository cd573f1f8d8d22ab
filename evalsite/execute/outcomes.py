"""What executing a plan produced: one outcome per run and the batch's, which decides the exit code."""

from __future__ import annotations

from dataclasses import dataclass, field

from evalsite.project import DEFAULT_MAX_ERROR_RATE as MAX_ERROR_RATE
from evalsite.project import error_rate_problem
from evalsite.runlog.records import RunStatus
from evalsite.runlog.totals import RunTotals


def summary_ok(summary: RunTotals) -> bool:
    """The rule behind exit 0 for a run's summary (``run`` without --allow-failures, ``rescore``):
    no case error, no critical failure and no failed pass rule."""
    return not summary.errors and not summary.critical_failures and summary.passed is not False


@dataclass(frozen=True)
class RunOutcome:
    run_id: str
    arm_id: str
    status: RunStatus
    summary: RunTotals  # summarise_run(...).totals(...)
    hook_errors: tuple[str, ...] = ()  # failed post steps of the study pipeline

    @property
    def ok(self) -> bool:
        return summary_ok(self.summary)


@dataclass(frozen=True)
class BatchOutcome:
    """What one ``evalsite run`` did: its runs, the arms it never started and why it stopped."""

    runs: list[RunOutcome]
    not_started: list[str]
    stop_reason: str | None
    max_cost_usd: float | None
    spent_usd: float
    hook_errors: list[str] = field(default_factory=list)  # failed post steps, the experiment's included
    unknown_cost: str | None = None  # why the ceiling stopped the batch when a case's cost was unknown
    together: bool = False  # a stop_when batch: its runs resume together, from any one of them

    @property
    def finished(self) -> bool:
        """Every arm started, every run completed (not failed, canceled or stopped at the ceiling) and
        every post step of the study pipeline succeeded."""
        return not self.not_started and not self.hook_errors and all(
            run.status == RunStatus.COMPLETED for run in self.runs
        )

    @property
    def critical_failed(self) -> bool:
        return any(run.summary.critical_failures for run in self.runs)

    @property
    def ok(self) -> bool:
        """Exit 0 without --allow-failures: no reason to fail at all."""
        return not self.failure_reasons(allow_failures=False)

    def acceptable(self, allow_failures: bool, max_error_rate: float = MAX_ERROR_RATE) -> bool:
        return not self.failure_reasons(allow_failures, max_error_rate)

    def failure_reasons(self, allow_failures: bool, max_error_rate: float = MAX_ERROR_RATE) -> list[str]:
        """One line per reason the batch fails, naming the arm and what failed; empty when it passes.

        Whatever ``allow_failures`` says, a batch fails when an arm did not start or finish, a
        critical row failed, or an arm's failed generations do not pass the one error-rate rule
        (:func:`evalsite.project.error_rate_problem`: more than ``max_error_rate`` of its cases, or all of them).
        ``allow_failures`` accepts the rest: some failed generations and failed pass rules."""
        reasons = [f"{arm}: not started ({self.stop_reason or 'the batch stopped'})" for arm in self.not_started]
        for run in self.runs:
            reasons += _run_reasons(run, allow_failures, max_error_rate)
        reasons += [f"post step failed: {error}" for error in self.hook_errors]
        return reasons


def _run_reasons(run: RunOutcome, allow_failures: bool, max_error_rate: float) -> list[str]:
    totals, reasons = run.summary, []
    if run.status != RunStatus.COMPLETED:
        reasons.append(f"{run.arm_id}: run {run.run_id} is {run.status}, not completed")
    if totals.critical_failures:
        reasons.append(f"{run.arm_id}: critical rows failed: {', '.join(totals.critical_failures)}")
    cases, errors = totals.cases or 0, totals.errors or 0
    # a completed run with no case had none planned (a shard the split gave no item): nothing failed
    too_many = error_rate_problem(errors, cases, max_error_rate) if cases or run.status is not RunStatus.COMPLETED else None
    if too_many:
        reasons.append(f"{run.arm_id}: {too_many}; --allow-failures does not accept it")
    elif errors and not allow_failures:
        reasons.append(f"{run.arm_id}: {errors} of {cases} cases failed to generate (--allow-failures accepts it)")
    if not allow_failures:
        failed = [
            f"{name} (passed {round(e.pass_rate * e.n)} of {e.n})" if e.pass_rate is not None and e.n is not None else name
            for name, e in totals.evaluators.items() if e.passed is False
        ]
        if failed or totals.passed is False:
            rules = "; ".join(failed) or "an evaluator"
            reasons.append(f"{run.arm_id}: pass rule failed: {rules} (--allow-failures accepts it)")
    return reasons
