"""Report pages: ``reports/<name>.html``, each markdown report under ``reports/`` rendered with every
claim re-derived from the runs (by :mod:`evalsite.analysis.claims`, as ``evalsite check-claims`` does) and
marked ✓ holds, ✗ fails or ? cannot be checked, linked to the runs that decided it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from markupsafe import Markup

from evalsite.analysis.claims import (
    FAILS,
    HOLDS,
    Beats,
    BinaryOp,
    ClaimResult,
    ClaimSyntaxError,
    Comparison,
    Expression,
    MetricTerm,
    Number,
    RunMetrics,
    Selector,
    ValuePin,
    check_report,
    find_directives,
    parse_claim,
)
from evalsite.runlog.hashing import sha256_text
from evalsite.site import paths
from evalsite.site.inputs import ProjectInputs, ReportSource
from evalsite.site.pages import Kit, PageContext, PageJob, doc
from evalsite.site.safe_text import markdown
from evalsite.site.settings import SiteSettings
from evalsite.site.tables import Column, Link, Table

MARKS = {HOLDS: "✓", FAILS: "✗"}
#: How a metric of the claim grammar reads in prose.
METRIC_WORDS = {"mean": "the mean score", "pass_rate": "the pass rate", "n": "the number of items", "errors": "the errors",
                "cost_total": "the total cost", "cost_per_case": "the cost per case", "cost_per_item": "the cost per item", "cost_per_correct": "the cost per correct answer",
                "latency_p50": "the median latency", "latency_p95": "the p95 latency"}
OPERATOR_WORDS = {"<": "<", "<=": "≤", ">": ">", ">=": "≥", "==": "=", "!=": "≠"}


@dataclass(kw_only=True)
class ClaimNote:
    """The footnote of one claim: its verdict, the check behind it and the runs that decided it."""

    number: int = doc("Footnote number, from 1 in the report's order.")
    mark: str = doc("✓ holds, ✗ fails, ? cannot be checked.")
    status: str = doc("holds, fails or cannot be checked.")
    claim: str = doc("The directive as written in the report.")
    detail: str = doc("The numbers that decided it (or why it cannot be checked).")
    runs: list[Link] = doc("The runs it was checked on.")


@dataclass(kw_only=True)
class ReportPage(PageContext):
    """``reports/<name>.html``."""

    name: str = doc("The report's name (its path under reports/, without .md).")
    source: str = doc("The report file, relative to the project root.")
    body: Markup = doc("The report rendered from markdown (raw HTML escaped), each claim replaced by its marked verdict.")
    claims: Table = doc("Every claim and pinned value: line, text, verdict, the numbers and runs that decided it.")
    notes: list[ClaimNote] = doc("One footnote per claim, in order (the prose carries its number).", default_factory=list)
    holds: int = doc("Claims that hold.")
    fails: int = doc("Claims that fail (the runs no longer support them).")
    uncheckable: int = doc("Claims the runs cannot decide (unknown arm, no run, syntax).")


def jobs(inputs: ProjectInputs, settings: SiteSettings) -> list[PageJob]:
    every_run = inputs.summary_keys([run.run_id for run in inputs.runs])  # runs, and the dataset files clusters come from
    return [PageJob(f"report:{report.name}", (f"report:{report.name}", "decisions", *every_run), _renderer(report))  # exclusions
            for report in inputs.reports]


def _renderer(report: ReportSource) -> Callable[[Kit], dict[str, bytes]]:
    def render(kit: Kit) -> dict[str, bytes]:
        project = kit.inputs.project
        metrics = RunMetrics(project)
        shown_as = project.relative(report.path)
        results = check_report(report.path, metrics, shown_as)
        text = report.path.read_text(encoding="utf-8")
        path = paths.report(report.name)
        context = ReportPage(
            title=f"Report {report.name}",
            name=report.name,
            source=shown_as,
            body=marked_report(text, results),
            claims=claims_table(results),
            notes=[claim_note(number, result) for number, result in enumerate(results, start=1)],
            holds=sum(r.status == HOLDS for r in results),
            fails=sum(r.status == FAILS for r in results),
            uncheckable=sum(r.status not in (HOLDS, FAILS) for r in results),
        )
        return kit.page(path, "report.html", context)

    return render


def marked_report(text: str, results: list[ClaimResult]) -> Markup:
    """Render ``text`` with each directive swapped for a placeholder, then the placeholder for its
    verdict (built from escaped parts), so no directive text is ever read as markdown or HTML.

    The placeholders are named after a hash of the whole text, so a report cannot hold one (not
    even written with HTML entities that markdown decodes) and move a verdict elsewhere."""
    directives = find_directives(text)
    stem = "EVALSITECLAIM" + sha256_text(text)[:24]
    placeholders = [f"{stem}{index:06d}X" for index in range(len(directives))]
    pieces, position = [], 0
    for directive, placeholder in zip(directives, placeholders):
        pieces += [text[position:directive.start], placeholder]
        position = directive.end
    html = str(markdown("".join(pieces) + text[position:]))
    for number, (placeholder, result) in enumerate(zip(placeholders, results), start=1):
        html = html.replace(placeholder, str(_mark(result, number)), 1)
    return Markup(html)


def _mark(result: ClaimResult, number: int) -> Markup:
    """The claim in words with its mark and a footnote number (the footnote holds the check)."""
    css = {HOLDS: "holds", FAILS: "fails"}.get(result.status, "uncheckable")
    return Markup('<span class="claim claim-{css}" id="claim-{n}">{mark} {text}</span>'
                  '<sup class="claim-ref"><a href="#claim-note-{n}">[{n}]</a></sup>').format(
        css=css, n=number, mark=MARKS.get(result.status, "?"), text=claim_prose(result.kind, result.text))


def claim_prose(kind: str, text: str) -> str:
    """A directive in words: ``arm=v2 beats arm=v1 on dataset=golden, p < 0.05`` → ``v2 beats v1 on
    golden (paired test, p < 0.05)``; a pinned value shows its quoted figure. Text that does not parse is shown as written."""
    try:
        claim = parse_claim(kind, text)
    except ClaimSyntaxError:
        return text.strip()
    if isinstance(claim, ValuePin):
        return claim.quoted
    if isinstance(claim, Beats):
        where = f" on {claim.winner.dataset}" if claim.winner.dataset else ""
        return f"{_who(claim.winner)} beats {_who(claim.loser)}{where} (paired test, p < {claim.alpha:g})"
    if isinstance(claim, Comparison):
        return f"{_expression(claim.left)} {OPERATOR_WORDS[claim.operator]} {_expression(claim.right)}"
    return text.strip()


def _who(selector: Selector) -> str:
    name = selector.arm or selector.run or "?"
    return f"{name} ({selector.evaluator})" if selector.evaluator else name


def _expression(expression: Expression) -> str:
    if isinstance(expression, Number):
        return f"{expression.value:g}"
    if isinstance(expression, MetricTerm):
        return f"{METRIC_WORDS.get(expression.name, expression.name)} of {_who(expression.selector)}"
    if isinstance(expression, BinaryOp):
        return f"({_expression(expression.left)} {expression.operator} {_expression(expression.right)})"
    return str(expression)


def claim_note(number: int, result: ClaimResult) -> ClaimNote:
    return ClaimNote(number=number, mark=MARKS.get(result.status, "?"), status=result.status, claim=result.text.strip(),
                     detail=result.detail, runs=[Link(r, paths.run(r)) for r in result.runs])


def claims_table(results: list[ClaimResult]) -> Table:
    rows = [{
        "line": r.line, "kind": r.kind, "claim": r.text, "status": r.status, "detail": r.detail,
        "runs": ", ".join(r.runs), "_class": f"claim-row-{r.status.replace(' ', '-')}",
    } for r in results]
    return Table("claims", [
        Column("line", "line", "count"), Column("kind", "kind"), Column("claim", "claim", "code"),
        Column("status", "verdict", "status"), Column("detail", "numbers"), Column("runs", "runs", "code"),
    ], rows)


def report_link(report: ReportSource) -> Link:
    return Link(report.name, paths.report(report.name))
