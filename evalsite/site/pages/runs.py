"""Run pages: summary, error panel, per-evaluator aggregates, fingerprint, and every case (drawn in the
browser from the run's data scripts, filtered and paged over the whole run); and ``runs.html``, every
run of the project."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass

from evalsite.analysis.dataset_versions import OLDER, DatasetVersion
from evalsite.analysis.review import judge_names
from evalsite.analysis.run_views import ErrorCount, top_errors_of
from evalsite.analysis.summary import RunSummary
from evalsite.runlog.store import Run
from evalsite.site import paths
from evalsite.site.artifacts import ArtifactLink, run_artifacts
from evalsite.site.casedata import run_data
from evalsite.site.drift import experiment_drift
from evalsite.site.inputs import ProjectInputs
from evalsite.site.pages import Kit, PageContext, PageJob, doc
from evalsite.site.pages.common import dataset_link, experiment_link, runs_table
from evalsite.site.pages.compare import change_counts
from evalsite.site.settings import SiteSettings
from evalsite.site.tables import Column, Link, ShownInterval, Table

#: The filters the listing's counts link to (name, label); the listing filters in the browser.
CASE_VIEWS = (("all", "all"), ("failed", "failed"), ("errored", "errored"), ("critical", "critical rows"),
              ("passed", "passed"), ("unscored", "unscored"))


@dataclass(kw_only=True)
class RunFacts:
    """A run's identity and totals, as the run page's summary shows them."""

    run_id: str = doc("The run id (its folder under runs/).")
    href: str = doc("Site-root-relative link to the run page.")
    arm_id: str | None = doc("The arm the run executed (None for a run that names none).")
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
    emulated: bool = doc("Every answer came from emulation.infra.llm: mock, not from the arm's target.", default=False)
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
class ViewCount:
    """One filter of the case listing and how many cases it holds."""

    name: str = doc("Filter name (all, failed, errored, critical, passed, unscored); ``#cases-<name>`` on the run page selects it.")
    label: str = doc("Filter label shown to the reader.")
    count: int = doc("Cases in this filter.")


@dataclass(kw_only=True)
class CaseListing:
    """Where the browser finds a run's cases (:mod:`evalsite.site.casedata`) and how the listing pages them."""

    folder: str = doc("Site-root-relative folder of the run's data scripts (ends in /).")
    items: str | None = doc("Site-root-relative folder of the dataset's item pages (ends in /); None when the run names no dataset.")
    page_size: int = doc("Cases per page of the listing ([site] cases_per_page).")
    views: list[ViewCount] = doc("Every filter with its count, server-rendered so the counts read without JavaScript.")


@dataclass(kw_only=True)
class Noise:
    """How much a run moves between repeats of the same items."""

    std: float | None = doc("Standard deviation of the per-repeat mean scores: how far the mean moves on a rerun; a difference of this size could not be told apart from rerunning.")
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
    listing: CaseListing = doc("The run's case listing (drawn in the browser from the run's data scripts).")
    warnings: list[str] = doc("Problems met while reading the run (e.g. a bad line in cases.jsonl).")
    edited: bool = doc("True when this is its arm's latest run and the manifest no longer produces its config (edited since this run).", False)
    top_errors: list[ErrorLine] = doc("The most frequent error messages (generation and evaluators), most frequent first.", default_factory=list)
    compare: Link | None = doc("The compare page against the run's baseline (as `evalsite compare` resolves it), if it has one.", None)
    artifacts: list[ArtifactLink] = doc("The run's declared artifacts copied beside the page (name, type, href, inline for plots); none with redact.", default_factory=list)
    excluded: str | None = doc("Why the run is kept out of comparisons (`evalsite runs --exclude`), if it is.", None)
    dataset_version: str = doc("Which version of its file the run's dataset is: 'current version of data/x.jsonl' (its hash matches the file now) or 'older version of data/x.jsonl (the file has changed since)'.", "")
    current: bool = doc("False when the run's dataset is an older version of its file.", True)
    judges: list[str] = doc("The run's llm_judge evaluators, whose agreement with human review judges.html shows.", default_factory=list)


@dataclass(kw_only=True)
class RunsPage(PageContext):
    """``runs.html``: every run, newest first."""

    runs: Table = doc("Every run, newest first.")
    skipped: list[str] = doc("Run folders that could not be read, with the reason.")


def jobs(inputs: ProjectInputs, settings: SiteSettings) -> list[PageJob]:
    every_run = tuple(run.run_id for run in inputs.runs)
    result = [PageJob("runs", ("skipped", "decisions", *inputs.summary_keys(every_run)), _render_runs_index, figures=every_run)]
    for run in inputs.runs:
        keys = inputs.summary_keys([run.run_id])
        baseline = inputs.baseline_of(run.run_id)
        edited = run.run_id in experiment_drift(inputs, run.header.experiment).edited
        exclusion = inputs.excluded.get(run.run_id)
        excluded = exclusion.reason if exclusion else None
        version = inputs.dataset_versions.of(run.header.dataset)  # the file's version now is part of the page's key
        result.append(PageJob(f"run:{run.run_id}", tuple(keys), _run_renderer(run, baseline, edited, excluded, version),
                          figures=(run.run_id,), cases_of=run.run_id,
                          variant=f"{baseline or ''}|{edited}|{excluded}|{version.state}"))
    return result


def _render_runs_index(kit: Kit) -> dict[str, bytes]:
    baselines = {r.run_id: kit.inputs.baseline_of(r.run_id) for r in kit.inputs.runs}
    changes = {run_id: change_counts(kit, run_id, baseline) for run_id, baseline in baselines.items() if baseline}
    excluded = {run_id: decision.reason for run_id, decision in kit.inputs.excluded.items()}
    table = runs_table("runs", kit.inputs.runs, kit.figures, baselines=baselines, changes=changes, excluded=excluded)
    return kit.page(paths.RUNS, "runs.html", RunsPage(title="All runs", runs=table, skipped=kit.inputs.skipped))


def _run_renderer(run: Run, baseline: str | None, edited: bool, excluded: str | None,
                  version: DatasetVersion) -> Callable[[Kit], dict[str, bytes]]:
    def render(kit: Kit) -> dict[str, bytes]:
        summary = kit.summaries[run.run_id]
        cases = kit.cases[run.run_id]
        assert cases.texts is not None, "the build reads a run's own page's cases with their texts"
        dataset_id = run.header.dataset.dataset_id
        data = run_data(run.run_id, cases.columns, cases.texts, limit=kit.settings.max_field_chars,
                        redact=kit.settings.redact, item_pages=bool(dataset_id), part_chars=kit.settings.page_budget_bytes,
                        item_texts=dataset_id or None)
        listing = CaseListing(
            folder=paths.run_data_index(run.run_id).removesuffix("index.js"),
            items=paths.items_folder(dataset_id) if dataset_id else None,
            page_size=kit.settings.cases_per_page,
            views=[ViewCount(name=name, label=label, count=data.counts[name]) for name, label in CASE_VIEWS],
        )
        context = _run_page(run, summary, run_facts(run, summary), listing, cases.warnings)
        context.top_errors = error_lines(top_errors_of(cases.columns, cases.texts.error, cases.texts.score_error))
        context.judges = judge_names(run.header)
        context.edited, context.excluded = edited, excluded
        context.dataset_version, context.current = version.label, version.state != OLDER
        context.compare = Link(baseline, paths.compare(run.run_id, baseline)) if baseline else None
        context.artifacts, copies = run_artifacts(run.run_id, run.directory, run.footer.raw if run.footer else None, kit.settings.redact)
        return {**data.files, **copies, **kit.page(paths.run(run.run_id), "run.html", context)}

    return render


def error_lines(errors: list[ErrorCount]) -> list[ErrorLine]:
    """The error panel: :func:`evalsite.analysis.run_views.top_errors_of`, shaped for the page."""
    return [ErrorLine(message=e.message, source=e.source, count=e.count, items=list(e.items)) for e in errors]


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
        emulated=run.header.emulated,
        repeats=len(summary.repeats),
        cases=summary.cases,
        errors=summary.errors,
        mean_score=summary.mean_score,
        pass_rate=summary.pass_rate,
        cost_total=summary.cost.total,
        cost_per_case=summary.cost.per_case,
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
        "wilson": ShownInterval(flaky.pass_rate[i], *flaky.wilson[i]), "pass_at_k": flaky.pass_at_k[i],
        "pass_hat_k": flaky.pass_hat_k[i]} for i in flaky.flaky_items]
    k = flaky.k if flaky else 0
    flaky_table = Table("flaky", [
        Column("item", "item", "code", download="item_id"), Column("runs", "repeats", "count"), Column("passed", "passed", "count"),
        Column("wilson", "pass rate", "interval", "with its 95% Wilson interval", download="pass_rate", bounds=("wilson_low", "wilson_high")),
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


def flatten(value: object, prefix: str = "") -> list[tuple[str, str]]:
    """Nested mappings as (dotted key, JSON text) pairs, sorted by key."""
    if isinstance(value, dict) and value:
        pairs = []
        for key in sorted(value, key=str):
            pairs += flatten(value[key], f"{prefix}.{key}" if prefix else str(key))
        return pairs
    return [(prefix, value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False, default=str))]
