"""Dataset leaderboards: ``datasets/<dataset_id>.html``.

Only runs on the same dataset_id with the same evaluator versions are compared; each such group
gets its own leaderboard, and every run left out is listed with the reason. Within a group the arms
are ordered by mean score but *ranked* only as far as the data supports: Friedman's test first,
then Nemenyi's tied groups (arms sharing a letter are not significantly different), a
critical-difference diagram and the rank stability ("this order needs ~N items; you have M").
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

import numpy as np
from markupsafe import Markup

from evalsite import stats
from evalsite.site import charts, paths
from evalsite.site.digest import RunDigest
from evalsite.site.groups import ComparableGroup, comparable_groups
from evalsite.site.inputs import ProjectInputs, RunSource
from evalsite.site.pages import Job, Kit, PageContext, doc
from evalsite.site.pages.common import experiment_link, run_link, runs_by, runs_table
from evalsite.site.settings import SiteSettings
from evalsite.site.tables import Column, Interval, Table

ALPHA = 0.05
CONFIDENCE = 0.95


@dataclass(kw_only=True)
class Ranking:
    """The tests behind the order of a leaderboard (present when at least two arms share two or more items)."""

    items: int = doc("Items every arm of the group scored (the tests use only these).")
    friedman_statistic: float = doc("Friedman chi-square (tie-corrected).")
    friedman_p: float = doc("Friedman permutation p-value (items' arms shuffled within item, seeded).")
    friedman_resamples: int = doc("Permutations behind friedman_p.")
    differ: bool = doc("True when friedman_p < 0.05: the arms are not all alike.")
    critical_difference: float = doc("Nemenyi critical difference of mean ranks at alpha 0.05.")
    strict_order: bool = doc("True when every arm is separated from every other (a strict order is supported).")
    cd_diagram: Markup = doc("Critical-difference diagram (inline SVG).")
    stability: str = doc("Rank stability in words: how many items the order needs against how many there are.")
    stability_table: Table = doc("Share of random item subsets (by size) that reproduce the full order and the top arm.")


@dataclass(kw_only=True)
class Leaderboard:
    """One group of comparable runs."""

    number: int = doc("1 for the group with the newest run, 2 for the next…")
    comparable: str = doc("What the group's runs share: the dataset and the evaluator versions.")
    arms: Table = doc("One row per arm: its run, mean with interval, tied group, pass rate, costs, latency percentiles.")
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
    leaderboards: list[Leaderboard] = doc("One leaderboard per comparable group, newest first.")
    left_out: Table = doc("Runs on this dataset that no leaderboard uses, with the reason.")
    runs: Table = doc("Every run on this dataset, newest first.")


def jobs(inputs: ProjectInputs, settings: SiteSettings) -> list[Job]:
    return [
        Job(f"dataset:{dataset_id}", tuple(f"run:{r.run_id}" for r in members),
            _renderer(dataset_id, members), digests=tuple(r.run_id for r in members))
        for dataset_id, members in runs_by(inputs.runs, lambda run: run.dataset_id).items()
    ]


def _renderer(dataset_id: str, members: list[RunSource]):
    def render(kit: Kit) -> dict[str, bytes]:
        page_path = paths.dataset(dataset_id)
        groups, left_out = comparable_groups(members)
        newest = max(members, key=lambda r: r.recency)
        context = DatasetPage(
            title=f"Dataset {dataset_id}",
            dataset_id=dataset_id,
            paths=sorted({r.dataset.get("path") for r in members if r.dataset.get("path")}),
            items=newest.dataset.get("items"),
            leaderboards=[leaderboard(number, group, kit.digests, page_path)
                          for number, group in enumerate(groups, start=1)],
            left_out=Table("left-out", [Column("run", "run", "code"), Column("arm", "arm"), Column("reason", "reason")],
                           [{"run": run_link(item.run), "arm": item.run.arm_id, "reason": item.reason} for item in left_out]),
            runs=runs_table("runs", members, kit.digests),
        )
        return kit.page(page_path, "dataset.html", context)

    return render


def leaderboard(number: int, group: ComparableGroup, digests: dict[str, RunDigest], page_path: str) -> Leaderboard:
    runs = best_first(group.chosen, digests)
    labels = arm_labels(runs)
    intervals = {r.run_id: mean_interval(digests[r.run_id]) for r in runs}
    ranking, note, letters, rank_intervals = _ranking(runs, labels, digests, number)
    rows = [_arm_row(run, labels[run.run_id], digests[run.run_id], intervals[run.run_id],
                     letters.get(run.run_id), rank_intervals.get(run.run_id)) for run in runs]
    forest = charts.interval_bars(
        [charts.Point(labels[r.run_id], iv.value, iv.value, iv.low, iv.high) for r in runs
         for iv in [intervals[r.run_id]] if iv.value is not None],
        x_label=f"mean score with {CONFIDENCE:.0%} bootstrap interval", title="Mean score per arm")
    scatter, scatter_note = _scatter(runs, labels, digests, intervals, page_path)
    return Leaderboard(
        number=number,
        comparable=group.describe(),
        arms=Table(f"leaderboard-{number}", ARM_COLUMNS, rows),
        ranking=ranking,
        ranking_note=note,
        intervals=forest,
        scatter=scatter,
        scatter_note=scatter_note,
    )


ARM_COLUMNS = [
    Column("group", "tied group", help="arms sharing a letter are not significantly different (Nemenyi, alpha 0.05)"),
    Column("arm", "arm"),
    Column("experiment", "experiment"),
    Column("run", "run", "code"),
    Column("items", "items", "count"),
    Column("cases", "cases", "count"),
    Column("mean", "mean score", "interval", "mean of per-item means, 95% bootstrap interval over items (repeats resampled within items)"),
    Column("noise", "noise ±", "number", "std of the arm's per-repeat means (with repeats): a difference smaller than this is noise"),
    Column("pass_rate", "pass rate", "percent"),
    Column("cost_total", "cost", "usd", "total; unknown when any case has no cost"),
    Column("cost_per_case", "per case", "usd", "total cost / cases"),
    Column("cost_per_correct", "per correct", "usd", "total cost / passed cases"),
    Column("latency_p50", "p50 latency", "ms", "nearest-rank median"),
    Column("latency_p95", "p95 latency", "ms", "nearest-rank 95th percentile"),
    Column("rank_interval", "rank interval", help="95% bootstrap interval of the arm's rank (1 = best)"),
]


def best_first(runs: list[RunSource], digests: dict[str, RunDigest]) -> list[RunSource]:
    """Highest mean score first (unscored last), ties by arm id then run id."""
    def key(run: RunSource):
        mean = digests[run.run_id].mean_score
        return (mean is None, -(mean or 0.0), run.arm_id, run.run_id)

    return sorted(runs, key=key)


def arm_labels(runs: list[RunSource]) -> dict[str, str]:
    """The arm id, with the experiment and config id added only where needed to tell arms apart."""
    counts = defaultdict(int)
    for run in runs:
        counts[run.arm_id] += 1
    labels = {}
    for run in runs:
        label = run.arm_id
        if counts[run.arm_id] > 1:
            label = f"{run.arm_id} ({run.experiment or '?'}, {(run.config_id or '?')[:8]})"
        labels[run.run_id] = label
    return labels


def mean_interval(digest: RunDigest) -> Interval:
    """Mean of per-item means with its bootstrap interval (two-level when the run has repeats)."""
    if "mean_interval" not in digest.memo:
        digest.memo["mean_interval"] = _mean_interval(digest)
    return digest.memo["mean_interval"]


def _mean_interval(digest: RunDigest) -> Interval:
    matrix = digest.score_matrix()
    if matrix.size == 0:
        return Interval(None)
    item_means = np.nanmean(matrix, axis=1)
    value = float(item_means.mean())
    if len(item_means) < 2:
        return Interval(value)
    interval = stats.bootstrap_ci(matrix if matrix.shape[1] > 1 else item_means, confidence=CONFIDENCE)
    low, high = interval
    return Interval(value, None if math.isnan(low) else low, None if math.isnan(high) else high)


def repeat_std(digest: RunDigest) -> float | None:
    """The arm's own noise: std of its per-repeat means (None with a single repeat)."""
    if len(digest.repeats) < 2 or digest.unscored:
        return None
    std = stats.repeat_noise(digest.score_matrix()).std
    return None if math.isnan(std) else std


def common_item_matrix(runs: list[RunSource], digests: dict[str, RunDigest]) -> tuple[list[str], np.ndarray]:
    """Items every run scored, and their items × arms matrix of per-item mean scores."""
    item_sets = [{i for i, item in digests[r.run_id].items.items() if item.mean_score is not None} for r in runs]
    common = set.intersection(*item_sets) if item_sets else set()
    order = [i for i in digests[runs[0].run_id].items if i in common] if runs else []
    matrix = np.array([[digests[r.run_id].items[i].mean_score for r in runs] for i in order], dtype=float)
    return order, matrix


def _ranking(runs, labels, digests, number) -> tuple[Ranking | None, str, dict, dict]:
    if len(runs) < 2:
        return None, "One arm: nothing to rank.", {}, {}
    items, matrix = common_item_matrix(runs, digests)
    if len(items) < 2:
        return None, f"The arms share {len(items)} scored item(s); a ranking needs at least two.", {}, {}
    friedman = stats.friedman_test(matrix)
    post_hoc = stats.nemenyi(matrix, alpha=ALPHA)
    differ = friedman.p_value < ALPHA
    mean_ranks = post_hoc.mean_ranks
    # without a significant Friedman test no pair is separated: one group spanning every mean rank
    spread = max(mean_ranks) - min(mean_ranks)
    groups = stats.tied_groups(mean_ranks, post_hoc.critical_difference if differ else spread)
    stability = stats.rank_stability(matrix)
    letters = {run.run_id: groups.letters[index] for index, run in enumerate(runs)}
    rank_intervals = {run.run_id: _rank_text(stability.rank_intervals[index]) for index, run in enumerate(runs)}
    names = [labels[r.run_id] for r in runs]
    ranking = Ranking(
        items=len(items),
        friedman_statistic=friedman.statistic,
        friedman_p=friedman.p_value,
        friedman_resamples=friedman.n_resamples,
        differ=differ,
        critical_difference=post_hoc.critical_difference,
        strict_order=differ and groups.strict_order_supported,
        cd_diagram=charts.cd_diagram(names, list(mean_ranks), post_hoc.critical_difference,
                                     [list(g) for g in groups.groups], title="Critical-difference diagram (mean ranks)"),
        stability=_stability_text(stability),
        stability_table=Table(
            f"stability-{number}",
            [Column("size", "items in subset", "count"), Column("p_order", "order reproduced", "percent"),
             Column("p_top", "top arm reproduced", "percent")],
            [{"size": s, "p_order": po, "p_top": pt} for s, po, pt in zip(stability.sizes, stability.p_order, stability.p_top)]),
    )
    return ranking, "", letters, rank_intervals


def _rank_text(bounds: tuple[float, float]) -> str:
    low, high = bounds
    return f"{low:g}" if low == high else f"{low:g}–{high:g}"


def _stability_text(result) -> str:
    level = f"{result.level:.0%}"
    if result.min_size_order is not None:
        return (f"This order needs ~{result.min_size_order} items (reproduced in {level} of random subsets of that size); "
                f"you have {result.n_items}.")
    largest = result.sizes[-1] if result.sizes else result.n_items
    share = result.p_order[-1] if result.p_order else 0.0
    return (f"This order is not stable: subsets of {largest} of your {result.n_items} items reproduce it only "
            f"{share:.0%} of the time (needs {level}); more items are needed before the order can be read.")


def _arm_row(run: RunSource, label: str, digest: RunDigest, interval: Interval, letters: str | None, rank: str | None) -> dict:
    return {
        "group": letters,
        "arm": label,
        "experiment": experiment_link(run.experiment),
        "run": run_link(run),
        "items": sum(1 for item in digest.items.values() if item.mean_score is not None),
        "cases": digest.cases,
        "mean": interval,
        "noise": repeat_std(digest),
        "pass_rate": digest.pass_rate,
        "cost_total": digest.cost_total,
        "cost_per_case": digest.cost_per_case,
        "cost_per_correct": digest.cost_per_correct,
        "latency_p50": digest.latency_percentile(50),
        "latency_p95": digest.latency_percentile(95),
        "rank_interval": rank,
    }


def _scatter(runs, labels, digests, intervals, page_path) -> tuple[Markup, str]:
    points, unknown = [], []
    for run in runs:
        digest, interval = digests[run.run_id], intervals[run.run_id]
        if digest.cost_per_case is None or interval.value is None:
            unknown.append(labels[run.run_id])
            continue
        points.append(charts.Point(labels[run.run_id], digest.cost_per_case, interval.value, interval.low, interval.high,
                                   href=paths.relative(page_path, paths.run(run.run_id))))
    if len(points) < 2:
        return Markup(""), "Fewer than two arms have a known cost, so there is no quality-against-cost chart."
    note = f"Not plotted (cost unknown): {', '.join(unknown)}." if unknown else ""
    chart = charts.quality_cost_scatter(points, x_label="cost per case (USD)", y_label="mean score",
                                        title="Quality against cost; the line joins the Pareto frontier")
    return chart, note
