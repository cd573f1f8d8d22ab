"""``index.html``: datasets, experiments, recent runs and the project's baselines with their reasons."""

from __future__ import annotations

from dataclasses import dataclass

from evalsite.analysis import comparable_groups
from evalsite.site import paths
from evalsite.site.inputs import ProjectInputs
from evalsite.site.pages import Job, Kit, PageContext, doc
from evalsite.site.pages.common import dataset_link, experiment_link, runs_by, runs_table
from evalsite.site.pages.decisions import DECISION_COLUMNS, current_baselines, decision_row
from evalsite.site.pages.reports import report_link
from evalsite.site.settings import SiteSettings
from evalsite.site.tables import Column, Link, Table


@dataclass(kw_only=True)
class HomePage(PageContext):
    """``index.html``."""

    datasets: Table = doc("One row per dataset_id: its file, items, runs, arms and the best arm of its newest comparable group.")
    experiments: Table = doc("One row per experiment: description, arms, runs, latest run.")
    recent_runs: Table = doc("The most recent runs ([site] recent_runs of them), newest first.")
    total_runs: int = doc("How many readable runs the project has (all are on runs.html).")
    baselines: Table = doc("The current baseline per dataset and arm (latest promotion) with its reason.")
    reports: Table = doc("The markdown reports under reports/, each a page with its claims checked.")
    skipped: list[str] = doc("Run folders that could not be read, with the reason.")
    input_hash: str = doc("Hash over every input of the site (runs, manifests, decisions).")


def jobs(inputs: ProjectInputs, settings: SiteSettings) -> list[Job]:
    every_run = tuple(run.run_id for run in inputs.runs)
    keys = ("skipped", "decisions", *inputs.summary_keys(every_run), *(f"experiment:{n}" for n in inputs.experiments),
            *(f"report:{r.name}" for r in inputs.reports))
    return [Job("home", keys, _render, digests=every_run)]


def _render(kit: Kit) -> dict[str, bytes]:
    inputs = kit.inputs
    recent = sorted(inputs.runs, key=lambda r: r.recency, reverse=True)[: kit.settings.recent_runs]
    context = HomePage(
        title=kit.site_title,
        datasets=_datasets_table(kit),
        experiments=_experiments_table(kit),
        recent_runs=runs_table("recent-runs", recent, kit.digests,
                               baselines={r.run_id: inputs.baseline_of(r.run_id) for r in recent}),
        total_runs=len(inputs.runs),
        baselines=Table("baselines", DECISION_COLUMNS, [decision_row(d, inputs) for d in current_baselines(inputs)]),
        reports=Table("reports", [Column("report", "report"), Column("file", "file", "code")],
                      [{"report": report_link(r), "file": inputs.project.relative(r.path)} for r in inputs.reports]),
        skipped=inputs.skipped,
        input_hash=inputs.combined_hash(),
    )
    return kit.page(paths.HOME, "index.html", context)


def _datasets_table(kit: Kit) -> Table:
    rows = []
    for dataset_id, members in runs_by(kit.inputs.runs, lambda run: run.dataset_id).items():
        groups = comparable_groups(kit.inputs.database, dataset_id, only_runs={r.run_id for r in members}).groups
        best = None
        if groups:
            scored = [(kit.digests[arm.run_id].mean_score, arm) for arm in groups[0].arms
                      if kit.digests[arm.run_id].mean_score is not None]
            best = max(scored, key=lambda pair: (pair[0], pair[1].run_id), default=None)
        newest = max(members, key=lambda r: r.recency)
        rows.append({
            "dataset": dataset_link(dataset_id),
            "path": newest.dataset.get("path"),
            "items": newest.dataset.get("items"),
            "runs": len(members),
            "arms": len({(r.experiment, r.arm_id, r.config_id) for r in members}),
            "best": best[1].label if best else None,
            "best_score": best[0] if best else None,
        })
    columns = [
        Column("dataset", "dataset", "code"), Column("path", "file", "code"), Column("items", "items", "count"),
        Column("runs", "runs", "count"), Column("arms", "arms", "count"),
        Column("best", "highest mean", help="highest mean score in the newest comparable group; see the leaderboard for whether it is really ahead"),
        Column("best_score", "its score", "number"),
    ]
    return Table("datasets", columns, rows)


def _experiments_table(kit: Kit) -> Table:
    by_name = runs_by(kit.inputs.runs, lambda run: run.experiment)
    rows = []
    for name in sorted(set(by_name) | set(kit.inputs.experiments)):
        members = by_name.get(name, [])
        source = kit.inputs.experiments.get(name)
        newest = max(members, key=lambda r: r.recency, default=None)
        rows.append({
            "experiment": experiment_link(name),
            "manifest": source.path.relative_to(kit.inputs.project.root).as_posix() if source else None,
            "arms": len({r.arm_id for r in members}),
            "runs": len(members),
            "latest": Link(newest.run_id, paths.run(newest.run_id)) if newest else None,
        })
    columns = [
        Column("experiment", "experiment"), Column("manifest", "manifest", "code"), Column("arms", "arms", "count"),
        Column("runs", "runs", "count"), Column("latest", "latest run", "code"),
    ]
    return Table("experiments", columns, rows)
