"""Concise markdown summaries of a command's result, for GitHub's step summary or a PR comment.

Each function turns one command's result into markdown; :func:`evalsite.analysis.ci_files.write_summary`
decides where it goes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from evalsite.analysis.ci_files import TestOutcome, markdown_table
from evalsite.analysis.wording import p_text
from evalsite.errors import listed
from evalsite.runlog.records import Case
from evalsite.runlog.store import read_header, read_run
from evalsite.runlog.totals import RunTotals

if TYPE_CHECKING:
    from evalsite.analysis.claims import ClaimResult
    from evalsite.analysis.compare import ComparisonReport
    from evalsite.project import Project


class RunRow(Protocol):
    """What a step summary reads of one run of a batch (``execute.outcomes.RunOutcome`` is one)."""

    @property
    def run_id(self) -> str: ...
    @property
    def arm_id(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def summary(self) -> RunTotals: ...


class BatchRows(Protocol):
    """What a step summary reads of an ``evalsite run`` batch (``execute.outcomes.BatchOutcome`` is
    one): analysis never imports the runner, so it names only the fields it reads."""

    @property
    def runs(self) -> Sequence[RunRow]: ...
    @property
    def not_started(self) -> Sequence[str]: ...
    @property
    def stop_reason(self) -> str | None: ...


MARKS = {"holds": "✓", "fails": "✗", "cannot be checked": "?"}


def _signed(value: float | None) -> str:
    return "—" if value is None else f"{value:+.3f}"


def claims_markdown(results: Sequence[ClaimResult]) -> str:
    """One row per claim directive: mark, text, where, verdict, the numbers behind it."""
    held = sum(r.status == "holds" for r in results)
    rows = [{"claim": f"{MARKS[r.status]} {r.text}", "where": f"{r.file}:{r.line}", "verdict": r.status,
             "numbers": r.detail} for r in results]
    return (f"### evalsite claims: {held} of {len(results)} hold\n\n"
            + markdown_table(rows, ["claim", "where", "verdict", "numbers"]))


def compare_markdown(report: ComparisonReport) -> str:
    """The run against its baseline: comparability, item counts, mean Δ with interval and p, gate."""
    current = report.current
    title = f"### evalsite compare: {current.run_id} (arm {current.header.arm_id})"
    if report.baseline is None:
        return f"{title}\n\nNo baseline: no promoted run and no older completed run of this arm on this dataset."
    lines = [title, "", f"Baseline: {report.baseline.run_id} ({report.baseline_source})."]
    verdict, regression, gate = report.comparability, report.regression, report.gate
    if verdict is not None and not verdict.comparable:
        return "\n".join([*lines, "", f"**Not comparable:** {verdict.reason}"])
    assert regression is not None and gate is not None  # a baseline comparable with the run is compared
    s = regression.summary
    interval = "—" if s.ci_low is None else f"[{s.ci_low:+.3f}, {s.ci_high:+.3f}]"
    p_value = "—" if s.p_value is None else f"{p_text(s.p_value)} ({s.test_kind})"
    noise = " · within noise" if s.within_noise else ""
    lines += [
        *(["", report.dataset_note] if report.dataset_note else []),
        "",
        markdown_table([{
            "items": s.compared, "improved": s.improved, "regressed": s.regressed, "unchanged": s.unchanged,
            "gt_changed": s.gt_changed, "baseline mean": s.baseline_mean, "mean": s.current_mean,
            "mean Δ": _signed(s.mean_delta), f"{s.confidence:.0%} interval": interval, "p": p_value,
        }], ["items", "improved", "regressed", "unchanged", "gt_changed", "baseline mean", "mean", "mean Δ",
             f"{s.confidence:.0%} interval", "p"]),
        "",
        *([f"Decision: {report.sequence_text}.", ""] if report.sequence_text else []),
    ]
    newly_failing = [e for e in regression.evaluators if e.newly_failing]
    for change in newly_failing:
        lines.append(f"- `{change.evaluator}` newly fails on {len(change.newly_failing)} items: {listed(change.newly_failing, LISTED_IDS)}")
    lines.append(f"\n**Gate (α = {gate.alpha}):** " + ("fail — " + "; ".join(gate.reasons) if gate.failed else "pass") + noise)
    return "\n".join(lines)


RUN_COLUMNS = ["arm", "run", "status", "cases", "errors", "mean_score", "pass_rate", "cost_usd"]


def _runs_lines(rows: list[dict[str, Any]]) -> list[str]:
    """A table of runs (each row: arm, run, status and the run summary's totals), then their failed critical rows."""
    lines = [markdown_table(rows, RUN_COLUMNS)]
    lines += [f"- {row['arm']}: critical rows failed: {listed(row['critical_failures'], LISTED_IDS)}"
              for row in rows if row.get("critical_failures")]
    return lines


#: Item ids a summary line names before "… and N more": a job summary holds at most 1 MiB, and a
#: run may fail thousands of critical rows (every id is in ``--json`` and on the site).
LISTED_IDS = 10


def runs_markdown(experiment: str, batch: BatchRows) -> str:
    """One row per run of an ``evalsite run`` batch, then what failed or stopped it."""
    rows = [{"arm": run.arm_id, "run": run.run_id, "status": run.status, **run.summary.to_json()} for run in batch.runs]
    lines = [f"### evalsite run: {experiment}", "", *_runs_lines(rows)]
    if batch.not_started:
        lines.append(f"- not started: {', '.join(batch.not_started)} ({batch.stop_reason})")
    return "\n".join(lines)


def ci_summary_markdown(project: Project, references: list[str], claims: bool = True) -> str:
    """``evalsite ci summary``: the runs (their one run summary), each against its baseline (as
    ``compare`` decides it) and, with ``claims``, every claim of the reports (when they have any) —
    one markdown text.

    The analysis modules are imported here, not at the top: ``evalsite run`` imports this module
    for :func:`runs_markdown` and must not load the statistics."""
    from evalsite.analysis.claims import check_claims
    from evalsite.analysis.compare import compare_runs
    from evalsite.analysis.run_views import run_overview

    overviews = [run_overview(project, reference).to_json() for reference in references]
    rows = [{**overview, "run": overview["run_id"]} for overview in overviews]
    parts = ["### evalsite runs\n\n" + "\n".join(_runs_lines(rows)) if rows else "### evalsite runs\n\nNo runs given."]
    parts += [compare_markdown(compare_runs(project, overview["run_id"])) for overview in overviews]
    parts += [stopped_verdict_markdown(project, dataset_id) for dataset_id in _stopped_datasets(project, overviews)]
    results = check_claims(project, ()) if claims else []
    if results:
        parts.append(claims_markdown(results))
    return "\n\n".join(parts)


def _stopped_datasets(project: Project, overviews: list[dict[str, Any]]) -> list[str]:
    """The datasets of the given runs that stopped by ``stop_when``, each once."""
    found = [read_header(project.runs_dir / o["run_id"]) for o in overviews]
    return list(dict.fromkeys(h.dataset.dataset_id for h in found if h.stop_when is not None and h.dataset.dataset_id))


def stopped_verdict_markdown(project: Project, dataset_id: str) -> str:
    """The dataset's verdict when its runs stopped by ``stop_when``: each pair's anytime-valid decision."""
    from evalsite.analysis.leaderboard import leaderboard
    from evalsite.analysis.verdict import pair_phrase

    verdict = leaderboard(project, dataset_id).verdict
    lines = [f"### evalsite verdict: {dataset_id} (stop_when)", "", verdict.headline, ""]
    return "\n".join([*lines, *(f"- {pair_phrase(pair)}" for pair in verdict.pairs)])


def run_junit_outcomes(project: Project, batch: BatchRows) -> list[TestOutcome]:
    """One JUnit test case per run and item: a failure names the failing repeats and evaluators,
    an error carries the generation error; unscored items pass only if they generated."""
    outcomes = []
    for run in batch.runs:
        by_item: dict[str, list[Case]] = {}
        for case in read_run(project.runs_dir / run.run_id).cases:
            by_item.setdefault(case.item_id, []).append(case)
        for item_id, cases in by_item.items():
            errors = [c.error for c in cases if c.error]
            failing = sorted({s.evaluator for c in cases for s in c.scores if s.passed is False})
            failed_repeats = [c.repeat for c in cases if c.passed is False and not c.error]
            outcomes.append(TestOutcome(
                name=item_id,
                classname=f"{run.arm_id}.{run.run_id}",
                error=errors[0] if errors else None,
                failure=(f"repeats {failed_repeats} failed: {', '.join(failing)}" if failed_repeats and not errors else None),
                seconds=sum(c.latency_ms or 0 for c in cases) / 1000,
            ))
    return outcomes
