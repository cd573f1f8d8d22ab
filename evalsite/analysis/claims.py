"""Claims in markdown reports, re-derived from the committed runs.

A report states claims as inline directives, so the prose and the number it rests on live on the
same line:

- ``{{ claim: arm=v2 beats arm=v1 on dataset=golden, p < 0.05 }}`` — a question to the dataset's
  verdict (:mod:`evalsite.analysis.claim_beats`): holds when the leaderboard of ``golden``
  separates v2 above v1 at that α, Holm over every pair it shows; ``(unadjusted)`` after the bound
  asks the pair's own cluster-aware test instead.
- ``{{ claim: mean(arm=v2) >= 0.80 }}`` — arithmetic over metrics compared with ``< <= > >= == !=``.
- ``{{ claim: judge helpful agrees with humans κ >= 0.6 }}`` — the judge's Cohen's κ against the
  human ratings (:mod:`evalsite.analysis.claim_judges`).
- ``{{ value: mean(arm=v2) = 0.93 }}`` — a figure quoted in prose; it holds while the metric,
  rounded to the quoted decimals, still equals the quoted figure (``= 93.3%`` compares percent).

The grammar, the metrics and the run-selection rules are documented in docs/reference/claims.md.
A run excluded in ``runs/decisions.jsonl`` is never read by a claim, as by the leaderboard.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalsite.analysis.ci_files import TestOutcome, write_junit
from evalsite.analysis.claim_beats import FAILS, HOLDS, DatasetVerdicts, Uncheckable, check_beats
from evalsite.analysis.claim_judges import check_agrees
from evalsite.analysis.claim_syntax import (
    METRICS,
    Agrees,
    Beats,
    BinaryOp,
    Claim,
    ClaimSyntaxError,
    Comparison,
    Directive,
    Expression,
    MetricTerm,
    Number,
    Selector,
    ValuePin,
    find_directives,
    parse_claim,
)
from evalsite.analysis.db import RunsDatabase, open_database
from evalsite.analysis.summary import RunSummary, summarise_run
from evalsite.errors import EvalsiteError
from evalsite.runlog.records import RunHeader, RunStatus
from evalsite.runlog.store import CASES_FILE, read_cases

if TYPE_CHECKING:
    from evalsite.project import Project

COMPARATORS: dict[str, Callable[[float, float], bool]] = {
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "==": lambda a, b: math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12),
    "!=": lambda a, b: not math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12),
}
ARITHMETIC: dict[str, Callable[[float, float], float]] = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv}
UNCHECKABLE = "cannot be checked"
#: The figures a verdict rests on, by name: metric values, a test's mean difference, p, n and kind.
Numbers = dict[str, float | str]
#: A claim's verdict: ``(status, detail, numbers, runs)``.
ClaimCheck = tuple[str, str, Numbers, list[str]]

__all__ = [
    "Beats",
    "BinaryOp",
    "Claim",
    "ClaimResult",
    "ClaimSyntaxError",
    "Comparison",
    "Directive",
    "Expression",
    "FAILS",
    "HOLDS",
    "METRICS",
    "MetricTerm",
    "Number",
    "RunMetrics",
    "Selector",
    "UNCHECKABLE",
    "Uncheckable",
    "ValuePin",
    "check_claim",
    "check_claims",
    "check_report",
    "claims_outcomes",
    "CLAIMS_SUITE",
    "find_directives",
    "parse_claim",
    "report_files",
    "write_claims_junit",
]


@dataclass
class ClaimResult:
    """One directive's verdict, with the numbers and runs that decided it."""

    file: str
    line: int
    kind: str
    text: str
    status: str
    detail: str
    numbers: Numbers = field(default_factory=dict)
    runs: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


# ----------------------------------------------------------------------------- checking


@dataclass(frozen=True)
class ResolvedRun:
    run_id: str
    arm_id: str
    dataset_id: str
    header: RunHeader

    @property
    def evaluators(self) -> dict[str, dict[str, Any]]:
        return self.header.evaluators


class RunMetrics:
    """Answers metric questions about runs through the DuckDB views, and ``beats`` questions
    through the datasets' verdicts (``verdicts``). Excluded runs are not read."""

    def __init__(self, project: Project, database: RunsDatabase | None = None) -> None:
        self.database = database or open_database(project.runs_dir)
        self.runs_dir = project.runs_dir
        self.verdicts = DatasetVerdicts(project, self.database)
        self._summaries: dict[str, RunSummary] = {}
        completed = self.database.rows(
            "SELECT run_id, arm_id, dataset_id FROM runs WHERE status = ? ORDER BY started_at, run_id",
            [str(RunStatus.COMPLETED)],
        )
        self.completed = [row for row in completed if row["run_id"] not in self.database.excluded]

    def resolve(self, selector: Selector) -> ResolvedRun:
        if selector.run:
            rows = [r for r in self.completed if r["run_id"].startswith(selector.run)]
            if len(rows) != 1:
                raise Uncheckable(self._excluded(selector.run) or f"run={selector.run} matches {len(rows)} completed runs")
            return self._resolved(rows[0])
        rows = [r for r in self.completed if r["arm_id"] == selector.arm]
        if not rows:
            raise Uncheckable(f"unknown arm {selector.arm!r}: no completed run of it")
        if selector.dataset:
            rows = [r for r in rows if r["dataset_id"] == selector.dataset
                    or r["dataset_id"].split("@")[0] == selector.dataset]
            if not rows:
                raise Uncheckable(f"arm {selector.arm!r} has no completed run on dataset {selector.dataset!r}")
        datasets = sorted({r["dataset_id"] for r in rows})
        if len(datasets) > 1:
            raise Uncheckable(
                f"arm {selector.arm!r} has runs on several datasets ({', '.join(datasets)}); add dataset=…"
            )
        return self._resolved(rows[-1])

    def _excluded(self, prefix: str) -> str | None:
        """Why ``run=prefix`` reads nothing when it names one excluded run (else None)."""
        named = [run_id for run_id in self.database.excluded if run_id.startswith(prefix)]
        if len(named) != 1:
            return None
        return (f"run {named[0]} is excluded from comparisons ({self.database.excluded[named[0]].reason}); "
                f"`evalsite runs --include {named[0]} --reason …` takes it back")

    def _resolved(self, row: dict[str, Any]) -> ResolvedRun:
        return ResolvedRun(row["run_id"], row["arm_id"], row["dataset_id"], self.database.runs[row["run_id"]].header)

    def summary(self, run: ResolvedRun) -> RunSummary:
        """The run's figures, as ``evalsite show`` gives them (read once per run)."""
        if run.run_id not in self._summaries:
            self._summaries[run.run_id] = summarise_run(read_cases(self.runs_dir / run.run_id / CASES_FILE))
        return self._summaries[run.run_id]

    def value(self, metric: MetricTerm) -> tuple[float, str]:
        run = self.resolve(metric.selector)
        return _summary_metric(metric, self.summary(run), run), run.run_id


def _summary_metric(metric: MetricTerm, summary: RunSummary, run: ResolvedRun) -> float:
    """One metric of a run from its :class:`~evalsite.analysis.summary.RunSummary`."""
    name, evaluator = metric.name, metric.selector.evaluator
    if name in ("mean", "pass_rate"):
        if evaluator:
            if evaluator not in run.evaluators:
                raise Uncheckable(f"run {run.run_id} has no evaluator {evaluator!r}")
            found = summary.evaluators.get(evaluator)
            value = None if found is None else (found.mean if name == "mean" else found.pass_rate)
        else:
            value = summary.mean_score if name == "mean" else summary.pass_rate
        if value is None:
            raise Uncheckable(f"run {run.run_id} is unscored" if name == "mean" else f"run {run.run_id} has no pass rule")
        return value
    if name == "n":
        return float(summary.items)
    if name == "errors":
        return float(summary.errors)
    if name.startswith("latency_"):
        latency = summary.latency.p50_ms if name == "latency_p50" else summary.latency.p95_ms
        if latency is None:
            raise Uncheckable(f"run {run.run_id} records no latency")
        return latency
    cost = summary.cost
    if cost.total is None:
        raise Uncheckable(f"run {run.run_id}: cost unknown for {cost.unknown_cases} of {cost.cases} cases")
    if name == "cost_total":
        return cost.total
    if name in ("cost_per_case", "cost_per_item"):
        value = cost.per_case if name == "cost_per_case" else cost.per_item
        assert value is not None  # known whenever the total is
        return value
    if cost.per_correct is None:
        raise Uncheckable(f"run {run.run_id}: no passed case, so cost per correct answer is undefined")
    return cost.per_correct


def _evaluate(expression: Expression, metrics: RunMetrics, numbers: Numbers, runs: list[str]) -> float:
    if isinstance(expression, Number):
        return expression.value
    if isinstance(expression, MetricTerm):
        value, run_id = metrics.value(expression)
        numbers[f"{expression.name}({expression.selector.text()})"] = value
        if run_id not in runs:
            runs.append(run_id)
        return value
    left = _evaluate(expression.left, metrics, numbers, runs)
    right = _evaluate(expression.right, metrics, numbers, runs)
    if expression.operator == "/" and right == 0:
        raise Uncheckable("division by zero")
    return ARITHMETIC[expression.operator](left, right)


def check_claim(claim: Claim, metrics: RunMetrics) -> ClaimCheck:
    """Decide one parsed claim: ``(status, detail, numbers, runs)``."""
    numbers: Numbers = {}
    runs: list[str] = []
    try:
        if isinstance(claim, Beats):
            return check_beats(claim, metrics)
        if isinstance(claim, Agrees):
            return check_agrees(claim, metrics.runs_dir, COMPARATORS)
        if isinstance(claim, ValuePin):
            actual = _evaluate(claim.expression, metrics, numbers, runs)
            shown = actual * 100 if claim.percent else actual
            rounded = f"{shown:.{claim.decimals}f}" + ("%" if claim.percent else "")
            holds = rounded == claim.quoted
            detail = f"runs give {rounded}" + ("" if holds else f", the text quotes {claim.quoted}")
            return (HOLDS if holds else FAILS), detail, numbers, runs
        left = _evaluate(claim.left, metrics, numbers, runs)
        right = _evaluate(claim.right, metrics, numbers, runs)
        holds = COMPARATORS[claim.operator](left, right)
        return (HOLDS if holds else FAILS), f"{left:.6g} {claim.operator} {right:.6g}", numbers, runs
    except Uncheckable as reason:
        return UNCHECKABLE, str(reason), numbers, runs


def report_files(project_root: Path, files: tuple[Path, ...] = ()) -> list[Path]:
    if files:
        return [Path(f) for f in files]
    return sorted((project_root / "reports").rglob("*.md"))


def check_report(path: Path, metrics: RunMetrics, shown_as: str) -> list[ClaimResult]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise EvalsiteError(f"{path}: cannot read report: {exc}") from None
    results = []
    for directive in find_directives(text):
        body = " ".join(directive.body.split())
        try:
            claim = parse_claim(directive.kind, directive.body)
        except ClaimSyntaxError as exc:
            results.append(ClaimResult(shown_as, directive.line, directive.kind, body, UNCHECKABLE,
                                       f"syntax: {exc.message}"))
            continue
        status, detail, numbers, runs = check_claim(claim, metrics)
        results.append(ClaimResult(shown_as, directive.line, directive.kind, body, status, detail, numbers, runs))
    return results


def check_claims(project: Project, files: tuple[Path, ...] = ()) -> list[ClaimResult]:
    """Re-derive every claim in the given reports (default: ``reports/**/*.md``) from the runs."""
    metrics = RunMetrics(project)
    results = []
    for path in report_files(project.root, files):
        if not path.is_file():
            raise EvalsiteError(f"{path}: report not found")
        results.extend(check_report(path, metrics, project.relative(path)))
    return results


CLAIMS_SUITE = "evalsite.analysis.claims"


def claims_outcomes(results: list[ClaimResult]) -> list[TestOutcome]:
    """One JUnit test per claim: a claim that fails is a failure, one that cannot be checked an error."""
    return [
        TestOutcome(
            name=f"{r.file}:{r.line} {r.text}",
            classname=r.file,
            failure=r.detail if r.status == FAILS else None,
            error=r.detail if r.status == UNCHECKABLE else None,
        )
        for r in results
    ]


def write_claims_junit(path: Path, results: list[ClaimResult]) -> None:
    """JUnit XML of :func:`claims_outcomes`."""
    write_junit(path, CLAIMS_SUITE, claims_outcomes(results))
