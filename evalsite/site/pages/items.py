"""Item pages: ``items/<dataset>/<bucket>.html``, every item of a dataset across every run on it.

An item's section shows its input, expected value and dataset metadata, then each run's output,
score, verdict, latency, tokens and cost for every repeat, and a picker that diffs any two outputs.
Items are spread over at most 256 pages by a hash of their id (:func:`evalsite.site.paths.item_bucket`),
so every other page can link an item without reading the dataset. A page is a shell: the browser
(``static/items.js``) loads that bucket's part of each run's data (:mod:`evalsite.site.casedata`),
so an item page carries no copy of a case and a new run re-renders only these small shells.

The dataset's item index lists every item (id, the start of its input, each arm's outcome in its
newest run) from data scripts (:mod:`evalsite.site.itemindex`), filtered, searched and paged in
the browser (``static/itemindex.js``).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from evalsite.jsonshape import JSONObject
from evalsite.runlog.store import Run
from evalsite.site import paths
from evalsite.site.casedata import data_script
from evalsite.site.inputs import ProjectInputs
from evalsite.site.itemindex import index_scripts
from evalsite.site.pages import Kit, PageContext, PageJob, doc
from evalsite.site.pages.common import runs_by
from evalsite.site.safe_text import display
from evalsite.site.settings import SiteSettings
from evalsite.site.tables import Link


@dataclass(kw_only=True)
class ItemPage(PageContext):
    """``items/<dataset>/<bucket>.html``: a shell the browser fills from the runs' data scripts."""

    dataset: Link = doc("The dataset's leaderboard.")
    index: str = doc("Site-root-relative link to the dataset's item index.")
    bucket: str = doc("Which of the dataset's item buckets the page shows (:func:`evalsite.site.paths.item_bucket`).")
    runs_json: str = doc("The dataset's runs (excluded ones left out), newest first, as JSON: data folder, run id, link, arm, experiment and the label the diff picker gives its answers.")
    metadata: str | None = doc("Site-root-relative path of the bucket's metadata script (the dataset rows' metadata), if any item has metadata.")


@dataclass(kw_only=True)
class ItemIndexPage(PageContext):
    """``items/<dataset>/index.html``: every item of the dataset, drawn from its index's data scripts."""

    dataset: Link = doc("The dataset's leaderboard.")
    pages: list[Link] = doc("Every item page.")
    runs: int = doc("Runs on the dataset (excluded ones left out).")
    items: int = doc("Items in the index (every item the arms' newest runs have).")
    parts: list[str] = doc("Site-root-relative paths of the index's data scripts (:mod:`evalsite.site.itemindex`).")
    columns_json: str = doc("The index's columns as JSON: per arm, its label, the run it shows (the arm's newest run) and that run's link.")


def jobs(inputs: ProjectInputs, settings: SiteSettings) -> list[PageJob]:
    result = []
    for dataset_id, members in runs_by(inputs.runs, lambda run: run.header.dataset.dataset_id).items():
        keys = ["decisions", *(f"run:{r.run_id}" for r in members)]  # an exclusion takes a run off these pages
        keys += [f"dataset-file:{p}" for p in sorted({r.header.dataset.path for r in members if r.header.dataset.path})]
        result.append(PageJob(f"items:{dataset_id}", tuple(keys), _renderer(dataset_id, members),
                          figures=tuple(r.run_id for r in members), matrix_of=tuple(r.run_id for r in members)))
    return result


def _renderer(dataset_id: str, members: list[Run]) -> Callable[[Kit], dict[str, bytes]]:
    def render(kit: Kit) -> dict[str, bytes]:
        newest = sorted(kit.inputs.listed(members), key=lambda r: r.recency, reverse=True)  # excluded runs left out
        labels = _answer_labels(newest)
        runs_json = json.dumps([{
            "folder": paths.run_data_index(r.run_id).removesuffix("index.js"), "run": r.run_id, "href": paths.run(r.run_id),
            "arm": r.header.arm_id, "experiment": r.header.experiment, "label": labels[r.run_id],
            "buckets": "".join(kit.figures[r.run_id].buckets)} for r in newest], ensure_ascii=False)
        buckets = sorted({b for r in members for b in kit.figures[r.run_id].buckets})  # every run's item links lead somewhere
        metadata = _metadata_scripts(kit, dataset_id, sorted(members, key=lambda r: r.recency, reverse=True))
        dataset = Link(dataset_id, paths.dataset(dataset_id))
        index = paths.items_index(dataset_id)
        files: dict[str, bytes] = dict(metadata)
        for bucket in buckets:
            script = paths.item_metadata(dataset_id, bucket)
            files.update(kit.page(paths.item_page(dataset_id, bucket), "items.html", ItemPage(
                title=f"Items of {dataset_id}, page {bucket}", dataset=dataset, index=index, bucket=bucket,
                runs_json=runs_json, metadata=script if script in metadata else None)))
        pages = [Link(f"page {b}", paths.item_page(dataset_id, b)) for b in buckets]
        shown = [kit.matrix_parts[r.run_id] for r in _newest_per_arm(newest)]
        scripts = index_scripts(dataset_id, shown, redact=kit.settings.redact)
        files.update(scripts)
        columns_json = json.dumps([{"label": str(r.header.arm_id), "run": r.run_id, "href": paths.run(r.run_id)}
                                   for r in _newest_per_arm(newest)], ensure_ascii=False)
        files.update(kit.page(index, "item_index.html", ItemIndexPage(
            title=f"Items of {dataset_id}", dataset=dataset, pages=pages, runs=len(newest), parts=list(scripts),
            items=len({i for part in shown for i in part.column.item_ids}), columns_json=columns_json)))
        return files

    return render


def _newest_per_arm(newest: list[Run]) -> list[Run]:
    """The newest run of each arm (``newest`` is newest first), in that order: the item index's columns."""
    seen: dict[str | None, Run] = {}
    for run in newest:
        seen.setdefault(run.header.arm_id, run)
    return list(seen.values())


def _metadata_scripts(kit: Kit, dataset_id: str, runs: list[Run]) -> dict[str, bytes]:
    """The dataset rows' metadata by item bucket (from the newest run's dataset file that still
    matches), kept by the dataset files' contents: a new run on the same rows reads no dataset file."""
    if kit.settings.redact:
        return {}
    refs = list(dict.fromkeys((r.header.dataset.path, r.header.dataset.dataset_id, r.header.dataset.items) for r in runs))
    files = sorted({path for path, _, _ in refs if path})
    buckets: dict[str, dict[str, str]] = kit.inputs.kept_dataset_value(
        ["item-metadata", refs, kit.settings.max_field_chars], files, lambda: _metadata_by_bucket(kit, runs))
    return {paths.item_metadata(dataset_id, b): data_script(paths.item_metadata(dataset_id, b), found)
            for b, found in sorted(buckets.items())}


def _metadata_by_bucket(kit: Kit, runs: list[Run]) -> dict[str, dict[str, str]]:
    """Bucket → item id → the item's metadata as shown, from the runs' dataset rows (newest first)."""
    rows: dict[str, JSONObject] = {}
    for run in runs:
        rows.update({k: v for k, v in (kit.inputs.dataset_rows(run) or {}).items() if k not in rows})
    buckets: dict[str, dict[str, str]] = defaultdict(dict)
    for item_id, row in rows.items():
        metadata = row.get("metadata") if isinstance(row, dict) else None
        shown = display(metadata, kit.settings.max_field_chars) if metadata else None
        if shown is not None:
            buckets[paths.item_bucket(item_id)][item_id] = shown.text
    return dict(buckets)


def _answer_labels(runs: list[Run]) -> dict[str, str]:
    """Run id → how the diff picker names its answers: the arm, with its run's start when the arm has several runs."""
    arms: dict[str | None, int] = defaultdict(int)
    for run in runs:
        arms[run.header.arm_id] += 1
    return {run.run_id: str(run.header.arm_id) if arms[run.header.arm_id] == 1 else f"{run.header.arm_id} · {run.run_id[:16]}"
            for run in runs}
