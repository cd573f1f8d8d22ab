"""Claims in markdown reports, re-derived from the committed runs.

A report states claims as inline directives, so the prose and the number it rests on live on the
same line:

- ``{{ claim: arm=v2 beats arm=v1 on dataset=golden, p < 0.05 }}`` — a paired sign-flip test on
  the two arms' latest completed runs; holds when v2's mean is higher and p is below the bound.
- ``{{ claim: mean(arm=v2) >= 0.80 }}`` — arithmetic over metrics compared with ``< <= > >= == !=``.
- ``{{ value: mean(arm=v2) = 0.93 }}`` — a figure quoted in prose; it holds while the metric,
  rounded to the quoted decimals, still equals the quoted figure (``= 93.3%`` compares percent).

The grammar, the metrics and the run-selection rules are documented in docs/reference/claims.md.
"""

from __future__ import annotations

import math
import operator
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Union

from evalsite.analysis.compare import comparability
from evalsite.analysis.db import open_database
from evalsite.errors import EvalsiteError
from evalsite.runlog.records import RunHeader, RunStatus
from evalsite.stats import nearest_rank_percentile, sign_flip_test

DIRECTIVE = re.compile(r"\{\{\s*(claim|value)\s*:(.*?)\}\}", re.DOTALL)
TOKEN = re.compile(r"\s*(?:(<=|>=|==|!=|[<>=(),*/+%-])|([A-Za-z0-9_][A-Za-z0-9_.@:-]*))")
NUMBER = re.compile(r"^\d+(?:\.\d+)?$")
COMPARATORS = {
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "==": lambda a, b: math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12),
    "!=": lambda a, b: not math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12),
}
ARITHMETIC = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv}
SELECTOR_KEYS = ("arm", "dataset", "run", "evaluator")
HOLDS, FAILS, UNCHECKABLE = "holds", "fails", "cannot be checked"


class ClaimSyntaxError(EvalsiteError):
    """A directive does not follow the claim grammar."""


class Uncheckable(Exception):
    """The runs cannot decide a claim (unknown arm, no run, unknown cost…); carries the reason."""


# ----------------------------------------------------------------------------- syntax tree


@dataclass(frozen=True)
class Selector:
    """Which run a metric reads: by arm (latest completed run), optionally on a dataset, or a pinned run."""

    arm: str | None = None
    dataset: str | None = None
    run: str | None = None
    evaluator: str | None = None

    def text(self) -> str:
        return ", ".join(f"{k}={getattr(self, k)}" for k in SELECTOR_KEYS if getattr(self, k))


@dataclass(frozen=True)
class Number:
    value: float


@dataclass(frozen=True)
class Metric:
    name: str
    selector: Selector


@dataclass(frozen=True)
class BinaryOp:
    operator: str
    left: Expression
    right: Expression


Expression = Union[Number, Metric, BinaryOp]


@dataclass(frozen=True)
class Comparison:
    left: Expression
    operator: str
    right: Expression


@dataclass(frozen=True)
class Beats:
    winner: Selector
    loser: Selector
    alpha: float = 0.05


@dataclass(frozen=True)
class ValuePin:
    expression: Expression
    quoted: str

    @property
    def percent(self) -> bool:
        return self.quoted.endswith("%")

    @property
    def decimals(self) -> int:
        digits = self.quoted.rstrip("%")
        return len(digits.split(".")[1]) if "." in digits else 0


Claim = Union[Comparison, Beats, ValuePin]


@dataclass(frozen=True)
class Directive:
    kind: str
    body: str
    line: int
    start: int
    end: int


# ----------------------------------------------------------------------------- parsing


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.tokens = _tokenize(text)
        self.position = 0

    def peek(self, offset: int = 0) -> str | None:
        index = self.position + offset
        return self.tokens[index] if index < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        token = self.peek()
        if token is None or (expected is not None and token != expected):
            wanted = f"{expected!r}" if expected else "more"
            raise ClaimSyntaxError(f"{self.text.strip()!r}: expected {wanted}, found {token or 'the end'!r}")
        self.position += 1
        return token

    def done(self) -> None:
        if self.peek() is not None:
            raise ClaimSyntaxError(f"{self.text.strip()!r}: unexpected {self.peek()!r}")

    def selector_pairs(self, stop: tuple[str, ...]) -> Selector:
        values: dict[str, str] = {}
        while self.peek() is not None and self.peek() not in stop:
            key = self.take()
            if key not in SELECTOR_KEYS:
                raise ClaimSyntaxError(
                    f"{self.text.strip()!r}: unknown selector {key!r} (use {', '.join(SELECTOR_KEYS)})"
                )
            self.take("=")
            values[key] = self.take()
            if self.peek() == "," and self.peek(1) in SELECTOR_KEYS:
                self.take(",")
        if not values:
            raise ClaimSyntaxError(f"{self.text.strip()!r}: a selector needs arm=… or run=…")
        return Selector(**values)

    def expression(self) -> Expression:
        node = self.term()
        while self.peek() in ("+", "-"):
            node = BinaryOp(self.take(), node, self.term())
        return node

    def term(self) -> Expression:
        node = self.factor()
        while self.peek() in ("*", "/"):
            node = BinaryOp(self.take(), node, self.factor())
        return node

    def factor(self) -> Expression:
        token = self.take()
        if token == "(":
            node = self.expression()
            self.take(")")
            return node
        if token == "-":
            return BinaryOp("-", Number(0.0), self.factor())
        if NUMBER.match(token):
            value = float(token)
            if self.peek() == "%":
                self.take()
                value /= 100
            return Number(value)
        if token not in METRICS:
            raise ClaimSyntaxError(f"{self.text.strip()!r}: unknown metric {token!r} (known: {', '.join(sorted(METRICS))})")
        self.take("(")
        selector = self.selector_pairs(stop=(")",))
        self.take(")")
        return Metric(token, selector)


def _tokenize(text: str) -> list[str]:
    tokens, position = [], 0
    while position < len(text):
        match = TOKEN.match(text, position)
        if match is None or match.end() == position:
            if text[position:].strip() == "":
                break
            raise ClaimSyntaxError(f"{text.strip()!r}: cannot read {text[position:].strip()[:20]!r}")
        tokens.append(match.group(1) or match.group(2))
        position = match.end()
    return tokens


def parse_claim(kind: str, body: str) -> Claim:
    """Parse one directive body (``kind`` is ``claim`` or ``value``)."""
    parser = _Parser(body)
    if kind == "value":
        expression = parser.expression()
        parser.take("=")
        quoted = parser.take()
        if not NUMBER.match(quoted):
            raise ClaimSyntaxError(f"{body.strip()!r}: the quoted figure {quoted!r} is not a number")
        if parser.peek() == "%":
            quoted += parser.take()
        parser.done()
        return ValuePin(expression, quoted)
    if "beats" in parser.tokens:
        return _parse_beats(parser)
    left = parser.expression()
    operator = parser.take()
    if operator not in COMPARATORS:
        raise ClaimSyntaxError(f"{body.strip()!r}: expected a comparison ({' '.join(COMPARATORS)}), found {operator!r}")
    right = parser.expression()
    parser.done()
    return Comparison(left, operator, right)


def _parse_beats(parser: _Parser) -> Beats:
    winner = parser.selector_pairs(stop=("beats",))
    parser.take("beats")
    loser = parser.selector_pairs(stop=("on", ","))
    dataset = None
    if parser.peek() == "on":
        parser.take("on")
        dataset = parser.selector_pairs(stop=(",",)).dataset
    alpha = 0.05
    if parser.peek() == ",":
        parser.take(",")
        parser.take("p")
        parser.take("<")
        alpha = float(parser.take())
    parser.done()
    if dataset:
        winner = Selector(**{**winner.__dict__, "dataset": winner.dataset or dataset})
        loser = Selector(**{**loser.__dict__, "dataset": loser.dataset or dataset})
    return Beats(winner, loser, alpha)


def find_directives(markdown: str) -> list[Directive]:
    """Every ``{{ claim: … }}`` and ``{{ value: … }}`` in a markdown text, with its line."""
    return [
        Directive(m.group(1), m.group(2), markdown.count("\n", 0, m.start()) + 1, m.start(), m.end())
        for m in DIRECTIVE.finditer(markdown)
    ]


# ----------------------------------------------------------------------------- metrics

METRICS = {
    "mean": "mean over items of the item's mean score (evaluator=NAME reads one evaluator)",
    "pass_rate": "share of items passed, averaged over repeats (evaluator=NAME reads one evaluator)",
    "n": "number of items in the run",
    "errors": "number of cases whose generation failed",
    "cost_total": "total cost in USD (unknown when any case's cost is unknown)",
    "cost_per_item": "the cost of answering one item once: total cost divided by the number of cases",
    "cost_per_correct": "total cost divided by the number of passed cases",
    "latency_p50": "median latency in ms (nearest rank)",
    "latency_p95": "95th-percentile latency in ms (nearest rank)",
}


@dataclass
class ClaimResult:
    """One directive's verdict, with the numbers and runs that decided it."""

    file: str
    line: int
    kind: str
    text: str
    status: str
    detail: str
    numbers: dict = field(default_factory=dict)
    runs: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return dict(self.__dict__)


# ----------------------------------------------------------------------------- checking


@dataclass(frozen=True)
class ResolvedRun:
    run_id: str
    arm_id: str
    dataset_id: str
    header: RunHeader

    @property
    def evaluators(self) -> dict:
        return self.header.evaluators


class RunMetrics:
    """Answers metric questions about runs through the DuckDB views."""

    def __init__(self, database, runs_dir: Path):
        self.database = database
        self.runs_dir = runs_dir
        self.completed = database.rows(
            "SELECT run_id, arm_id, dataset_id FROM runs WHERE status = ? ORDER BY started_at, run_id",
            [str(RunStatus.COMPLETED)],
        )

    def resolve(self, selector: Selector) -> ResolvedRun:
        if selector.run:
            rows = [r for r in self.completed if r["run_id"].startswith(selector.run)]
            if len(rows) != 1:
                raise Uncheckable(f"run={selector.run} matches {len(rows)} completed runs")
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

    def _resolved(self, row: dict) -> ResolvedRun:
        return ResolvedRun(row["run_id"], row["arm_id"], row["dataset_id"], self.database.runs[row["run_id"]].header)

    def item_means(self, run: ResolvedRun, evaluator: str | None, column: str) -> dict[str, float]:
        """Per item: the mean over repeats of the case ``score`` or ``passed`` (or one evaluator's)."""
        if evaluator:
            if evaluator not in run.evaluators:
                raise Uncheckable(f"run {run.run_id} has no evaluator {evaluator!r}")
            sql = (f"SELECT item_id, avg({column}::DOUBLE) AS v FROM scores WHERE run_id = ? AND evaluator = ? "
                   "GROUP BY item_id")
            rows = self.database.rows(sql, [run.run_id, evaluator])
        else:
            sql = f"SELECT item_id, avg({column}::DOUBLE) AS v FROM cases WHERE run_id = ? GROUP BY item_id"
            rows = self.database.rows(sql, [run.run_id])
        values = {r["item_id"]: r["v"] for r in rows if r["v"] is not None}
        if not values:
            raise Uncheckable(f"run {run.run_id} is unscored")
        return values

    def value(self, metric: Metric) -> tuple[float, str]:
        run = self.resolve(metric.selector)
        name = metric.name
        if name in ("mean", "pass_rate"):
            values = self.item_means(run, metric.selector.evaluator, "score" if name == "mean" else "passed")
            return sum(values.values()) / len(values), run.run_id
        cases = self.database.rows(
            "SELECT item_id, error, cost_usd, latency_ms, passed FROM cases WHERE run_id = ?", [run.run_id]
        )
        return _case_metric(name, cases, run.run_id), run.run_id


def _case_metric(name: str, cases: list[dict], run_id: str) -> float:
    if name == "n":
        return float(len({c["item_id"] for c in cases}))
    if name == "errors":
        return float(sum(1 for c in cases if c["error"]))
    if name.startswith("latency_"):
        latencies = [c["latency_ms"] for c in cases if c["latency_ms"] is not None]
        if not latencies:
            raise Uncheckable(f"run {run_id} records no latency")
        return float(nearest_rank_percentile(latencies, float(name.removeprefix("latency_p"))))
    unknown = sum(1 for c in cases if c["cost_usd"] is None)
    if unknown:
        raise Uncheckable(f"run {run_id}: cost unknown for {unknown} of {len(cases)} cases")
    total = sum(c["cost_usd"] for c in cases)
    if name == "cost_total":
        return total
    if name == "cost_per_item":
        return total / len(cases)
    correct = sum(1 for c in cases if c["passed"])
    if correct == 0:
        raise Uncheckable(f"run {run_id}: no passed case, so cost per correct answer is undefined")
    return total / correct


def _evaluate(expression: Expression, metrics: RunMetrics, numbers: dict, runs: list[str]) -> float:
    if isinstance(expression, Number):
        return expression.value
    if isinstance(expression, Metric):
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


def check_claim(claim: Claim, metrics: RunMetrics) -> tuple[str, str, dict, list[str]]:
    """Decide one parsed claim: ``(status, detail, numbers, runs)``."""
    numbers: dict = {}
    runs: list[str] = []
    try:
        if isinstance(claim, Beats):
            return _check_beats(claim, metrics)
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


def _check_beats(claim: Beats, metrics: RunMetrics) -> tuple[str, str, dict, list[str]]:
    winner, loser = metrics.resolve(claim.winner), metrics.resolve(claim.loser)
    runs = [winner.run_id, loser.run_id]
    if winner.dataset_id != loser.dataset_id:
        raise Uncheckable(f"not comparable: dataset {winner.dataset_id} vs {loser.dataset_id}")
    verdict = comparability(loser.header, winner.header)
    if not verdict.comparable:
        raise Uncheckable(f"not comparable: {verdict.reason}")
    a = metrics.item_means(winner, claim.winner.evaluator, "score")
    b = metrics.item_means(loser, claim.loser.evaluator, "score")
    shared = sorted(set(a) & set(b))
    if len(shared) < 2:
        raise Uncheckable(f"only {len(shared)} items scored in both runs")
    test = sign_flip_test([a[i] for i in shared], [b[i] for i in shared])
    numbers = {"mean_diff": test.mean_diff, "p_value": test.p_value, "n": len(shared), "test": test.kind}
    holds = test.mean_diff > 0 and test.p_value < claim.alpha
    detail = f"mean Δ {test.mean_diff:+.4f} over {len(shared)} items, sign-flip p = {test.p_value:.4g} ({test.kind})"
    return (HOLDS if holds else FAILS), detail, numbers, runs


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


def check_claims(project, files: tuple[Path, ...] = ()) -> list[ClaimResult]:
    """Re-derive every claim in the given reports (default: ``reports/**/*.md``) from the runs."""
    metrics = RunMetrics(open_database(project.runs_dir), project.runs_dir)
    results = []
    for path in report_files(project.root, files):
        if not path.is_file():
            raise EvalsiteError(f"{path}: report not found")
        results.extend(check_report(path, metrics, project.relative(path)))
    return results
