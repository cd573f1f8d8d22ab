"""``index.html``: the verdict first (one card per dataset), then datasets, experiments, recent runs and
the project's baselines with their reasons.

A card's figures come from the analysis layer through :func:`dataset_verdict`, the one place that
reads them; the site computes no statistic of its own."""

from __future__ import annotations

from dataclasses import dataclass

from evalsite.analysis import RankedArm, Selection, comparable_groups
from evalsite.analysis.dataset_versions import OLDER
from evalsite.errors import EvalsiteError
from evalsite.site import paths
from evalsite.site.drift import drift_variant, experiment_drift, experiment_status
from evalsite.site.inputs import ProjectInputs
from evalsite.site.pages import Kit, PageContext, PageJob, doc
from evalsite.site.pages.common import dataset_link, experiment_link, runs_by, runs_table
from evalsite.site.pages.datasets import bounds, describe, places_text
from evalsite.site.pages.decisions import DECISION_COLUMNS, current_baselines, decision_row
from evalsite.site.pages.reports import report_link
from evalsite.site.settings import SiteSettings
from evalsite.site.tables import Column, Link, ShownInterval, Table


@dataclass(kw_only=True)
class VerdictCard:
    """Who leads on one dataset and whether the lead is real (the comparable group `evalsite leaderboard` reads: the most configs, the newest among equals)."""

    dataset: Link | str = doc("The dataset's leaderboard (— when the runs name no dataset).")
    dataset_version: str = doc("Which version of its file the dataset is: 'current version of data/x.jsonl' (its hash matches the file now) or 'older version of data/x.jsonl (the file has changed since)'.", default="")
    current: bool = doc("True unless the dataset is an older version of its file: only a current version's card says 'leading'; older cards come after the current ones.", default=True)
    comparable: str = doc("What the group's runs share (dataset, evaluator versions).")
    arms: int = doc("Arms in the group.")
    items: int = doc("Items every arm scored (the tests use only these).")
    leader: str | None = doc("The first arm of the leaderboard; None when there is no leaderboard.")
    leader_run: Link | None = doc("The leader's run.")
    leader_rank: str = doc("The leader's places in the verdict: 1, or a range (1–3) when the paired tests do not separate it from the others.", "")
    headline: str = doc("The verdict in one sentence (or why there is none).")
    mean: ShownInterval | None = doc("The leader's mean score with the verdict's bootstrap interval (over clusters when items declare them).")
    runner_up: str | None = doc("The second arm, when there is one.")
    delta: ShownInterval | None = doc("Paired mean difference leader − runner-up over their shared items, with its bootstrap interval.")
    confidence: float | None = doc("Confidence level of that interval.")
    p_value: float | None = doc("p of the paired sign-flip test of that difference.")
    p_label: str = doc("Which test and correction the p is (the verdict's unit and correction).")
    cost_per_case: float | None = doc("The leader's cost of one answer to one item: total ÷ cases (None: unknown).")
    latency_p50: float | None = doc("The leader's median latency in ms.")


@dataclass(kw_only=True)
class HomePage(PageContext):
    """``index.html``."""

    description: str = doc("The project's description ([site] description), shown under the title.")
    verdicts: list[VerdictCard] = doc("One card per dataset, the verdict of the comparable group `evalsite leaderboard` reads (the most configs, the newest among equals).")

    datasets: Table = doc("One row per dataset_id: its file, items, runs, arms and the first arm of the leaderboard of the comparable group `evalsite leaderboard` reads, with its mean (excluded runs left out).")
    experiments: Table = doc("One row per experiment: description, arms, runs, latest run (excluded runs left out).")
    recent_runs: Table = doc("The most recent runs ([site] recent_runs of them), newest first; excluded runs are left out.")
    total_runs: int = doc("How many readable runs the project has (all are on runs.html, excluded ones marked).")
    baselines: Table = doc("The current baseline per dataset and arm (latest promotion) with its reason.")
    reports: Table = doc("The markdown reports under reports/, each a page with its claims checked.")
    skipped: list[str] = doc("Run folders that could not be read, with the reason.")
    input_hash: str = doc("Hash over every input of the site (runs, manifests, decisions).")


def jobs(inputs: ProjectInputs, settings: SiteSettings) -> list[PageJob]:
    every_run = tuple(run.run_id for run in inputs.runs)
    keys = ("skipped", "decisions", *inputs.summary_keys(every_run), *(f"experiment:{n}" for n in inputs.experiments),
            *(f"report:{r.name}" for r in inputs.reports))
    drift = "|".join(drift_variant(experiment_drift(inputs, name)) for name in sorted(inputs.experiments))
    versions = inputs.dataset_versions  # a dataset file edited without a new run re-renders the cards
    states = sorted({f"{run.header.dataset.dataset_id}:{versions.of(run.header.dataset).state}" for run in inputs.runs})
    return [PageJob("home", keys, _render, figures=every_run, variant=drift + "|" + ",".join(states))]


def _render(kit: Kit) -> dict[str, bytes]:
    inputs = kit.inputs
    recent = sorted(inputs.listed_runs, key=lambda r: r.recency, reverse=True)[: kit.settings.recent_runs]
    context = HomePage(
        title=kit.site_title,
        description=kit.settings.description,
        verdicts=_verdict_cards(kit),
        datasets=_datasets_table(kit),
        experiments=_experiments_table(kit),
        recent_runs=runs_table("recent-runs", recent, kit.figures,
                               baselines={r.run_id: inputs.baseline_of(r.run_id) for r in recent}),
        total_runs=len(inputs.runs),
        baselines=Table("baselines", DECISION_COLUMNS, [decision_row(d, inputs) for d in current_baselines(inputs)]),
        reports=Table("reports", [Column("report", "report"), Column("file", "file", "code")],
                      [{"report": report_link(r), "file": inputs.project.relative(r.path)} for r in inputs.reports]),
        skipped=inputs.skipped,
        input_hash=inputs.combined_hash(),
    )
    return kit.page(paths.HOME, "index.html", context)


def _verdict_cards(kit: Kit) -> list[VerdictCard]:
    """One card per dataset, the current versions of their files first (a stable sort keeps the order within)."""
    cards, versions = [], kit.inputs.dataset_versions
    for dataset_id, members in runs_by(kit.inputs.listed_runs, lambda run: run.header.dataset.dataset_id).items():
        group = comparable_groups(kit.inputs.database, dataset_id, only_runs={r.run_id for r in members}).chosen
        if group is not None:  # the group `evalsite leaderboard` and `check-claims` read
            card = dataset_verdict(kit.inputs, dataset_id, group)
            version = versions.of(members[0].header.dataset)
            card.dataset_version, card.current = version.label, version.state != OLDER
            cards.append(card)
    return sorted(cards, key=lambda card: not card.current)


def dataset_verdict(inputs: ProjectInputs, dataset_id: str, group: Selection) -> VerdictCard:
    """The card of one comparable group, read from :meth:`ProjectInputs.leaderboard`: its verdict
    (:mod:`evalsite.analysis.verdict`) gives the headline and the paired difference of the first
    two arms, Holm-corrected over every pair the leaderboard shows. The one adapter between the
    analysis layer's verdict and the home page."""
    card = VerdictCard(dataset=dataset_link(dataset_id), comparable=describe(group), arms=len(group.arms), items=0,
                       leader=None, leader_run=None, headline="", mean=None, runner_up=None, delta=None,
                       confidence=None, p_value=None, p_label="", cost_per_case=None, latency_p50=None)
    try:
        board = inputs.leaderboard(group)
    except EvalsiteError as exc:
        card.headline = f"No verdict: {exc.message}."
        return card
    leader = board.arms[0]
    first = leader.summary
    card.items, card.headline = board.n_items, _sentence(board.verdict.headline, leader.label)
    card.leader, card.leader_run = leader.label, Link(first.arm.run_id, paths.run(first.arm.run_id))
    card.leader_rank = places_text(leader)
    card.mean = ShownInterval(leader.value, *bounds(leader.interval))
    card.cost_per_case, card.latency_p50 = first.cost.per_case, first.latency.p50_ms
    if len(board.arms) > 1:
        card.runner_up = board.arms[1].summary.arm.label
        pair = board.verdict.pair(board.verdict.arms[0].arm, board.verdict.arms[1].arm)
        difference = pair.difference
        card.delta = ShownInterval(difference.mean_diff, *bounds(pair.interval))  # excludes 0 exactly when separated
        card.confidence, card.p_value = pair.interval.confidence, pair.holm_p
        card.p_label = f"paired sign-flip test over {difference.unit}s, {board.verdict.correction}"
    return card


def _sentence(text: str, leader: str) -> str:
    """The headline as a sentence: a capital first letter, unless it starts with the leader's label
    (an arm is named as written: ``arm0`` is not ``Arm0``), and a full stop."""
    text = text.strip()
    first = text[:1] if text.startswith(leader) else text[:1].upper()
    return first + text[1:] + ("" if text.endswith(".") else ".") if text else ""


def _datasets_table(kit: Kit) -> Table:
    rows = []
    for dataset_id, members in runs_by(kit.inputs.listed_runs, lambda run: run.header.dataset.dataset_id).items():
        group = comparable_groups(kit.inputs.database, dataset_id, only_runs={r.run_id for r in members}).chosen
        leader = _leader(kit.inputs, group) if group is not None else None
        newest = max(members, key=lambda r: r.recency)
        rows.append({
            "dataset": dataset_link(dataset_id),
            "path": newest.header.dataset.path,
            "items": newest.header.dataset.items,
            "runs": len(members),
            "arms": len({(r.header.experiment, r.header.arm_id, r.header.config_id) for r in members}),
            "best": leader.label if leader else None,
            "best_score": leader.value if leader else None,
        })
    columns = [
        Column("dataset", "dataset", "code"), Column("path", "file", "code"), Column("items", "items", "count"),
        Column("runs", "runs", "count"), Column("arms", "arms", "count"),
        Column("best", "highest mean", help="the first arm of the leaderboard `evalsite leaderboard` shows for this dataset (highest mean over the items every arm scored); see the leaderboard for whether it is really ahead"),
        Column("best_score", "its score", "number"),
    ]
    return Table("datasets", columns, rows)


def _leader(inputs: ProjectInputs, group: Selection) -> RankedArm | None:
    """The verdict's first arm of a group (the one the card and the leaderboard name), None without a leaderboard."""
    try:
        return inputs.leaderboard(group).arms[0]
    except EvalsiteError:
        return None


def _experiments_table(kit: Kit) -> Table:
    by_name = runs_by(kit.inputs.listed_runs, lambda run: run.header.experiment)
    rows = []
    for name in sorted(set(by_name) | set(kit.inputs.experiments)):
        members = by_name.get(name, [])
        source = kit.inputs.experiments.get(name)
        newest = max(members, key=lambda r: r.recency, default=None)
        rows.append({
            "experiment": experiment_link(name),
            "manifest": source.path.relative_to(kit.inputs.project.root).as_posix() if source else None,
            "arms": len({r.header.arm_id for r in members}),
            "runs": len(members),
            "latest": Link(newest.run_id, paths.run(newest.run_id)) if newest else None,
            "status": experiment_status(members, experiment_drift(kit.inputs, name)),
        })
    columns = [
        Column("experiment", "experiment"), Column("manifest", "manifest", "code"), Column("arms", "arms", "count"),
        Column("runs", "runs", "count"), Column("latest", "latest run", "code"),
        Column("status", "status", "status", "from each arm's latest run; edited: the manifest changed since"),
    ]
    return Table("experiments", columns, rows)
