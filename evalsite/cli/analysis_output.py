"""Text output of the analysis commands: every figure with the method and the kind of p behind it."""

from __future__ import annotations

import math
from typing import Any

import click

from evalsite.analysis import (
    BootstrapReport,
    FamilyTest,
    HoldoutReport,
    Leaderboard,
    NoiseReport,
    StabilityReport,
)
from evalsite.analysis.family import FamilyComparison
from evalsite.analysis.items import DroppedItem
from evalsite.analysis.leaderboard import stability_sentence
from evalsite.analysis.selection import LeftOut
from evalsite.analysis.verdict import Metric, Verdict, detectable_phrase, level_text
from evalsite.analysis.wording import count_of, p_clause, p_text
from evalsite.cli.fit import Fit, Shrink
from evalsite.cli.output import print_table
from evalsite.errors import listed
from evalsite.runlog.money import format_usd
from evalsite.runlog.records import RunStatus
from evalsite.stats import Interval, SignFlipResult

SHOWN_DROPPED = 10
#: Below this many units the normal approximation of the power figures is optimistic.
SMALL_N = 30
POWER_CAVEAT = (
    "approximate below ~30 units (the sign-flip test is discrete): a stated 80% measured 76-78% at 10-30 units "
    "(seeded simulation, docs/reference/statistics.md)"
)


def _table(rows: list[dict[str, Any]], fit: Fit | None = None) -> None:
    """Rows of already formatted cells, columns in the order of the first row's keys."""
    print_table(rows, list(rows[0]), fit)


#: What a narrow terminal hides first (evalsite.cli.fit): the rank, group, arm, mean and interval stay.
LEADERBOARD_FIT = Fit(
    drop=("run", "mean rank", "p95 ms", "cost/correct", "noise σ", "p50 ms", "errors", "pass rate", "cost/case"),
    shrink=(Shrink("rank", 3), Shrink("arm", 8, middle=True)), wrap=False,
)
#: A pair keeps its difference, Holm p and verdict; its interval goes last.
PAIRS_FIT = Fit(drop=("raw 95% CI", "p", "Holm-level CI"), shrink=(Shrink("pair", 15, middle=True),))


def number(value: float | None, digits: int = 3) -> str:
    return "—" if value is None or math.isnan(value) else f"{value:.{digits}f}"


def usd(value: float | None) -> str:
    return "unknown" if value is None else format_usd(value)


def interval(ci: Interval | None) -> str:
    if ci is None:
        return "—"
    if math.isnan(ci.low):
        return "undefined"
    return f"[{ci.low:.3f}, {ci.high:.3f}]"


def _scored_by(evaluator: str | None, evaluators: dict[str, str | None]) -> str:
    """What the scores are: one evaluator's, or the case score combining every evaluator."""
    if evaluator:
        return f"score: evaluator {evaluator} {evaluators.get(evaluator)}"
    versions = ", ".join(f"{name} {version}" for name, version in evaluators.items())
    return f"score: the case score ({versions})"


def _dropped(dropped: tuple[DroppedItem, ...]) -> None:
    if not dropped:
        return
    click.echo(f"items left out ({len(dropped)}): {listed([f'{d.item_id} ({d.reason})' for d in dropped], SHOWN_DROPPED)}")


def _left_out(left_out: tuple[LeftOut, ...]) -> None:
    if not left_out:
        click.echo("runs left out: none")
        return
    click.echo(f"runs left out ({len(left_out)}):")
    _table([{"run": r.run_id, "arm": r.arm_id, "reason": r.reason} for r in left_out], Fit(drop=("arm",)))


def leaderboard(board: Leaderboard) -> None:
    selection = board.selection
    verdict = board.verdict
    click.echo(f"leaderboard · dataset {selection.dataset_id} · {_scored_by(board.evaluator, selection.evaluators)}")
    click.echo(f"{len(board.arms)} arm{'s' * (len(board.arms) != 1)} · {board.n_items} items scored in every arm"
               + _unit_note(verdict))
    _dropped(board.dropped)
    confidence = board.arms[0].interval.confidence
    statistic = _statistic_name(verdict.metric)
    rows = [
        {
            "rank": arm.rank_text, "group": arm.letters, "arm": arm.label, statistic: number(arm.value),
            f"{confidence:.0%} CI": interval(arm.interval), "pass rate": number(arm.summary.pass_rate),
            "cost/case": usd(arm.summary.cost.per_case), "cost/correct": usd(arm.summary.cost.per_correct),
            "p50 ms": number(arm.summary.latency.p50_ms, 1), "p95 ms": number(arm.summary.latency.p95_ms, 1),
            "noise σ": number(arm.summary.noise.std) if arm.summary.noise else "—",
            "errors": "—" if arm.errors is None else str(arm.errors),
            "mean rank": number(arm.mean_rank, 2), "run": arm.summary.arm.run_id,
        }
        for arm in board.arms
    ]
    click.echo()
    _table(rows, LEADERBOARD_FIT)
    click.echo()
    click.echo(f"verdict: {verdict.headline}")
    _pairs(verdict)
    _omnibus(verdict)
    if board.stability is not None:
        click.echo(f"rank stability: {stability_sentence(board.stability, [arm.label for arm in selection.arms])}")
    click.echo(
        f"order: by {statistic} ({verdict.metric.direction}; direction from {verdict.metric.direction_from}) · groups: "
        f"arms sharing a letter are not separated by the paired tests · intervals: {_interval_method(board)} "
        f"bootstrap over {verdict.unit}s, seed {board.seed} · noise σ: spread of per-repeat means over the items in every "
        "repeat · cost: USD over the compared cases, unknown when any case's cost is · latency: nearest rank · errors: "
        "the run's cases that failed to generate (scored 0)"
    )
    click.echo()
    _left_out(selection.left_out)


def _interval_method(board: Leaderboard) -> str:
    """The bootstrap the intervals used, named by an arm whose data was not degenerate."""
    methods = [arm.interval.method for arm in board.arms]
    return next((m for m in methods if not m.startswith(("degenerate", "undefined"))), methods[0])


def _statistic_name(metric: Metric) -> str:
    return "mean" if metric.name == "score" else f"mean {metric.name}"


def _unit_note(verdict: Verdict) -> str:
    return "" if verdict.unit == "item" else f" · unit: cluster ({verdict.n_units} clusters; tests flip and intervals resample whole clusters)"


def _pairs(verdict: Verdict) -> None:
    """Every pair's paired difference with its interval and Holm-adjusted p."""
    if not verdict.pairs:
        return
    test = f"paired sign-flip over {verdict.unit}s" if verdict.stopped is None else "anytime-valid confidence sequences"
    click.echo(f"pairs ({test}, {verdict.correction}, α = {verdict.alpha}):")
    _table([
        {"pair": f"{p.ahead_label} − {p.behind_label}", "Δ": f"{p.difference.mean_diff:+.3f}",
         "Holm-level CI": f"{interval(p.interval)} at {level_text(p.interval)}",
         f"raw {p.difference.interval.confidence:.0%} CI": interval(p.difference.interval),
         "p": p_text(p.difference.p_value), "Holm p": p_text(p.holm_p),
         "verdict": "separated" if p.separated else detectable_phrase(p)}
        for p in verdict.pairs
    ], PAIRS_FIT)


def _omnibus(verdict: Verdict) -> None:
    click.echo(verdict.omnibus)
    f, n = verdict.friedman, verdict.nemenyi
    if f is None or n is None or verdict.stopped is not None:
        return
    click.echo(
        f"  Friedman χ² = {f.statistic:.3f} (tie-corrected), permutation {p_clause(f.p_value)} (Monte Carlo over "
        f"{f.n_resamples:,} within-item shuffles, seed {f.seed}, ± {f.std_error:.2g}); asymptotic χ² {p_clause(f.p_value_chi2)}"
    )
    if f.p_value < verdict.alpha:
        click.echo(
            f"  {n.method}: critical difference {n.critical_difference:.3f} in mean rank at α = {n.alpha} "
            "(the critical-difference picture; the order and groups come from the paired tests)"
        )
    else:
        click.echo("  no critical-difference picture: Friedman does not reject, so Nemenyi's post-hoc is not read")
    if verdict.agreement:
        click.echo(f"  {verdict.agreement}")


def _sign_flip_kind(test: SignFlipResult) -> str:
    if test.kind == "exact":
        return f"exact ({test.method})"
    return f"monte-carlo ({test.n_resamples:,} draws, ± {test.std_error:.2g})"


def family(report: FamilyTest) -> None:
    run = report.run
    m = len(report.comparisons)
    click.echo(f"family-test · {run.label} ({run.run_id}) vs {count_of(m, 'run')} · α = {report.alpha} · {report.correction}")
    click.echo(_scored_by(report.evaluator, run.evaluators))
    for arm in (run, *(c.other for c in report.comparisons)):
        if arm.status != RunStatus.COMPLETED:
            click.echo(f"note: run {arm.run_id} is {arm.status}; its numbers may still change")
    rows = [
        {
            "vs": c.other.label, "items": c.n_items, "mean": number(c.mean), "other": number(c.other_mean),
            "Δ": f"{c.mean_diff:+.3f}", "Holm-level CI": f"{interval(c.interval)} at {level_text(c.interval)}",
            "raw 95% CI": interval(c.raw_interval),
            "sign-flip p": p_text(c.sign_flip.p_value), "kind": _sign_flip_kind(c.sign_flip),
            "Holm p": p_text(c.holm_p), "McNemar p": p_text(c.mcnemar.p_value) if c.mcnemar else "—",
            "McNemar Holm p": p_text(c.mcnemar_holm_p), "noise": _noise_label(c.noise, c.noise_p, c.within_noise, report.alpha),
            "verdict": c.verdict,
        }
        for c in report.comparisons
    ]
    click.echo()
    _table(rows)
    _family_groups(report)
    click.echo()
    click.echo(
        "sign-flip: two-sided paired randomisation test on per-item means over repeats; McNemar: exact binomial test "
        "on discordant pass/fail items (an item passes when every repeat passed, so with repeats McNemar compares how "
        "reliably items pass, not the mean; the verdict reads the sign-flip test)"
    )
    click.echo(
        f"power: calibrated on the two-sided sign-flip test over {report.comparisons[0].unit}s at α/m = {report.power_alpha:.4g} (Holm's strictest step), "
        f"power {report.power}" + (f"; {POWER_CAVEAT}" if any(c.n_units < SMALL_N for c in report.comparisons) else "")
    )
    for c in report.comparisons:
        detectable = f"no effect (too few {c.unit}s)" if math.isinf(c.detectable.effect) else f"|Δ| ≥ {c.detectable.effect:.3f}"
        needed = "" if c.needed is None else f"; |Δ| = {report.effect} needs {_units_text(c.needed.n, c)}"
        click.echo(f"  vs {c.other.label}: {_units_text(c.n_units, c)} detect {detectable}{needed}")
    for note in sorted({c.mcnemar_note for c in report.comparisons if c.mcnemar_note}):
        click.echo(note)
    dropped = [c for c in report.comparisons if c.dropped]
    for c in dropped:
        click.echo(f"vs {c.other.label}: {c.dropped} items not scored in both runs were left out")


def _units_text(n: int, c: FamilyComparison) -> str:
    """"80 items", or "12 clusters (~96 items)" when the comparison flips clusters."""
    if c.unit == "item":
        return count_of(n, "item")
    return f"{count_of(n, 'cluster')} (~{round(n * c.n_items / c.n_units)} items)"


def _family_groups(report: FamilyTest) -> None:
    """The groups over every pair of the runs, and each comparison the declared family decides otherwise."""
    groups = ", ".join(f"{place.label} {place.letters}" for place in report.arms)
    click.echo(f"\ngroups (letters from every pair of these runs, the leaderboard's family): {groups}")
    for c in report.comparisons:
        if (c.holm_p < report.alpha) != c.all_pairs_separated:
            word = "separated" if c.all_pairs_separated else "not separated"
            click.echo(f"note: over every pair of these runs {report.run.label} and {c.other.label} are {word} "
                       f"({p_clause(c.all_pairs_holm_p, 'Holm p')}); the declared family is smaller, so Holm corrects less")


def _noise_label(noise: float | None, noise_p: float | None, within: bool | None, alpha: float) -> str:
    """Δ against the repeat spread σ: "beyond" only when the noise test itself rejects, never for a
    noise p of 0.89 beside a paired test that separates the pair."""
    if noise is None:
        return "unknown"
    spread = f"σ {noise:.3f} ({p_clause(noise_p)})"
    if within:
        return f"within {spread}"
    if noise_p is not None and noise_p < alpha:
        return f"beyond {spread}"
    return f"{spread}: not noise by the paired test, though the spread alone would not separate Δ"


def bootstrap(report: BootstrapReport) -> None:
    run = report.run
    click.echo(
        f"bootstrap · {run.label} ({run.run_id}) · {report.n_items} items × {report.n_repeats} repeat"
        f"{'s' * (report.n_repeats != 1)} · {_scored_by(report.evaluator, run.evaluators)}"
    )
    clusters = f" ({report.clusters} clusters of metadata.{report.group_key})" if report.clusters is not None else ""
    click.echo(f"resampled: {report.resampled}{clusters} — {report.why}")
    _dropped(report.dropped)
    rows = [
        {"statistic": name, "value": number(estimate.value), f"{report.confidence:.0%} interval": interval(estimate.interval),
         "method": estimate.interval.method}
        for name, estimate in (("mean", report.mean), ("pass rate", report.pass_rate)) if estimate is not None
    ]
    click.echo()
    _table(rows)
    click.echo()
    click.echo(f"{report.n_resamples:,} resamples, seed {report.seed}" + ("" if report.pass_rate else "; no pass rule, so no pass rate"))


def stability(report: StabilityReport) -> None:
    s = report.stability
    click.echo(
        f"rank stability · dataset {report.selection.dataset_id} · {len(report.labels)} arms · {report.n_items} items · "
        f"{s.n_resamples:,} bootstrap samples of {s.unit}s per size (with replacement), seed {s.seed}"
    )
    _dropped(report.dropped)
    click.echo(f"verdict: {report.verdict.headline}")
    click.echo("only the pairs the paired tests separate are checked: a gap they cannot tell from chance has no stable order")
    if s.pairs:
        click.echo()
        size_column = f"{s.unit}s"
        columns = [(size_column, s.sizes), ("separated pairs kept", s.p_order)] + ([("top arm kept", s.p_top)] if s.p_top else [])
        _table([{name: (value if name == size_column else number(value)) for name, value in zip([c for c, _ in columns], row)}
                for row in zip(*[values for _, values in columns])])
    click.echo()
    click.echo(stability_sentence(s, report.labels))
    click.echo(f"\nraw bootstrap ranks ({s.level:.0%} of bootstrap samples over {s.unit}s at full size; 1 = best): not a "
               "test, and may be narrower than the places where the paired tests do not separate arms; the rank column is the "
               "verdict's places")
    _table([{"rank": place.rank_text, "arm": place.label, _statistic_name(report.verdict.metric): number(place.value),
             "raw bootstrap ranks": _rank_interval(s.rank_intervals[place.arm])} for place in report.arms])
    click.echo()
    _left_out(report.selection.left_out)


def _rank_interval(bounds: tuple[float, float]) -> str:
    low, high = (f"{b:g}" for b in bounds)
    return low if low == high else f"{low}–{high}"


def noise(report: NoiseReport, all_items: bool) -> None:
    run = report.run
    click.echo(f"noise · {run.label} ({run.run_id}) · {report.n_items} items × {report.n_repeats} repeats · {_scored_by(report.evaluator, run.evaluators)}")
    _dropped(report.dropped)
    if report.noise is None:
        click.echo("one repeat: the run-to-run spread cannot be measured; rerun with --repeat N (N ≥ 2)")
    else:
        means = ", ".join(number(m) for m in report.noise.repeat_means)
        left_out = report.noise.items_left_out
        click.echo(
            f"repeat means: {means} → run-to-run spread σ = {number(report.noise.std)} ({report.noise.method}: "
            f"{report.noise.n_items} items" + (f"; {left_out} lacking a repeat left out" if left_out else "") + ")"
        )
        click.echo("compare and family-test test a difference against this spread (a t-test of per-repeat means at α)")
    if report.k is None:
        click.echo("no pass rule: pass/fail flakiness does not apply")
        return
    flaky = report.flaky_items
    click.echo(f"flaky items (passed in some repeats, failed in others): {len(flaky)} of {report.n_items}")
    click.echo(
        f"pass@{report.k} = {number(report.mean_pass_at_k)}, pass^{report.k} = {number(report.mean_pass_hat_k)} "
        "(means over items of the unbiased per-item estimates)"
    )
    listed = report.items if all_items else flaky
    if listed:
        click.echo(f"\nper item: pass rate across repeats with its {report.confidence:.0%} Wilson score interval")
        columns = ["item", "runs", "passed", "pass rate", "Wilson interval", f"pass@{report.k}", f"pass^{report.k}"]
        _table([dict(zip(columns, (i.item_id, i.runs, i.passed, number(i.pass_rate),
                                   f"[{i.wilson[0]:.3f}, {i.wilson[1]:.3f}]", number(i.pass_at_k), number(i.pass_hat_k))))
                for i in listed])
    if not all_items:
        click.echo("\n(flaky items only; --all lists every item)")


def holdout(report: HoldoutReport) -> None:
    check = report.check
    click.echo(
        f"holdout · dataset {report.selection.dataset_id} · pilot: {report.pilot_items} items (metadata.split = "
        f"{report.pilot}) · holdout: {report.holdout_items} items (metadata.split = {report.holdout}) · "
        f"{report.other_items} in neither"
    )
    if report.split.stale:
        click.echo(f"{report.split.stale} items changed in {report.split.source} since the runs; their split is unknown")
    click.echo()
    _table([{"arm": label, "pilot mean": number(p), "holdout mean": number(h)}
            for label, p, h in zip(report.labels, check.pilot_means, check.holdout_means)])
    click.echo()
    click.echo(f"pilot order:   {' > '.join(report.labels[a] for a in check.pilot_order)}")
    click.echo(f"holdout order: {' > '.join(report.labels[a] for a in check.holdout_order)}")
    click.echo(
        f"order holds: {'yes' if check.order_holds else 'no'} · top holds: {'yes' if check.top_holds else 'no'} · "
        f"Kendall τ-b = {number(check.kendall_tau)} ({p_clause(check.kendall_p_value)}, scipy.stats.kendalltau: exact "
        f"for few arms without ties, else asymptotic) — {check.method}"
    )
    if not check.kendall_can_reach(0.05):
        click.echo(
            f"with {len(report.labels)} arms Kendall's test cannot reach p < 0.05 (even a perfect agreement gives "
            f"{p_clause(check.kendall_min_p)}); read the order, not the p-value"
        )
    click.echo()
    _left_out(report.selection.left_out)
