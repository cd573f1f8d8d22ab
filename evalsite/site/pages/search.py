"""The site's search: ``search/index.js`` lists every search script; ``search/pages.js`` holds the
documents of the runs, arms, experiments, datasets and reports (each dataset's items are written by
its item job, :mod:`evalsite.site.pages.items`).

Documents are plain records (kind, title, where, text, url); the browser indexes and ranks them with
the vendored MiniSearch library (``static/minisearch.js``), loading the scripts only when the reader
first uses the search box, so pages stay small and search works from ``file://`` (scripts load from
disk where ``fetch`` does not).
"""

from __future__ import annotations

import json

from evalsite.site import paths
from evalsite.site.inputs import ProjectInputs
from evalsite.site.pages import Job, Kit
from evalsite.site.pages.common import runs_by
from evalsite.site.pages.items import search_script, search_shard_name, search_shards
from evalsite.site.settings import SiteSettings

PAGES_SHARD = "pages"


def jobs(inputs: ProjectInputs, settings: SiteSettings) -> list[Job]:
    keys = (*(f"run:{r.run_id}" for r in inputs.runs), *(f"experiment:{n}" for n in inputs.experiments),
            *(f"report:{r.name}" for r in inputs.reports))
    return [Job("search", keys, _render)]


def _render(kit: Kit) -> dict[str, bytes]:
    inputs = kit.inputs
    shards = [PAGES_SHARD]
    for dataset_id, members in runs_by(inputs.runs, lambda run: run.header.dataset.dataset_id).items():
        shards += [search_shard_name(dataset_id, n) for n in range(search_shards(members))]
    manifest = json.dumps([paths.search_shard(name) for name in shards])
    return {
        paths.SEARCH_MANIFEST: f"window.evalsiteSearch&&window.evalsiteSearch.shards({manifest});\n".encode(),
        paths.search_shard(PAGES_SHARD): search_script(_page_documents(inputs)),
    }


def _page_documents(inputs: ProjectInputs) -> list[dict]:
    docs = []
    for run in inputs.runs:
        words = [run.header.arm_id, run.header.experiment or "", run.header.dataset.dataset_id or "", str(run.status), run.header.config_id or ""]
        docs.append({"kind": "run", "title": run.run_id, "where": run.header.arm_id, "text": " ".join(words),
                     "url": paths.run(run.run_id)})
    arms = {(r.header.experiment, r.header.arm_id): r for r in sorted(inputs.runs, key=lambda r: r.recency)}
    for (experiment, arm_id), run in sorted(arms.items(), key=lambda pair: (str(pair[0][0]), pair[0][1])):
        config = json.dumps((run.header.config or {}).get("params") or {}, sort_keys=True, default=str)
        url = paths.experiment(experiment) if experiment else paths.run(run.run_id)
        docs.append({"kind": "arm", "title": arm_id, "where": experiment or "", "text": config, "url": url})
    for name, source in sorted(inputs.experiments.items()):
        docs.append({"kind": "experiment", "title": name, "where": "", "text": source.text, "url": paths.experiment(name)})
    for dataset_id in runs_by(inputs.runs, lambda run: run.header.dataset.dataset_id):
        docs.append({"kind": "dataset", "title": dataset_id, "where": "", "text": "leaderboard", "url": paths.dataset(dataset_id)})
    for report in inputs.reports:
        text = report.path.read_text(encoding="utf-8", errors="replace")
        docs.append({"kind": "report", "title": report.name, "where": "", "text": text, "url": paths.report(report.name)})
    return docs
