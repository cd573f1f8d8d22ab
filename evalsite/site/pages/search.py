"""The site's search: ``search/index.js`` lists what to index; ``search/pages.js`` holds the
documents of the runs, arms, experiments, datasets and reports, and the items are indexed straight
from the runs' data scripts (:mod:`evalsite.site.casedata`), so no case text is written twice.

Documents are plain records (kind, title, where, text, url); the browser indexes and ranks them with
the vendored MiniSearch library (``static/minisearch.js``), loading the scripts only when the reader
first uses the search box, so pages stay small and search works from ``file://`` (scripts load from
disk where ``fetch`` does not). An item's input and expected value are indexed from the newest run
on its dataset only; every run's outputs are indexed. Excluded runs (``evalsite runs --exclude``)
are not indexed at all: like every listing, search leaves them to their own page and the runs table.
"""

from __future__ import annotations

import json

from evalsite.jsonshape import JSONObject
from evalsite.site import paths
from evalsite.site.inputs import ProjectInputs
from evalsite.site.pages import Kit, PageJob
from evalsite.site.pages.common import runs_by
from evalsite.site.settings import SiteSettings

PAGES_SHARD = "pages"


def jobs(inputs: ProjectInputs, settings: SiteSettings) -> list[PageJob]:
    keys = ("decisions", *(f"run:{r.run_id}" for r in inputs.runs), *(f"experiment:{n}" for n in inputs.experiments),
            *(f"report:{r.name}" for r in inputs.reports))
    return [PageJob("search", keys, _render)]


def _render(kit: Kit) -> dict[str, bytes]:
    inputs = kit.inputs
    shards: list[str | JSONObject] = [paths.search_shard(PAGES_SHARD)]
    for dataset_id, members in runs_by(inputs.listed_runs, lambda run: run.header.dataset.dataset_id).items():
        newest = max(members, key=lambda r: r.recency)
        shards += [{"folder": paths.run_data_index(r.run_id).removesuffix("index.js"), "arm": r.header.arm_id,
                    "items": paths.items_folder(dataset_id), "texts": r is newest}
                   for r in sorted(members, key=lambda r: r.run_id)]
    manifest = json.dumps(shards, ensure_ascii=False).replace("<", "\\u003c")
    return {
        paths.SEARCH_MANIFEST: f"window.evalsiteSearch&&window.evalsiteSearch.shards({manifest});\n".encode(),
        paths.search_shard(PAGES_SHARD): search_script(_page_documents(inputs)),
    }


def search_script(docs: list[JSONObject]) -> bytes:
    """Documents as a script that hands them to the page's search (``search.js``); ``<`` is escaped so
    no text can close a script element."""
    payload = json.dumps(docs, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")
    return f"window.evalsiteSearch&&window.evalsiteSearch.add({payload});\n".encode()


def _page_documents(inputs: ProjectInputs) -> list[JSONObject]:
    docs = []
    for run in inputs.listed_runs:
        words = [run.header.arm_id or "", run.header.experiment or "", run.header.dataset.dataset_id or "", str(run.status), run.header.config_id or ""]
        docs.append({"kind": "run", "title": run.run_id, "where": run.header.arm_id, "text": " ".join(words),
                     "url": paths.run(run.run_id)})
    arms = {(r.header.experiment, r.header.arm_id): r for r in sorted(inputs.listed_runs, key=lambda r: r.recency)}
    for (experiment, arm_id), run in sorted(arms.items(), key=lambda pair: (str(pair[0][0]), pair[0][1])):
        config = json.dumps((run.header.config or {}).get("params") or {}, sort_keys=True, default=str)
        url = paths.experiment(experiment) if experiment else paths.run(run.run_id)
        docs.append({"kind": "arm", "title": arm_id, "where": experiment or "", "text": config, "url": url})
    for name, source in sorted(inputs.experiments.items()):
        docs.append({"kind": "experiment", "title": name, "where": "", "text": source.text, "url": paths.experiment(name)})
    for dataset_id in runs_by(inputs.listed_runs, lambda run: run.header.dataset.dataset_id):
        docs.append({"kind": "dataset", "title": dataset_id, "where": "", "text": "leaderboard", "url": paths.dataset(dataset_id)})
    for report in inputs.reports:
        text = report.path.read_text(encoding="utf-8", errors="replace")
        docs.append({"kind": "report", "title": report.name, "where": "", "text": text, "url": paths.report(report.name)})
    return docs
