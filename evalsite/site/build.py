"""Build the static site: gather every input first, render pages, then write the output folder."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from evalsite import __version__
from evalsite.db import open_database
from evalsite.project import Project
from evalsite.runlog import read_run
from evalsite.site.theme import builtin_theme_dir, environment

LEADERBOARD_SQL = """
SELECT r.dataset_id, r.arm_id, count(*) AS n, count(DISTINCT c.run_id) AS runs,
       avg(c.score) AS mean_score, avg(c.passed::INTEGER) AS pass_rate,
       avg(c.latency_ms) AS mean_latency_ms, sum(CASE WHEN c.error IS NOT NULL THEN 1 ELSE 0 END) AS errors
FROM cases c JOIN runs r USING (run_id)
WHERE r.status = 'completed'
GROUP BY r.dataset_id, r.arm_id
ORDER BY r.dataset_id, mean_score DESC NULLS LAST, r.arm_id
"""

RUNS_SQL = """
SELECT r.run_id, r.arm_id, r.experiment, r.dataset_id, r.status, r.started_at,
       count(c.item_id) AS n, avg(c.score) AS mean_score, avg(c.passed::INTEGER) AS pass_rate
FROM runs r LEFT JOIN cases c USING (run_id)
GROUP BY ALL ORDER BY r.run_id DESC
"""


@dataclass(frozen=True)
class SiteReport:
    out_dir: Path
    pages: int
    skipped_runs: list[str]


def build_site(project: Project, out_dir: Path | None = None) -> SiteReport:
    out_dir = Path(out_dir or project.site_dir)
    database = open_database(project.runs_dir)
    leaderboard = database.rows(LEADERBOARD_SQL)
    runs = database.rows(RUNS_SQL)
    run_pages = {row["run_id"]: read_run(project.runs_dir / row["run_id"]) for row in runs}
    env = environment(project.templates_dir)
    common = {"version": __version__, "project_name": project.root.name}
    pages = {"index.html": env.get_template("index.html").render(
        root="", leaderboard=leaderboard, runs=runs, skipped=database.skipped, **common)}
    for run_id, run in run_pages.items():
        pages[f"runs/{run_id}.html"] = env.get_template("run.html").render(
            root="../", run=run, header=run.header, cases=run.cases, end=run.end,
            header_json=json.dumps(run.header.get("fingerprint", {}), indent=2, sort_keys=True), **common)
    _write(out_dir, pages, project)
    return SiteReport(out_dir, len(pages), database.skipped)


def _write(out_dir: Path, pages: dict[str, str], project: Project) -> None:
    if out_dir.exists():
        shutil.rmtree(out_dir)
    for name, html in pages.items():
        path = out_dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(html, encoding="utf-8")
    for static in (builtin_theme_dir("static"), project.static_dir):
        if static.is_dir():
            shutil.copytree(static, out_dir / "static", dirs_exist_ok=True)
