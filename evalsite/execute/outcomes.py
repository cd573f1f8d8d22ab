"""What executing a plan produced: one outcome per run and the batch's, which decides the exit code."""

from __future__ import annotations

from dataclasses import dataclass, field

from evalsite.runlog.records import RunStatus


def summary_ok(summary: dict) -> bool:
    """The rule behind exit 0 for a run's summary (``run``, ``rescore``): no case error, no
    critical failure and no failed pass rule."""
    return not summary["errors"] and not summary["critical_failures"] and summary.get("passed") is not False


@dataclass(frozen=True)
class RunOutcome:
    run_id: str
    arm_id: str
    status: RunStatus
    summary: dict
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

    @property
    def finished(self) -> bool:
        """Every arm started, every run completed (not failed, canceled or stopped at the ceiling) and
        every post step of the study pipeline succeeded."""
        return not self.not_started and not self.hook_errors and all(
            run.status == RunStatus.COMPLETED for run in self.runs
        )

    @property
    def critical_failed(self) -> bool:
        return any(run.summary["critical_failures"] for run in self.runs)

    @property
    def ok(self) -> bool:
        """Exit 0: finished, and no run has a case error, a critical failure or a failed pass rule."""
        return self.finished and all(run.ok for run in self.runs)

    def acceptable(self, allow_failures: bool) -> bool:
        """``ok``, or with ``allow_failures``: finished with every critical row passing."""
        return self.ok or (allow_failures and self.finished and not self.critical_failed)
