"""Report pages: ``reports/<name>.html``, each markdown report under ``reports/`` rendered with every
claim re-derived from the runs (by :mod:`evalsite.analysis.claims`, as ``evalsite check-claims`` does) and
marked ✓ holds, ✗ fails or ? cannot be checked, linked to the runs that decided it."""

from __future__ import annotations

from dataclasses import dataclass

from markupsafe import Markup

from evalsite.analysis.claims import FAILS, HOLDS, ClaimResult, RunMetrics, check_report, find_directives
from evalsite.analysis.db import open_database
from evalsite.runlog.hashing import sha256_text
from evalsite.site import paths
from evalsite.site.inputs import ProjectInputs, ReportSource
from evalsite.site.pages import Job, Kit, PageContext, doc
from evalsite.site.settings import SiteSettings
from evalsite.site.tables import Column, Link, Table
from evalsite.site.text import markdown

MARKS = {HOLDS: "✓", FAILS: "✗"}


@dataclass(kw_only=True)
class ReportPage(PageContext):
    """``reports/<name>.html``."""

    name: str = doc("The report's name (its path under reports/, without .md).")
    source: str = doc("The report file, relative to the project root.")
    body: Markup = doc("The report rendered from markdown (raw HTML escaped), each claim replaced by its marked verdict.")
    claims: Table = doc("Every claim and pinned value: line, text, verdict, the numbers and runs that decided it.")
    holds: int = doc("Claims that hold.")
    fails: int = doc("Claims that fail (the runs no longer support them).")
    uncheckable: int = doc("Claims the runs cannot decide (unknown arm, no run, syntax).")


def jobs(inputs: ProjectInputs, settings: SiteSettings) -> list[Job]:
    every_run = tuple(f"run:{run.run_id}" for run in inputs.runs)
    return [Job(f"report:{report.name}", (f"report:{report.name}", *every_run), _renderer(report))
            for report in inputs.reports]


def _renderer(report: ReportSource):
    def render(kit: Kit) -> dict[str, bytes]:
        project = kit.inputs.project
        metrics = RunMetrics(open_database(project.runs_dir), project.runs_dir)
        shown_as = project.relative(report.path)
        results = check_report(report.path, metrics, shown_as)
        text = report.path.read_text(encoding="utf-8")
        path = paths.report(report.name)
        context = ReportPage(
            title=f"Report {report.name}",
            name=report.name,
            source=shown_as,
            body=marked_report(text, results, path),
            claims=claims_table(results),
            holds=sum(r.status == HOLDS for r in results),
            fails=sum(r.status == FAILS for r in results),
            uncheckable=sum(r.status not in (HOLDS, FAILS) for r in results),
        )
        return kit.page(path, "report.html", context)

    return render


def marked_report(text: str, results: list[ClaimResult], page: str) -> Markup:
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
    for placeholder, result in zip(placeholders, results):
        html = html.replace(placeholder, str(_mark(result, page)), 1)
    return Markup(html)


def _mark(result: ClaimResult, page: str) -> Markup:
    css = {HOLDS: "holds", FAILS: "fails"}.get(result.status, "uncheckable")
    mark = MARKS.get(result.status, "?")
    runs = Markup(" ").join(Markup('<a href="{}" title="run {}">{}</a>').format(paths.relative(page, paths.run(r)), r, _short(r))
                            for r in result.runs)
    shown = result.text.rsplit("=", 1)[1].strip() if result.kind == "value" and "=" in result.text else result.text
    return Markup('<span class="claim claim-{css}" title="{title}">{mark} {text}</span>').format(
        css=css, title=f"{result.status}: {result.detail}", mark=mark,
        text=shown if result.kind == "value" else f"claim: {shown}",
    ) + (Markup('<sup class="claim-runs">{}</sup>').format(runs) if runs else Markup(""))


def _short(run_id: str) -> str:
    """``20260101T000000Z-careful-1a2b`` → ``careful``: the arm part of a run id, for a compact link."""
    parts = run_id.split("-")
    return "-".join(parts[1:-1]) if len(parts) > 2 else run_id


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
