"""Run pages: fingerprint, summary, per-evaluator aggregates and every case, paged and filterable;
and ``runs.html``, every run of the project."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from evalsite.analysis.run_views import top_errors
from evalsite.analysis.summary import RunSummary
from evalsite.runlog.records import Case
from evalsite.runlog.rows import case_critical, case_order, finite_number, repeat_of, whole_number
from evalsite.runlog.store import Run
from evalsite.site import paths
from evalsite.site.artifacts import ArtifactLink, run_artifacts
from evalsite.site.drift import experiment_drift
from evalsite.site.inputs import ProjectInputs
from evalsite.site.pages import Job, Kit, PageContext, doc
from evalsite.site.pages.common import Pager, dataset_link, experiment_link, paged_views, runs_table
from evalsite.site.pages.compare import change_counts
from evalsite.site.settings import SiteSettings
from evalsite.site.tables import Column, Interval, Link, Table
from evalsite.site.text import ShownText, display

#: Filters with pages of their own (readable with JavaScript off). Passed cases, usually the bulk
#: of a run, are not copied into pages of their own: the listing's status filter shows them.
CASE_VIEWS = {
    "all": ("all", lambda case: True),
    "failed": ("failed", lambda case: case.passed is False),
    "errored": ("errored", lambda case: case.errored),
    "critical": ("critical rows", lambda case: case.critical is True),
}


@dataclass(kw_only=True)
class RunFacts:
    """A run's identity and totals, as the run page's summary shows them."""

    run_id: str = doc("The run id (its folder under runs/).")
    href: str = doc("Site-root-relative link to the run page.")
    arm_id: str = doc("The arm the run executed.")
    experiment: Link | str = doc("Link to the experiment page, or '—'.")
    dataset: Link | str = doc("Link to the dataset leaderboard, or '—'.")
    dataset_path: str | None = doc("The dataset file, relative to the project root.")
    items: int | None = doc("Items in the dataset when the run started.")
    status: str = doc("completed, failed, canceled, stopped_cost_ceiling, or interrupted (no end.json).")
    started_at: str | None = doc("When the run started (from run.json).")
    ended_at: str | None = doc("When it stopped (from end.json).")
    config_id: str | None = doc("Hash of the resolved config.")
    fingerprint_hash: str | None = doc("Hash of the fingerprint: equal hashes, same conditions.")
    batch_id: str | None = doc("The batch (one `evalsite run`) the run belongs to.")
    repeats: int = doc("Distinct repeat indices among the cases.")
    cases: int = doc("Cases recorded.")
    errors: int = doc("Cases whose generation failed.")
    mean_score: float | None = doc("Mean over items of each item's mean score over its repeats; None when unscored.")
    pass_rate: float | None = doc("Mean over items of each item's share of passed repeats; None without a pass rule.")
    cost_total: float | None = doc("Total cost in USD; None (unknown) when any case has no cost.")
    cost_per_case: float | None = doc("Cost of one answer: total / cases.")
    cost_per_correct: float | None = doc("Total cost / passed cases.")
    latency_p50: float | None = doc("Median latency (nearest rank), ms.")
    latency_p95: float | None = doc("95th percentile latency (nearest rank), ms.")
    input_tokens: int | None = doc("Input tokens over all cases; None when any case did not report them.")
    output_tokens: int | None = doc("Output tokens over all cases.")
    critical_known: bool = doc("Whether critical rows are known (the cases record them, or the dataset file still matches the run).")
    critical_failures: int = doc("Rows marked metadata.critical that errored or failed a pass rule (0 when unknown: see critical_known).")


@dataclass(kw_only=True)
class ScoreView:
    """One evaluator's verdict on one case."""

    evaluator: str = doc("Evaluator name.")
    version: str = doc("Evaluator version hash.")
    score: float | None = doc("Score, if any.")
    passed: bool | None = doc("Verdict, if the evaluator has a pass rule.")
    label: str | None = doc("Categorical label, if any.")
    detail: ShownText | None = doc("Explanation (None when redacted or absent).")
    error: str | None = doc("The evaluator's own error, if it threw.")
    skipped: bool = doc("True when the evaluator had nothing to judge.")


@dataclass(kw_only=True)
class CaseRow:
    """One case as the listing shows it; texts are cut to max_field_chars and absent when redacted."""

    anchor: str = doc("HTML id of the row (item and repeat).")
    item_id: str = doc("The item id.")
    repeat: int = doc("The repeat index.")
    status: str = doc("passed, failed, errored or unscored.")
    critical: bool | None = doc("True for a metadata.critical row; None when unknown.")
    input: ShownText | None = doc("What the target received.")
    expected: ShownText | None = doc("The expected value.")
    output: ShownText | None = doc("What the target answered.")
    scores: list[ScoreView] = doc("One entry per evaluator.")
    score: float | None = doc("The case score (weighted mean of evaluator scores).")
    passed: bool | None = doc("The case verdict.")
    latency_ms: float | None = doc("Latency in milliseconds.")
    input_tokens: int | None = doc("Input tokens.")
    output_tokens: int | None = doc("Output tokens.")
    cost_usd: float | None = doc("Cost in USD; None when unknown.")
    error: str | None = doc("Generation error, if any.")
    finish_reason: str | None = doc("Why generation stopped (stop, length, …).")
    errored: bool = doc("True when generation or an evaluator raised an error.")
    item_href: str | None = doc("Site-root-relative link to the item's page (every run's answer to it).", None)
    cache: str | None = doc("With the response cache on: hit (served from the cache, nothing called), recorded or missing.", None)


@dataclass(kw_only=True)
class CaseListing:
    """One page of a run's cases under one filter."""

    pager: Pager = doc("Filters and pages of the listing.")
    cases: list[CaseRow] = doc("The cases on this page.")
    downloads: Table | None = doc("The same cases as a flat table, its CSV and JSON files beside the page (pages of the 'all' filter only: the filtered pages' cases are among them).")


@dataclass(kw_only=True)
class Noise:
    """How much a run moves between repeats of the same items."""

    std: float | None = doc("Standard deviation of the per-repeat mean scores: a difference smaller than this is noise.")
    per_repeat: Table = doc("Mean score of each repeat.")
    flaky: Table = doc("Items that passed in some repeats and failed in others, with Wilson intervals, pass@k and pass^k.")
    flaky_count: int = doc("How many items are flaky.")
    items: int = doc("Items with a verdict.")
    k: int = doc("The k of pass@k and pass^k (the fewest repeats any item has).")
    mean_pass_at_k: float | None = doc("Mean over items of pass@k: the chance one of k tries passes.")
    mean_pass_hat_k: float | None = doc("Mean over items of pass^k: the chance all k tries pass.")


@dataclass(kw_only=True)
class ErrorLine:
    """One error message and how often the run met it."""

    message: str = doc("The message's first line (cut to 300 characters).")
    source: str = doc("'generation' (the target failed) or the evaluator that raised it.")
    count: int = doc("Cases with this message.")
    items: list[str] = doc("The first few item ids that met it.")


@dataclass(kw_only=True)
class RunPage(PageContext):
    """``runs/<run_id>.html`` (the run page, with the first page of its cases)."""

    facts: RunFacts = doc("Identity and totals.")
    fingerprint: Table = doc("The fingerprint flattened to field → value.")
    fingerprint_json: str = doc("The fingerprint as indented JSON.")
    config_json: str = doc("The resolved config as indented JSON.")
    evaluators: Table = doc("Per-evaluator aggregates: n, ok, errors, skipped, pass rate, mean, labels, critical failures.")
    noise: Noise | None = doc("Spread across repeats and flaky items; None with a single repeat.")
    listing: CaseListing = doc("The first page of every case.")
    warnings: list[str] = doc("Problems met while reading the run (e.g. a bad line in cases.jsonl).")
    edited: bool = doc("True when this is its arm's latest run and the manifest no longer produces its config (edited since this run).", False)
    top_errors: list[ErrorLine] = doc("The most frequent error messages (generation and evaluators), most frequent first.", default_factory=list)
    compare: Link | None = doc("The compare page against the run's baseline (as `evalsite compare` resolves it), if it has one.", None)
    artifacts: list[ArtifactLink] = doc("The run's declared artifacts copied beside the page (name, type, href, inline for plots); none with redact.", default_factory=list)


@dataclass(kw_only=True)
class CasesPage(PageContext):
    """``runs/<run_id>/<filter>-<n>.html``: one more page of a run's cases."""

    facts: RunFacts = doc("Identity and totals of the run.")
    listing: CaseListing = doc("The cases of this page.")


@dataclass(kw_only=True)
class RunsPage(PageContext):
    """``runs.html``: every run, newest first."""

    runs: Table = doc("Every run, newest first.")
    skipped: list[str] = doc("Run folders that could not be read, with the reason.")


def jobs(inputs: ProjectInputs, settings: SiteSettings) -> list[Job]:
    every_run = tuple(run.run_id for run in inputs.runs)
    result = [Job("runs", ("skipped", "decisions", *inputs.summary_keys(every_run)), _render_runs_index, digests=every_run)]
    for run in inputs.runs:
        keys = inputs.summary_keys([run.run_id])
        baseline = inputs.baseline_of(run.run_id)
        edited = run.run_id in experiment_drift(inputs, run.header.experiment).edited
        result.append(Job(f"run:{run.run_id}", tuple(keys), _run_renderer(run, baseline, edited), digests=(run.run_id,),
                          cases_of=run.run_id, variant=f"{baseline or ''}|{edited}"))
    return result


def _render_runs_index(kit: Kit) -> dict[str, bytes]:
    baselines = {r.run_id: kit.inputs.baseline_of(r.run_id) for r in kit.inputs.runs}
    changes = {run_id: change_counts(kit.inputs, run_id, baseline) for run_id, baseline in baselines.items() if baseline}
    table = runs_table("runs", kit.inputs.runs, kit.digests, baselines=baselines, changes=changes)
    return kit.page(paths.RUNS, "runs.html", RunsPage(title="All runs", runs=table, skipped=kit.inputs.skipped))


def _run_renderer(run: Run, baseline: str | None, edited: bool):
    def render(kit: Kit) -> dict[str, bytes]:
        summary = kit.digests[run.run_id]
        cases = sorted(kit.cases[run.run_id], key=case_order)
        critical = kit.inputs.critical_items(run, cases)
        rows = [case_row(case, critical, kit.settings) for case in cases]
        if run.header.dataset.dataset_id:
            for row in rows:
                row.item_href = paths.item(run.header.dataset.dataset_id, row.item_id)
        facts = run_facts(run, summary)
        evaluator_names = sorted(summary.evaluators)
        shards = paged_views(rows, CASE_VIEWS, lambda view, page: paths.run_cases(run.run_id, view, page),
                             max_count=kit.settings.cases_per_page, budget_bytes=kit.settings.page_budget_bytes,
                             size_of=_case_size)
        files: dict[str, bytes] = {}
        for shard in shards:
            listing = CaseListing(pager=shard.pager, cases=shard.records,
                                  downloads=cases_table(shard.records, evaluator_names, kit.settings.redact)
                                  if shard.pager.view == "all" else None)
            if shard.path == paths.run(run.run_id):
                context = _run_page(run, summary, facts, listing, kit.case_warnings.get(run.run_id, []))
                context.top_errors = error_lines(kit.cases[run.run_id])
                context.edited = edited
                context.compare = Link(baseline, paths.compare(run.run_id, baseline)) if baseline else None
                context.artifacts, copies = run_artifacts(run.run_id, run.directory, run.footer.raw if run.footer else None, kit.settings.redact)
                files.update(copies)
                files.update(kit.page(shard.path, "run.html", context))
            else:
                title = f"{run.run_id}: {shard.pager.view} cases, page {_current(shard.pager)}"
                files.update(kit.page(shard.path, "cases.html", CasesPage(title=title, facts=facts, listing=listing)))
        return files

    return render


#: How many distinct error messages the run page's error panel lists.
def error_lines(cases: list[Case]) -> list[ErrorLine]:
    """The error panel: :func:`evalsite.analysis.run_views.top_errors`, shaped for the page."""
    return [ErrorLine(message=e.message, source=e.source, count=e.count, items=list(e.items)) for e in top_errors(cases)]


def _current(pager: Pager) -> int:
    return next(p.number for p in pager.pages if p.current)


def _run_page(run: Run, summary: RunSummary, facts: RunFacts, listing: CaseListing, warnings: list[str]) -> RunPage:
    fingerprint = run.header.fingerprint
    return RunPage(
        title=f"Run {run.run_id}",
        facts=facts,
        fingerprint=Table("fingerprint", [Column("field", "field", "code"), Column("value", "value", "code")],
                          [{"field": k, "value": v} for k, v in flatten(fingerprint)], sortable=False),
        fingerprint_json=json.dumps(fingerprint, indent=2, sort_keys=True, ensure_ascii=False, default=str),
        config_json=json.dumps(run.header.config, indent=2, sort_keys=True, ensure_ascii=False, default=str),
        evaluators=evaluators_table(summary),
        noise=run_noise(summary),
        listing=listing,
        warnings=warnings,
    )


def run_facts(run: Run, summary: RunSummary) -> RunFacts:
    return RunFacts(
        run_id=run.run_id,
        href=paths.run(run.run_id),
        arm_id=run.header.arm_id,
        experiment=experiment_link(run.header.experiment),
        dataset=dataset_link(run.header.dataset.dataset_id),
        dataset_path=run.header.dataset.path,
        items=run.header.dataset.items,
        status=run.status,
        started_at=run.header.started_at,
        ended_at=(run.footer.ended_at if run.footer else None),
        config_id=run.header.config_id,
        fingerprint_hash=run.header.fingerprint_hash,
        batch_id=run.header.batch_id,
        repeats=len(summary.repeats),
        cases=summary.cases,
        errors=summary.errors,
        mean_score=summary.mean_score,
        pass_rate=summary.pass_rate,
        cost_total=summary.cost.total,
        cost_per_case=summary.cost.per_item,
        cost_per_correct=summary.cost.per_correct,
        latency_p50=summary.latency.p50_ms,
        latency_p95=summary.latency.p95_ms,
        input_tokens=summary.input_tokens,
        output_tokens=summary.output_tokens,
        critical_known=summary.critical_known,
        critical_failures=len(summary.critical_failures or ()),
    )


def evaluators_table(summary: RunSummary) -> Table:
    columns = [
        Column("evaluator", "evaluator"), Column("version", "version", "code"),
        Column("n", "n", "count"), Column("ok", "ok", "count", "scored without error or skip"),
        Column("errors", "errors", "count"), Column("skipped", "skipped", "count"),
        Column("pass_rate", "pass rate", "percent", "errors and skips count as not passed; none without a pass rule"),
        Column("mean", "mean", "number"), Column("labels", "labels"),
        Column("critical_failures", "critical failures", "count",
               "metadata.critical rows that errored or failed a pass rule"),
    ]
    rows = [{
        "evaluator": e.name, "version": str(e.version), "n": e.n, "ok": e.ok, "errors": e.errors, "skipped": e.skipped,
        "pass_rate": e.pass_rate, "mean": e.mean,
        "labels": ", ".join(f"{label}: {count}" for label, count in e.label_counts.items()),
        "critical_failures": None if e.critical_failures is None else len(e.critical_failures),
    } for e in sorted(summary.evaluators.values(), key=lambda e: e.name)]
    return Table("evaluators", columns, rows)


def run_noise(summary: RunSummary) -> Noise | None:
    """The run's noise and flaky items as :func:`evalsite.analysis.summary.summarise_run` measured
    them (the figures ``evalsite noise`` prints)."""
    if len(summary.repeats) < 2:
        return None
    noise, flaky, item_ids = summary.noise, summary.flakiness(), summary.verdict_items
    per_repeat = Table("repeats", [Column("repeat", "repeat", "count"), Column("mean_score", "mean score", "number")],
                       [{"repeat": r, "mean_score": m} for r, m in enumerate(noise.repeat_means)] if noise else [],
                       caption="Mean score per repeat")
    flaky_rows = [] if flaky is None else [{
        "item": item_ids[i], "runs": flaky.n_runs[i], "passed": flaky.n_passed[i], "pass_rate": flaky.pass_rate[i],
        "wilson": Interval(flaky.pass_rate[i], *flaky.wilson[i]), "pass_at_k": flaky.pass_at_k[i],
        "pass_hat_k": flaky.pass_hat_k[i]} for i in flaky.flaky_items]
    k = flaky.k if flaky else 0
    flaky_table = Table("flaky", [
        Column("item", "item", "code"), Column("runs", "repeats", "count"), Column("passed", "passed", "count"),
        Column("wilson", "pass rate", "interval", "with its 95% Wilson interval"),
        Column("pass_at_k", f"pass@{k}", "number"), Column("pass_hat_k", f"pass^{k}", "number"),
    ], flaky_rows, caption="Flaky items (passed in some repeats, failed in others)")
    return Noise(
        std=None if noise is None or math.isnan(noise.std) else noise.std,
        per_repeat=per_repeat,
        flaky=flaky_table,
        flaky_count=len(flaky_rows),
        items=len(item_ids),
        k=k,
        mean_pass_at_k=None if flaky is None else _finite(flaky.mean_pass_at_k),
        mean_pass_hat_k=None if flaky is None else _finite(flaky.mean_pass_hat_k),
    )


def _finite(value: float) -> float | None:
    return None if math.isnan(value) else value


def case_row(case: Case, critical: dict[str, bool] | None, settings: SiteSettings) -> CaseRow:
    item_id, limit, redact = str(case.get("item_id")), settings.max_field_chars, settings.redact
    scores = [s for s in case.get("scores") or [] if isinstance(s, dict)]
    error = case.error  # the message, whether the line stores a string or {type, message}
    passed = case.get("passed") if isinstance(case.get("passed"), bool) else None
    status = "errored" if error else "passed" if passed else "failed" if passed is False else "unscored"
    repeat = repeat_of(case)
    return CaseRow(
        anchor=paths.slug(f"case-{item_id}-{repeat}"),
        item_id=item_id,
        repeat=repeat,
        status=status,
        critical=case_critical(case, critical),
        input=None if redact else display(case.get("input"), limit),
        expected=None if redact else display(case.get("expected"), limit),
        output=None if redact else display(case.get("output"), limit),
        scores=[ScoreView(
            evaluator=str(s.get("evaluator")), version=str(s.get("version")), score=finite_number(s.get("score")),
            passed=s.get("passed") if isinstance(s.get("passed"), bool) else None,
            label=None if s.get("label") is None else str(s.get("label")),
            detail=None if redact else display(s.get("detail"), limit),
            error=None if s.get("error") is None else str(s.get("error"))[:limit],
            skipped=bool(s.get("skipped")),
        ) for s in scores],
        score=finite_number(case.get("score")),
        passed=passed,
        latency_ms=finite_number(case.get("latency_ms")),
        input_tokens=whole_number(case.get("input_tokens")),
        output_tokens=whole_number(case.get("output_tokens")),
        cost_usd=finite_number(case.get("cost_usd")),
        error=None if error is None else str(error)[:limit],
        finish_reason=None if case.get("finish_reason") is None else str(case.get("finish_reason")),
        errored=bool(error) or any(s.get("error") for s in scores),
        cache=case.get("cache") if isinstance(case.get("cache"), str) else None,
    )


def cases_table(rows: list[CaseRow], evaluators: list[str], redact: bool) -> Table:
    columns = [
        Column("item_id", "item", "code"), Column("repeat", "repeat", "count"), Column("status", "status", "status"),
        Column("critical", "critical"), Column("score", "score", "number"), Column("passed", "passed"),
        Column("latency_ms", "latency", "ms"), Column("input_tokens", "input tokens", "count"),
        Column("output_tokens", "output tokens", "count"), Column("cost_usd", "cost", "usd"),
        Column("finish_reason", "finish reason"), Column("error", "error"),
    ]
    if not redact:
        columns += [Column("input", "input"), Column("expected", "expected"), Column("output", "output")]
    for name in evaluators:
        columns += [Column(f"score:{name}", f"{name} score", "number"), Column(f"passed:{name}", f"{name} passed")]
        if not redact:
            columns.append(Column(f"detail:{name}", f"{name} detail"))
    records = []
    for row in rows:
        record = {c.key: getattr(row, c.key, None) for c in columns if ":" not in c.key}
        for key in ("input", "expected", "output"):
            if key in record:
                record[key] = _shown(record[key])
        for score in row.scores:
            record[f"score:{score.evaluator}"] = score.score
            record[f"passed:{score.evaluator}"] = score.passed
            if not redact:
                record[f"detail:{score.evaluator}"] = score.error or _shown(score.detail)
        records.append(record)
    return Table("cases", columns, records, sortable=False)


def flatten(value, prefix: str = "") -> list[tuple[str, str]]:
    """Nested mappings as (dotted key, JSON text) pairs, sorted by key."""
    if isinstance(value, dict) and value:
        pairs = []
        for key in sorted(value, key=str):
            pairs += flatten(value[key], f"{prefix}.{key}" if prefix else str(key))
        return pairs
    return [(prefix, value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False, default=str))]


def _shown(text: ShownText | None) -> str | None:
    return None if text is None else text.text


def _case_size(row: CaseRow) -> int:
    texts = [row.input, row.expected, row.output, *(s.detail for s in row.scores)]
    return 400 + sum(len(t.text) for t in texts if t is not None) + 200 * len(row.scores)
