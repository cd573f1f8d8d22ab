"""Dataset leaderboards: ``datasets/<dataset_id>.html``.

The figures come from :mod:`evalsite.analysis` (``comparable_groups``, ``item_matrix``,
``leaderboard_of``; once per group and build, :meth:`ProjectInputs.leaderboard`), so a leaderboard
here is the one ``evalsite leaderboard`` prints. Only runs the analysis layer finds comparable are
compared; each such group gets its own leaderboard, and every run left out is listed with the
reason. Every figure of an arm is its verdict's (:class:`~evalsite.analysis.verdict.ArmPlace`):
its mean and interval, its places (a rank range such as ``2–3`` where the paired tests do not
separate it), its letters; the legend names the test and correction the verdict used. Friedman
and Nemenyi stay as the omnibus test and, only when Friedman rejects, the critical-difference
diagram (:mod:`evalsite.analysis.critical_difference`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from evalsite.analysis import Leaderboard as Board
from evalsite.analysis import RankedArm, Selection, comparable_groups
from evalsite.analysis.critical_difference import critical_difference_picture
from evalsite.analysis.dataset_versions import OLDER
from evalsite.analysis.leaderboard import stability_sentence
from evalsite.analysis.verdict import Verdict, detectable_phrase, level_text
from evalsite.errors import EvalsiteError
from evalsite.runlog.store import Run
from evalsite.site import charts, paths
from evalsite.site.inputs import ProjectInputs
from evalsite.site.pages import Kit, PageContext, PageJob, doc
from evalsite.site.pages.common import experiment_link, run_link, runs_by, runs_table
from evalsite.site.settings import SiteSettings
from evalsite.site.tables import Bounds, Column, Link, ShownInterval, Table

CONFIDENCE = 0.95


@dataclass(kw_only=True)
class Ranking:
    """The tests behind the order of a leaderboard (present when at least two arms share two or more items)."""

    headline: str = doc("The verdict in one sentence (the paired tests, Holm-corrected): what a reviewer can quote.")
    pairs: Table = doc("Every pair's paired difference with its interval, raw and Holm p, and whether the tests separate it.")
    omnibus: str = doc("The Friedman omnibus test in words.")
    agreement: str = doc("When the mean-rank tests disagree with the paired tests: which one the order follows and why.")
    items: int = doc("Items every arm of the group scored (the tests use only these).")
    friedman_statistic: float = doc("Friedman chi-square (tie-corrected).")
    friedman_p: float = doc("Friedman permutation p-value (items' arms shuffled within item, seeded).")
    friedman_resamples: int = doc("Permutations behind friedman_p.")
    differ: bool = doc("True when friedman_p < 0.05: the arms are not all alike.")
    critical_difference: float = doc("Nemenyi critical difference of mean ranks at alpha 0.05.")
    strict_order: bool = doc("True when the paired tests separate every arm from every other (a strict order is supported).")
    cd_diagram: Markup = doc("Critical-difference diagram (inline SVG), drawn only when Friedman rejects; empty otherwise.")
    cd_note: str = doc("Why there is no critical-difference diagram, when there is none.", "")
    stability: str = doc("Rank stability in words: how many items the separated pairs need against how many there are.")
    stability_table: Table = doc("Share of bootstrap samples (by size) that keep every separated pair, and the top arm ahead.")


@dataclass(kw_only=True)
class LeaderboardSection:
    """One group of comparable runs."""

    number: int = doc("1 for the group with the newest run, 2 for the next…")
    comparable: str = doc("What the group's runs share: the dataset and the evaluator versions.")
    arms: Table = doc("One row per arm in the verdict's order: its places, run, mean with the verdict's interval, letters, pass rate, costs, latency percentiles.")
    ranking: Ranking | None = doc("Friedman/Nemenyi/rank stability; None with fewer than two arms or items in common.")
    ranking_note: str = doc("Why there is no ranking, when there is none.")
    intervals: Markup = doc("Forest plot of every arm's mean and interval (inline SVG).")
    scatter: Markup = doc("Quality against cost per case with the Pareto frontier (inline SVG); empty when no arm has a known cost.")
    scatter_note: str = doc("Which arms the scatter leaves out (unknown cost).")


@dataclass(kw_only=True)
class DatasetPage(PageContext):
    """``datasets/<dataset_id>.html``."""

    dataset_id: str = doc("The dataset's content id (<name>@<hash>); one changed byte is a new dataset.")
    paths: list[str] = doc("The dataset file(s) its runs name.")
    items: int | None = doc("Items in the dataset (from the newest run).")
    leaderboards: list[LeaderboardSection] = doc("One leaderboard per comparable group, newest first.")
    left_out: Table = doc("Runs on this dataset that no leaderboard uses, with the reason.")
    runs: Table = doc("Every run on this dataset, newest first (excluded runs left out; runs.html lists them, marked).")
    items_href: str = doc("Site-root-relative link to the dataset's item index (each item with every run's answers).", "")
    dataset_version: str = doc("Which version of its file this dataset is: 'current version of data/x.jsonl' (its hash matches the file now) or 'older version of data/x.jsonl (the file has changed since)'.", "")
    current: bool = doc("False when the dataset is an older version of its file.", True)


def jobs(inputs: ProjectInputs, settings: SiteSettings) -> list[PageJob]:
    versions = inputs.dataset_versions  # the file's version now is part of the page's key
    return [
        PageJob(f"dataset:{dataset_id}", ("decisions", *inputs.summary_keys([r.run_id for r in members])),  # exclusions
            _renderer(dataset_id, members), figures=tuple(r.run_id for r in members),
            variant=versions.of(members[0].header.dataset).state)
        for dataset_id, members in runs_by(inputs.runs, lambda run: run.header.dataset.dataset_id).items()
    ]


def _renderer(dataset_id: str, members: list[Run]) -> Callable[[Kit], dict[str, bytes]]:
    def render(kit: Kit) -> dict[str, bytes]:
        page_path = paths.dataset(dataset_id)
        found = comparable_groups(kit.inputs.database, dataset_id, only_runs={r.run_id for r in members})
        newest = max(members, key=lambda r: r.recency)
        context = DatasetPage(
            title=f"Dataset {dataset_id}",
            dataset_id=dataset_id,
            paths=sorted({r.header.dataset.path for r in members if r.header.dataset.path}),
            items=newest.header.dataset.items,
            leaderboards=[leaderboard(number, group, kit.inputs, page_path)
                          for number, group in enumerate(found.groups, start=1)],
            left_out=Table("left-out", [Column("run", "run", "code"), Column("arm", "arm"), Column("reason", "reason")],
                           [{"run": run_link(kit.inputs.by_id[item.run_id]), "arm": item.arm_id, "reason": item.reason}
                            for item in found.left_out]),
            runs=runs_table("runs", kit.inputs.listed(members), kit.figures),  # excluded runs: their page and runs.html
            items_href=paths.items_index(dataset_id),
        )
        version = kit.inputs.dataset_versions.of(newest.header.dataset)
        context.dataset_version, context.current = version.label, version.state != OLDER
        return kit.page(page_path, "dataset.html", context)

    return render


def leaderboard(number: int, selection: Selection, inputs: ProjectInputs, page_path: str) -> LeaderboardSection:
    """One group's leaderboard, as :func:`evalsite.analysis.leaderboard_of` computes it."""
    comparable = describe(selection)
    try:
        board = inputs.leaderboard(selection)
    except EvalsiteError as exc:
        return LeaderboardSection(number=number, comparable=comparable, arms=Table(f"leaderboard-{number}", arm_columns(None), []),
                           ranking=None, ranking_note=f"No leaderboard: {exc.message}.", intervals=Markup(""),
                           scatter=Markup(""), scatter_note="")
    rows = [_arm_row(arm, inputs.by_id[arm.summary.arm.run_id], leader_delta(board, place))
            for place, arm in enumerate(board.arms)]
    forest = charts.interval_bars(
        [charts.Point(arm.label, arm.value, arm.value, *bounds(arm.interval)) for arm in board.arms],
        x_label=f"mean score with {CONFIDENCE:.0%} bootstrap interval over {board.verdict.unit}s", title="Mean score per arm")
    scatter, scatter_note = _scatter(board, page_path)
    ranking, note = _ranking(board, number)
    return LeaderboardSection(
        number=number,
        comparable=comparable,
        arms=Table(f"leaderboard-{number}", arm_columns(board.verdict), rows, legend=True),
        ranking=ranking,
        ranking_note=note,
        intervals=forest,
        scatter=scatter,
        scatter_note=scatter_note,
    )


def describe(selection: Selection) -> str:
    """What a group's runs share: the dataset and the evaluator versions."""
    evaluators = ", ".join(f"{name} {version}" for name, version in sorted(selection.evaluators.items()))
    return f"dataset {selection.dataset_id}; evaluators {evaluators}"


def arm_columns(verdict: Verdict | None) -> list[Column]:
    """The leaderboard's columns; the legend of the rank, interval and group columns names what the
    verdict used (its unit and its correction). The verdict's columns come first (rank, arm, mean
    and interval, group), so a phone shows them before the table scrolls."""
    unit = verdict.unit if verdict is not None else "item"
    tests = (f"the paired sign-flip tests over {unit}s, {verdict.correction}, α = {verdict.alpha}"
             if verdict is not None else "the paired sign-flip tests")
    return [
        Column("rank", "rank", download="rank_range", help=f"the places the arm can hold: a range (2–3) when {tests} do not separate it from the arms it could swap with"),
        Column("arm", "arm", help="the arm; links to the run that stands for it"),
        Column("mean", "mean score", "interval", f"mean of per-item means, {CONFIDENCE:.0%} BCa bootstrap interval over {unit}s",
               download="value", bounds=("ci_low", "ci_high")),
        Column("group", "group", help=f"arms sharing a letter are not separated by {tests}"),
        Column("delta", "Δ leader", "number", "mean score minus the first arm's, over the same items (the paired mean difference)"),
        Column("cost_per_case", "cost / case", "usd", "total cost / cases; unknown when any case has no cost", download="cost_per_case_usd"),
        Column("latency_p50", "p50 latency", "ms", "nearest-rank median latency", download="p50_ms"),
        Column("pass_rate", "pass rate", "percent", secondary=True),
        Column("noise", "noise ±", "number", "std of the arm's per-repeat means (with repeats): how far its mean moves on a rerun; a difference of this size could not be told apart from rerunning", secondary=True,
               download="noise_std"),
        Column("items", "items", "count", "items every arm of the leaderboard scored (the figures use only these)", secondary=True),
        Column("cases", "cases", "count", secondary=True),
        Column("cost_total", "cost", "usd", "total cost; unknown when any case has no cost", secondary=True, download="cost_usd"),
        Column("cost_per_correct", "per correct", "usd", "total cost / passed cases", secondary=True, download="cost_per_correct_usd"),
        Column("latency_p95", "p95 latency", "ms", "nearest-rank 95th percentile", secondary=True, download="p95_ms"),
        Column("experiment", "experiment", secondary=True),
        Column("run", "run", "code", secondary=True, download="run_id"),
    ]


def places_text(arm: RankedArm) -> str:
    """The verdict's places of an arm as the site shows them: ``1``, or ``2–3`` when not separated."""
    best, worst = arm.places
    return str(best) if best == worst else f"{best}–{worst}"


def leader_delta(board: Board, place: int) -> float | None:
    """The arm at ``place`` minus the first arm: the verdict's paired mean difference of the two,
    turned to read arm − leader (None on the first arm's own row)."""
    if place == 0:
        return None
    verdict = board.verdict
    return -verdict.pair(verdict.arms[0].arm, verdict.arms[place].arm).difference.mean_diff


def bounds(interval: Bounds) -> tuple[float | None, float | None]:
    """An analysis interval's bounds for a page: None where the bootstrap gave NaN, or where an inverted
    test's interval is unbounded (too few units for any level to exclude a shift)."""
    low, high = (None if bound is None or not math.isfinite(bound) else float(bound) for bound in (interval.low, interval.high))
    return low, high


def _arm_row(arm: RankedArm, run: Run, delta: float | None) -> dict[str, Any]:
    summary = arm.summary
    return {
        "rank": places_text(arm),
        "delta": delta,
        "group": arm.letters,
        "arm": Link(summary.arm.label, paths.run(run.run_id)),
        "experiment": experiment_link(run.header.experiment),
        "run": run_link(run),
        "items": summary.n_items,
        "cases": summary.n_cases,
        "mean": ShownInterval(arm.value, *bounds(arm.interval)),
        "noise": summary.noise.std if summary.noise and summary.noise.std == summary.noise.std else None,
        "pass_rate": summary.pass_rate,
        "cost_total": summary.cost.total,
        "cost_per_case": summary.cost.per_case,
        "cost_per_correct": summary.cost.per_correct,
        "latency_p50": summary.latency.p50_ms,
        "latency_p95": summary.latency.p95_ms,
    }


def _ranking(board: Board, number: int) -> tuple[Ranking | None, str]:
    verdict = board.verdict
    if verdict.friedman is None or verdict.nemenyi is None or board.stability is None:
        return None, "One arm: nothing to rank."
    names = [arm.label for arm in board.selection.arms]
    stability = board.stability
    cd = critical_difference_picture(verdict)
    ranking = Ranking(
        headline=verdict.headline,
        pairs=_pairs_table(verdict, number),
        omnibus=verdict.omnibus,
        agreement=verdict.agreement or "",
        items=board.n_items,
        friedman_statistic=verdict.friedman.statistic,
        friedman_p=verdict.friedman.p_value,
        friedman_resamples=verdict.friedman.n_resamples,
        differ=verdict.friedman.p_value < verdict.alpha,
        critical_difference=verdict.nemenyi.critical_difference,
        strict_order=verdict.order_supported,
        cd_diagram=Markup("") if cd.picture is None else charts.cd_diagram(
            list(cd.picture.labels), list(cd.picture.mean_ranks), cd.picture.critical_difference,
            [list(group) for group in cd.picture.groups], title="Critical-difference diagram (mean ranks)"),
        cd_note=cd.reason,
        stability=stability_sentence(stability, names),
        stability_table=Table(
            f"stability-{number}",
            [Column("size", "items in bootstrap sample", "count"), Column("p_order", "separated pairs kept", "percent"),
             Column("p_top", "top arm kept", "percent")],
            [{"size": s, "p_order": po, "p_top": stability.p_top[i] if stability.p_top else None}
             for i, (s, po) in enumerate(zip(stability.sizes, stability.p_order))]),
    )
    return ranking, ""


def _pairs_table(verdict: Verdict, number: int) -> Table:
    columns = [Column("pair", "pair"),
               Column("delta", "Δ, Holm-level interval", "interval", "paired difference; the sign-flip test's inverted "
                      "interval at the level Holm tested the pair at (its confidence in the next column): it excludes 0 "
                      "exactly when the pair is separated"),
               Column("level", "level"),
               Column("raw", "raw 95% interval", "interval", "bootstrap over the test's units, not adjusted for the "
                      "other pairs", secondary=True),
               Column("p", "p", "pvalue", "two-sided paired sign-flip"), Column("holm_p", "Holm p", "pvalue", verdict.correction),
               Column("verdict", "verdict")]
    rows = [{"pair": f"{p.ahead_label} − {p.behind_label}",
             "delta": ShownInterval(p.difference.mean_diff, *bounds(p.interval)), "level": level_text(p.interval),
             "raw": ShownInterval(p.difference.mean_diff, *bounds(p.difference.interval)),
             "p": p.difference.p_value, "holm_p": p.holm_p,
             "verdict": "separated" if p.separated else detectable_phrase(p)} for p in verdict.pairs]
    return Table(f"pairs-{number}", columns, rows)


def _scatter(board: Board, page_path: str) -> tuple[Markup, str]:
    points, unknown = [], []
    for arm in board.arms:
        summary = arm.summary
        if summary.cost.per_case is None:
            unknown.append(summary.arm.label)
            continue
        points.append(charts.Point(arm.label, summary.cost.per_case, arm.value, *bounds(arm.interval),
                                   href=paths.relative(page_path, paths.run(summary.arm.run_id))))
    if len(points) < 2:
        return Markup(""), "Fewer than two arms have a known cost, so there is no quality-against-cost chart."
    note = f"Not plotted (cost unknown): {', '.join(unknown)}." if unknown else ""
    chart = charts.quality_cost_scatter(points, x_label="cost per case (USD)", y_label="mean score",
                                        title="Quality against cost; the line joins the Pareto frontier")
    return chart, note
