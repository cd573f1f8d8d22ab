"""Compare pages: ``compare/<run>--<baseline>.html``, a run against its resolved baseline (and any
pair listed in ``[site] compare``), built on :func:`evalsite.analysis.compare.compare_runs`.

The fingerprint diff comes first. Runs that may not be compared show the reason and nothing else;
otherwise the page shows the verdict bar, the mean Δ with its interval and p, dumbbells for the
items that changed most, what newly fails or passes per evaluator, and the items whose ground
truth changed or that only one run has, listed apart.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from functools import partial

from markupsafe import Markup

from evalsite.analysis.case_scan import ScannedCases
from evalsite.analysis.compare import ComparisonReport, compare_runs
from evalsite.analysis.item_changes import GT_CHANGED, IMPROVED, REGRESSED, UNCHANGED, ItemChanges
from evalsite.analysis.regression import RegressionReport
from evalsite.errors import RunLogError, SiteError, listed
from evalsite.forked import WorkerLost
from evalsite.runlog.store import resolve_run
from evalsite.site import charts, paths
from evalsite.site.casedata import data_script
from evalsite.site.inputs import ProjectInputs
from evalsite.site.pages import Kit, PageContext, PageJob, doc
from evalsite.site.settings import SiteSettings
from evalsite.site.tables import Column, Link, ShownInterval, Table

LISTED_IDS = 20
#: Changed items a compare page draws as HTML (the largest changes first); the others, and the
#: unchanged items, are data scripts of at most ROWS_PER_SCRIPT rows each, drawn on request.
SHOWN_CHANGES = 500
ROWS_PER_SCRIPT = 10_000


@dataclass(kw_only=True)
class CompareSummary:
    """The comparison's headline numbers (present only when the runs are comparable)."""

    verdict_bar: Markup = doc("Items improved / unchanged / regressed / ground truth changed, as one bar (inline SVG).")
    compared: int = doc("Items in both runs with a score on both sides.")
    improved: int = doc("Items whose mean score rose by more than the threshold.")
    regressed: int = doc("Items whose mean score fell by more than the threshold.")
    unchanged: int = doc("Items within the threshold.")
    gt_changed: int = doc("Items whose expected value changed and could not be re-scored (left out of every number).")
    rescored: int = doc("Items whose baseline output was re-scored against the current expected value.")
    threshold: float = doc("The per-item change that counts as improved or regressed.")
    baseline_mean: float | None = doc("Baseline mean over the compared items.")
    current_mean: float | None = doc("Current mean over the compared items.")
    mean_delta: ShownInterval = doc("Mean Δ (current − baseline) with its paired bootstrap interval.")
    confidence: float = doc("Confidence level of the interval.")
    p_value: float | None = doc("p of the paired sign-flip test.")
    test_kind: str | None = doc("'exact' or 'monte-carlo'.")
    noise: float | None = doc("The arm's own noise the Δ is held against, if known.")
    noise_source: str | None = doc("Where the noise figure came from.")
    within_noise: bool | None = doc("True when neither the noise test nor the paired test separates Δ at α: the change is noise.")
    gate_failed: bool = doc("True when `compare --fail-on regression` would fail.")
    gate_reasons: list[str] = doc("Why the gate fails (a significant regression, critical rows newly failing).")


@dataclass(kw_only=True)
class ComparePage(PageContext):
    """``compare/<run>--<baseline>.html``."""

    current: Link = doc("The run being judged.")
    baseline: Link = doc("The run it is compared against.")
    baseline_source: str = doc("How the baseline was chosen: explicit, promoted or prior.")
    promotion_reason: str | None = doc("The promotion's reason, when the baseline is a promoted run.")
    fingerprint_diff: Table = doc("Every fingerprint field that differs: path, baseline value, current value.")
    comparable: bool = doc("Whether the runs may be compared at all.")
    reason: str | None = doc("Why not, when they may not.")
    summary: CompareSummary | None = doc("The verdict, when comparable.")
    dumbbells: Markup = doc("Baseline → current score of the items that changed most (inline SVG).")
    dumbbell_note: str = doc("How many changed items the dumbbells show of how many.")
    items: Table | None = doc("The items that changed (linked to their item pages), largest change first: baseline, current, Δ, classification, re-scored; the first SHOWN_CHANGES are HTML rows (``items.shown``), all of them are in its downloads.")
    more_changed_rows: list[str] = doc("Site-root-relative paths of the data scripts listing the changed items beyond the HTML rows, drawn into the table when the reader asks for them.", default_factory=list)
    unchanged_rows: list[str] = doc("Site-root-relative paths of the data scripts listing the unchanged items, drawn into the table when the reader asks for them (empty when there are none).", default_factory=list)
    evaluators: Table | None = doc("Per evaluator: newly failing / passing, pass-rate, mean and error deltas.")
    apart: Table | None = doc("Items left out of the numbers: ground truth changed, only in one run, unscored.")
    critical_newly_failing: list[str] = doc("Critical rows that passed in the baseline and fail now.")
    later_baseline: bool = doc("True when the baseline started after the run (a pair listed in ``[site] compare``; resolved baselines are always older): the page says it is against a later baseline.", default=False)
    dataset_note: str | None = doc("When the dataset changed between the runs (same questions, edited expected values): what changed and why the baseline's mean here is not its run page's (its outputs re-scored against the current ground truth). None on one dataset version.", default=None)


def jobs(inputs: ProjectInputs, settings: SiteSettings) -> list[PageJob]:
    result = []
    for run_id, baseline_id in compared_pairs(inputs, settings):
        keys = ("decisions", *inputs.summary_keys([run_id, baseline_id]))
        result.append(PageJob(job_key(run_id, baseline_id), keys, _renderer(run_id, baseline_id)))
    return result


def compared_pairs(inputs: ProjectInputs, settings: SiteSettings) -> list[tuple[str, str]]:
    """(run, baseline) of every compare page: each completed run and its resolved baseline when that
    started before the run (:meth:`ProjectInputs.baseline_of`), then the pairs ``[site] compare``
    lists (both runs present; a later baseline is labelled so on its page)."""
    pairs: dict[tuple[str, str], None] = {}
    for run in inputs.runs:
        baseline = inputs.baseline_of(run.run_id)
        if baseline:
            pairs[(run.run_id, baseline)] = None
    for run_ref, baseline_ref in settings.compare:
        try:
            run_dir, baseline_dir = resolve_run(inputs.project.runs_dir, run_ref), resolve_run(inputs.project.runs_dir, baseline_ref)
        except RunLogError as exc:
            raise SiteError(f"evalsite.toml [site] compare: {exc.message}") from None
        pairs[(run_dir.name, baseline_dir.name)] = None
    return [(run_id, baseline_id) for run_id, baseline_id in pairs if run_id in inputs.by_id and baseline_id in inputs.by_id]


def job_key(run_id: str, baseline_id: str) -> str:
    return f"compare:{run_id}--{baseline_id}"


def comparison(inputs: ProjectInputs, run_id: str, baseline_id: str, current: ScannedCases | None = None,
               baseline: ScannedCases | None = None) -> ComparisonReport:
    """:func:`evalsite.analysis.compare.compare_runs` of a pair, once per build (the runs table reads
    its counts, the compare page everything); ``current``, ``baseline``: the runs' cases, when the
    build has them. A run's kept columns stand in for reading it (:meth:`ProjectInputs.kept_cases`)."""
    key = ("compare", run_id, baseline_id)
    if key not in inputs.memo:
        inputs.memo[key] = compare_runs(inputs.project, run_id, baseline=baseline_id, run_code=False,
                                        current_cases=current or inputs.kept_cases(run_id),
                                        baseline_cases=baseline or inputs.kept_cases(baseline_id))
    report: ComparisonReport = inputs.memo[key]
    return report


def compare_read_run(kit: Kit, run_id: str, cases: ScannedCases, stale: set[str], aside: Collection[str] = ()) -> None:
    """Compare a run the build has just read with each baseline a stale page shows it against (its
    compare pages; the runs table's change counts), from the cases in hand; a pair whose page renders
    in a child process (its job key in ``aside``: :func:`pages_aside`) is the child's."""
    for baseline_id in sorted(_read_run_baselines(kit, run_id, stale)):
        if job_key(run_id, baseline_id) not in aside:
            comparison(kit.inputs, run_id, baseline_id, cases)


def pages_aside(kit: Kit, run_id: str, cases: ScannedCases, stale: Mapping[str, PageJob]) -> list[tuple[PageJob, Callable[[], None]]]:
    """The stale compare pages of a run the build has just read (``cases``) that a child process may
    render (:func:`evalsite.site.build._render_aside`), each with what the child does first: the
    comparison, from the cases in hand and the baseline's kept columns (read by the child: the
    build forks without waiting for them), and, for the run's own baseline, the runs table's change
    counts (the child hands them back with the page). A child forked beside DuckDB's threads must
    never call DuckDB, so a pair whose baseline has no kept columns (its comparison would read the
    baseline's file) is left to the build, and so is one whose kept columns the child cannot read
    (it ends as a lost worker, :class:`~evalsite.forked.WorkerLost`: the build renders the page)."""
    found: list[tuple[PageJob, Callable[[], None]]] = []
    for baseline_id in sorted(_read_run_baselines(kit, run_id, set(stale))):
        job = stale.get(job_key(run_id, baseline_id))
        if job is not None and kit.inputs.has_kept_columns(baseline_id):
            found.append((job, partial(_compared_aside, kit, run_id, baseline_id, cases, "runs" in stale)))
    return found


def _compared_aside(kit: Kit, run_id: str, baseline_id: str, cases: ScannedCases, counts: bool) -> None:
    baseline = kit.inputs.kept_cases(baseline_id)
    if baseline is None:  # kept columns that cannot be read: the comparison would read the baseline's file
        raise WorkerLost(f"{baseline_id}: its kept case columns could not be read; the build compares it")
    comparison(kit.inputs, run_id, baseline_id, cases, baseline)
    if counts and baseline_id == kit.inputs.baseline_of(run_id):
        change_counts(kit, run_id, baseline_id)


def _read_run_baselines(kit: Kit, run_id: str, stale: set[str]) -> set[str]:
    """The baselines a run the build reads is compared with: those of its stale compare pages, and
    its own baseline when the runs table shows change counts it has not kept."""
    baselines = {baseline for current, baseline in compared_pairs(kit.inputs, kit.settings)
                 if current == run_id and job_key(current, baseline) in stale}
    baseline = kit.inputs.baseline_of(run_id)
    if baseline and "runs" in stale and _pair_key(kit, run_id, baseline) not in kit.pair_counts.values:
        baselines.add(baseline)
    return baselines


def change_counts(kit: Kit, run_id: str, baseline_id: str) -> tuple[int, int, int] | None:
    """Items improved, regressed and unchanged against the baseline (None when the runs may not be
    compared); kept in the site cache by the hash of both runs' inputs, so the runs table of a later
    build compares only the pairs it has not seen."""
    def counts() -> list[int] | None:
        regression = comparison(kit.inputs, run_id, baseline_id).regression
        if regression is None:
            return None
        summary = regression.summary
        return [summary.improved, summary.regressed, summary.unchanged]

    found = kit.pair_counts.get(_pair_key(kit, run_id, baseline_id), counts)
    return None if found is None else (found[0], found[1], found[2])


def _pair_key(kit: Kit, run_id: str, baseline_id: str) -> str:
    return kit.inputs.combined_hash(list(kit.inputs.summary_keys([run_id, baseline_id])))


def _renderer(run_id: str, baseline_id: str) -> Callable[[Kit], dict[str, bytes]]:
    def render(kit: Kit) -> dict[str, bytes]:
        report = comparison(kit.inputs, run_id, baseline_id)
        if report.baseline_source == "explicit" and report.promotion is None:
            source = _source(kit.inputs, run_id, baseline_id)
        else:
            source = report.baseline_source
        path = paths.compare(run_id, baseline_id)
        dataset_id = kit.inputs.by_id[run_id].header.dataset.dataset_id
        page = compare_page(report, source, kit.settings, dataset_id)
        if kit.inputs.later(baseline_id, run_id):
            page.later_baseline, page.title = True, f"{run_id} against a later baseline, {baseline_id}"
        files: dict[str, bytes] = {}
        if report.regression is not None:
            items = report.regression.items
            changed = _changed(items).take(slice(SHOWN_CHANGES, None))
            page.more_changed_rows = _data_scripts(files, run_id, baseline_id, "changed", changed, dataset_id)
            page.unchanged_rows = _data_scripts(files, run_id, baseline_id, "unchanged", items.of(UNCHANGED), dataset_id)
        return {**files, **kit.page(path, "compare.html", page)}

    return render


def _changed(items: ItemChanges) -> ItemChanges:
    """The improved and regressed items by the size of their change, largest first (natural item order among equals)."""
    return items.of(IMPROVED, REGRESSED).largest_first()


def _data_scripts(files: dict[str, bytes], run_id: str, baseline_id: str, kind: str, changes: ItemChanges,
                  dataset_id: str | None) -> list[str]:
    """Write ``changes`` as data scripts of at most ROWS_PER_SCRIPT rows into ``files``; their paths."""
    written = []
    for part, start in enumerate(range(0, len(changes), ROWS_PER_SCRIPT)):
        key = paths.compare_data(run_id, baseline_id, f"{kind}-{part}")
        ids, baseline, current, delta, classification, rescored, _ = changes.take(slice(start, start + ROWS_PER_SCRIPT)).columns()
        links = paths.items(dataset_id, ids) if dataset_id else [None] * len(ids)
        rows = [[item, link, b, c, d, int(r), k]
                for item, link, b, c, d, r, k in zip(ids, links, baseline, current, delta, rescored, classification)]
        files[key] = data_script(key, rows)
        written.append(key)
    return written


def _source(inputs: ProjectInputs, run_id: str, baseline_id: str) -> str:
    """Say how `evalsite compare` would have chosen this baseline (promoted, prior), else 'explicit'."""
    choice = inputs.baseline_choice(run_id)
    return choice.source if choice.directory is not None and choice.directory.name == baseline_id else "explicit"


def compare_page(report: ComparisonReport, source: str, settings: SiteSettings, dataset_id: str | None = None) -> ComparePage:
    """The page of a pair the site compares: both runs exist and their comparability was decided."""
    verdict, regression, baseline = report.comparability, report.regression, report.baseline
    if verdict is None or baseline is None:
        raise SiteError(f"{report.current.run_id}: no baseline to compare with")
    diff_rows = [{"field": d.path, "baseline": _text(d.old), "current": _text(d.new)} for d in verdict.differences]
    page = ComparePage(
        title=f"{report.current.run_id} against {baseline.run_id}",
        current=Link(report.current.run_id, paths.run(report.current.run_id)),
        baseline=Link(baseline.run_id, paths.run(baseline.run_id)),
        baseline_source=source,
        promotion_reason=report.promotion.reason if report.promotion else None,
        fingerprint_diff=Table("fingerprint-diff", [Column("field", "field", "code"), Column("baseline", "baseline", "code"),
                                                    Column("current", "current", "code")], diff_rows, sortable=False),
        comparable=verdict.comparable,
        reason=verdict.reason,
        summary=None, dumbbells=Markup(""), dumbbell_note="", items=None, evaluators=None, apart=None,
        critical_newly_failing=[], dataset_note=report.dataset_note,
    )
    if not verdict.comparable or regression is None:
        return page
    page.summary = _summary(report, regression)
    page.dumbbells, page.dumbbell_note = _dumbbells(regression, settings.dumbbells)
    ids, before, after, delta, classification, rescored, _ = _changed(regression.items).columns()
    shown = _item_links(dataset_id, ids[:SHOWN_CHANGES]) + ids[SHOWN_CHANGES:]  # the downloads write a link's text
    page.items = Table("items", [
        Column("item", "item", "code", download="item_id"), Column("baseline", "baseline", "number", download="baseline_score"),
        Column("current", "current", "number", download="score"),
        Column("delta", "Δ", "number"), Column("classification", "change", "status"), Column("rescored", "re-scored"),
    ], [{"item": item, "baseline": b, "current": c, "delta": d, "classification": k, "rescored": r, "_class": f"change-{k}"}
        for item, b, c, d, k, r in zip(shown, before, after, delta, classification, rescored)],
        shown=SHOWN_CHANGES)
    page.evaluators = Table("evaluators", [
        Column("evaluator", "evaluator"), Column("newly_failing", "newly failing", "count"),
        Column("newly_passing", "newly passing", "count"), Column("still_failing", "still failing", "count"),
        Column("pass_rate_delta", "pass rate Δ", "percent"), Column("mean_delta", "mean Δ", "number"),
        Column("error_delta", "errors Δ", "count"), Column("failing_ids", "newly failing items", "code"),
    ], [{"evaluator": e.evaluator, "newly_failing": len(e.newly_failing), "newly_passing": len(e.newly_passing),
         "still_failing": len(e.still_failing), "pass_rate_delta": e.pass_rate_delta, "mean_delta": e.mean_delta,
         "error_delta": e.error_delta, "failing_ids": listed(e.newly_failing, LISTED_IDS)} for e in regression.evaluators])
    apart = [{"item": c.item_id, "why": f"ground truth changed: {c.note}" if c.note else "ground truth changed"}
             for c in regression.items.of(GT_CHANGED)]
    apart += [{"item": i, "why": "only in the baseline"} for i in regression.only_in_baseline]
    apart += [{"item": i, "why": "only in the current run"} for i in regression.only_in_current]
    apart += [{"item": i, "why": "unscored on one side"} for i in regression.unscored]
    page.apart = Table("apart", [Column("item", "item", "code"), Column("why", "left out because")], apart)
    page.critical_newly_failing = list(regression.critical_newly_failing)
    return page


def _summary(report: ComparisonReport, regression: RegressionReport) -> CompareSummary:
    summary, gate = regression.summary, report.gate
    counts = [(IMPROVED, summary.improved), (UNCHANGED, summary.unchanged), (REGRESSED, summary.regressed),
              (GT_CHANGED, summary.gt_changed)]
    return CompareSummary(
        verdict_bar=charts.verdict_bar(counts, title="Items improved, unchanged, regressed"),
        compared=summary.compared, improved=summary.improved, regressed=summary.regressed,
        unchanged=summary.unchanged, gt_changed=summary.gt_changed, rescored=summary.rescored,
        threshold=regression.threshold, baseline_mean=summary.baseline_mean, current_mean=summary.current_mean,
        mean_delta=ShownInterval(summary.mean_delta, summary.ci_low, summary.ci_high), confidence=summary.confidence,
        p_value=summary.p_value, test_kind=summary.test_kind, noise=summary.noise, noise_source=summary.noise_source,
        within_noise=summary.within_noise, gate_failed=bool(gate and gate.failed), gate_reasons=list(gate.reasons) if gate else [],
    )


def _dumbbells(regression: RegressionReport, limit: int) -> tuple[Markup, str]:
    changed = regression.items.of(IMPROVED, REGRESSED)
    changed = changed.take(changed.delta != 0)  # a change beyond the threshold always has a Δ
    shown = list(changed.largest(limit))
    if not shown:
        return Markup(""), "No item changed by more than the threshold."
    rows = [(c.item_id, c.baseline_score, c.current_score) for c in shown  # a delta means both scores are known
            if c.baseline_score is not None and c.current_score is not None]
    note = f"The {len(shown)} largest of {len(changed)} changed items." if len(changed) > len(shown) else ""
    return charts.dumbbells(rows, x_label="item score: baseline (open) → current (filled)", title="Items that changed"), note


def _item_links(dataset_id: str | None, item_ids: list[str]) -> list[Link | str]:
    return list(map(Link, item_ids, paths.items(dataset_id, item_ids))) if dataset_id else list(item_ids)


def _text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
