"""What executing a plan produced: one outcome per run and the batch's, which decides the exit code."""

from __future__ import annotations

from dataclasses import dataclass

from evalsite.runlog.records import RunStatus

#: Share of an arm's cases that may fail to generate under --allow-failures (evalsite.toml [ci] max_error_rate).
MAX_ERROR_RATE = 0.5


@dataclass(frozen=True)
class RunOutcome:
    run_id: str
    arm_id: str
    status: RunStatus
    summary: dict


@dataclass(frozen=True)
class BatchOutcome:
    """What one ``evalsite run`` did: its runs, the arms it never started and why it stopped."""

    runs: list[RunOutcome]
    not_started: list[str]
    stop_reason: str | None
    max_cost_usd: float | None
    spent_usd: float

    @property
    def finished(self) -> bool:
        """Every arm started and every run completed (not failed, canceled or stopped at the ceiling)."""
        return not self.not_started and all(run.status == RunStatus.COMPLETED for run in self.runs)

    @property
    def critical_failed(self) -> bool:
        return any(run.summary["critical_failures"] for run in self.runs)

    @property
    def ok(self) -> bool:
        """Exit 0 without --allow-failures: no reason to fail at all."""
        return not self.failure_reasons(allow_failures=False)

    def acceptable(self, allow_failures: bool, max_error_rate: float = MAX_ERROR_RATE) -> bool:
        return not self.failure_reasons(allow_failures, max_error_rate)

    def failure_reasons(self, allow_failures: bool, max_error_rate: float = MAX_ERROR_RATE) -> list[str]:
        """One line per reason the batch fails, naming the arm and what failed; empty when it passes.

        Whatever ``allow_failures`` says, a batch fails when an arm did not start or finish, a
        critical row failed, or an arm's cases failed to generate for more than ``max_error_rate``
        of them (every case failing is always too many: such a run measured nothing).
        ``allow_failures`` accepts the rest: some failed generations and failed pass rules."""
        reasons = [f"{arm}: not started ({self.stop_reason or 'the batch stopped'})" for arm in self.not_started]
        for run in self.runs:
            reasons += _run_reasons(run, allow_failures, max_error_rate)
        return reasons


def _run_reasons(run: RunOutcome, allow_failures: bool, max_error_rate: float) -> list[str]:
    totals, reasons = run.summary, []
    if run.status != RunStatus.COMPLETED:
        reasons.append(f"{run.arm_id}: run {run.run_id} is {run.status}, not completed")
    if totals["critical_failures"]:
        reasons.append(f"{run.arm_id}: critical rows failed: {', '.join(totals['critical_failures'])}")
    cases, errors = totals.get("cases") or 0, totals.get("errors") or 0
    if errors and (errors == cases or errors / cases > max_error_rate):
        reasons.append(
            f"{run.arm_id}: {errors} of {cases} cases failed to generate ({errors / cases:.0%}, above [ci] "
            f"max_error_rate {max_error_rate:g}; --allow-failures does not accept it)"
        )
    elif errors and not allow_failures:
        reasons.append(f"{run.arm_id}: {errors} of {cases} cases failed to generate (--allow-failures accepts it)")
    if not allow_failures:
        evaluators = totals.get("evaluators") or {}
        failed = [
            f"{name} (passed {round(e['pass_rate'] * e['n'])} of {e['n']})" if e.get("pass_rate") is not None else name
            for name, e in evaluators.items() if e.get("passed") is False
        ]
        if failed or totals.get("passed") is False:
            rules = "; ".join(failed) or "an evaluator"
            reasons.append(f"{run.arm_id}: pass rule failed: {rules} (--allow-failures accepts it)")
    return reasons
