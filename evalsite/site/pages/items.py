"""Item pages: ``items/<dataset>/<bucket>.html``, every item of a dataset across every run on it.

An item's section shows its input, expected value and dataset metadata, then each run's output,
score, verdict, latency, tokens and cost for every repeat, and a picker that diffs any two outputs
(in the browser, over the outputs already on the page). Items are spread over at most 256 pages by a
hash of their id (:func:`evalsite.site.paths.item_bucket`), so every other page can link an item
without reading the dataset. The same job writes the dataset's search documents
(:mod:`evalsite.site.pages.search` lists them).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import defaultdict
from dataclasses import dataclass

from evalsite.runlog.rows import item_order
from evalsite.runlog.store import CASES_FILE, Run, read_cases
from evalsite.site import paths
from evalsite.site.inputs import ProjectInputs
from evalsite.site.pages import Job, Kit, PageContext, doc
from evalsite.site.pages.common import runs_by
from evalsite.site.pages.runs import CaseRow, case_row
from evalsite.site.settings import SiteSettings
from evalsite.site.tables import Link
from evalsite.site.text import ShownText, display

#: Items per search script: a script stays well under a megabyte with ten arms' outputs per item.
SEARCH_ITEMS_PER_SHARD = 1000
#: An item's search text (input, expected, distinct outputs) is cut to this many characters.
SEARCH_TEXT_CHARS = 4000
#: Listed one by one on the dataset's item index up to this many; past it the index lists pages.
INDEX_ITEMS = 5000


@dataclass(kw_only=True)
class ItemRun:
    """One run's answers to an item."""

    run: Link = doc("The run.")
    arm: str = doc("The run's arm id.")
    experiment: str | None = doc("The run's experiment.")
    label: str = doc("How the diff picker names this run's output (arm, run id, repeat).")
    cases: list[CaseRow] = doc("One row per repeat (texts cut to max_field_chars; outputs absent when redacted).")


@dataclass(kw_only=True)
class ItemView:
    """One item across every run of its dataset."""

    item_id: str = doc("The item id.")
    anchor: str = doc("HTML id of the item's section.")
    input: ShownText | None = doc("What the target received (from the newest run that recorded it).")
    expected: ShownText | None = doc("The expected value.")
    metadata: ShownText | None = doc("The dataset row's metadata, when the dataset file still matches.")
    runs: list[ItemRun] = doc("Every run that has the item, newest first.")


@dataclass(kw_only=True)
class ItemPage(PageContext):
    """``items/<dataset>/<bucket>.html``."""

    dataset: Link = doc("The dataset's leaderboard.")
    index: str = doc("Site-root-relative link to the dataset's item index.")
    items: list[ItemView] = doc("The items on this page, in natural order.")


@dataclass(kw_only=True)
class ItemIndexPage(PageContext):
    """``items/<dataset>/index.html``: every item (or every item page, for a large dataset)."""

    dataset: Link = doc("The dataset's leaderboard.")
    items: list[Link] = doc("Every item with its link (empty past 5,000 items).")
    pages: list[Link] = doc("Every item page, when items are too many to list.")
    total: int = doc("Items in the dataset's runs.")


def jobs(inputs: ProjectInputs, settings: SiteSettings) -> list[Job]:
    result = []
    for dataset_id, members in runs_by(inputs.runs, lambda run: run.header.dataset.dataset_id).items():
        keys = [f"run:{r.run_id}" for r in members]
        keys += [f"dataset-file:{p}" for p in sorted({r.header.dataset.path for r in members if r.header.dataset.path})]
        result.append(Job(f"items:{dataset_id}", tuple(keys), _renderer(dataset_id, members)))
    return result


def search_shards(members: list[Run]) -> int:
    """How many search scripts a dataset's items are spread over (from the run headers, so the search
    manifest knows them without reading cases)."""
    items = max((r.header.dataset.items for r in members if isinstance(r.header.dataset.items, int)), default=0)
    return max(1, math.ceil(items / SEARCH_ITEMS_PER_SHARD))


def search_shard_name(dataset_id: str, number: int) -> str:
    return f"items-{dataset_id}-{number}"


def _renderer(dataset_id: str, members: list[Run]):
    def render(kit: Kit) -> dict[str, bytes]:
        views = _item_views(kit, sorted(members, key=lambda r: r.recency, reverse=True))
        buckets: dict[str, list[ItemView]] = defaultdict(list)
        for view in views:
            buckets[paths.item_bucket(view.item_id)].append(view)
        dataset = Link(dataset_id, paths.dataset(dataset_id))
        index = paths.items_index(dataset_id)
        files: dict[str, bytes] = {}
        for bucket, chosen in sorted(buckets.items()):
            title = f"Item {chosen[0].item_id}" if len(chosen) == 1 else f"Items {chosen[0].item_id} … {chosen[-1].item_id}"
            files.update(kit.page(paths.item_page(dataset_id, bucket), "items.html",
                                  ItemPage(title=title, dataset=dataset, index=index, items=chosen)))
        listed = [Link(v.item_id, paths.item(dataset_id, v.item_id)) for v in views] if len(views) <= INDEX_ITEMS else []
        pages = [] if listed else [Link(f"page {b} ({len(v)} items)", paths.item_page(dataset_id, b)) for b, v in sorted(buckets.items())]
        files.update(kit.page(index, "item_index.html", ItemIndexPage(
            title=f"Items of {dataset_id}", dataset=dataset, items=listed, pages=pages, total=len(views))))
        files.update(_search_files(dataset_id, members, views, kit.settings.redact))
        return files

    return render


#: The case fields an item page reads; the rest of each case is dropped as its run is read.
ITEM_FIELDS = ("item_id", "repeat", "input", "expected", "output", "score", "passed", "scores", "latency_ms",
               "input_tokens", "output_tokens", "cost_usd", "error", "finish_reason")


def _item_views(kit: Kit, runs: list[Run]) -> list[ItemView]:
    answers: dict[str, list[ItemRun]] = defaultdict(list)
    texts: dict[str, dict] = {}
    labels = _answer_labels(runs)
    rows: dict[str, dict] = {}
    for run in runs:
        by_item: dict[str, list[CaseRow]] = defaultdict(list)
        for case in read_cases(run.directory / CASES_FILE):
            item_id = str(case.get("item_id"))
            by_item[item_id].append(case_row(case, None, kit.settings))
            texts.setdefault(item_id, {key: case.get(key) for key in ITEM_FIELDS})
        for item_id, cases in by_item.items():
            cases.sort(key=lambda c: c.repeat)
            answers[item_id].append(ItemRun(run=Link(run.run_id, paths.run(run.run_id)), arm=run.header.arm_id,
                                            experiment=run.header.experiment, label=labels[run.run_id], cases=cases))
        rows.update({k: v for k, v in (kit.inputs.dataset_rows(run) or {}).items() if k not in rows})
    limit, redact = kit.settings.max_field_chars, kit.settings.redact
    views = []
    for item_id in sorted(answers, key=item_order):
        first, metadata = texts[item_id], (rows.get(item_id) or {}).get("metadata")
        views.append(ItemView(
            item_id=item_id, anchor=paths.item_anchor(item_id),
            input=None if redact else display(first.get("input"), limit),
            expected=None if redact else display(first.get("expected"), limit),
            metadata=None if redact or not metadata else display(metadata, limit),
            runs=answers[item_id],
        ))
    return views


def _answer_labels(runs: list[Run]) -> dict[str, str]:
    """Run id → how the diff picker names its answers: the arm, with its run's start when the arm has several runs."""
    arms: dict[str | None, int] = defaultdict(int)
    for run in runs:
        arms[run.header.arm_id] += 1
    return {run.run_id: str(run.header.arm_id) if arms[run.header.arm_id] == 1 else f"{run.header.arm_id} · {run.run_id[:16]}"
            for run in runs}


def _search_files(dataset_id: str, members: list[Run], views: list[ItemView], redact: bool) -> dict[str, bytes]:
    """The dataset's search documents, one per item: its id, input, expected and distinct outputs."""
    count = search_shards(members)
    shards: list[list[dict]] = [[] for _ in range(count)]
    for view in views:
        parts = [] if redact else [t.text for t in (view.input, view.expected) if t is not None]
        outputs = [] if redact else [c.output.text for r in view.runs for c in r.cases if c.output is not None]
        text = " ".join(dict.fromkeys([*parts, *outputs]))[:SEARCH_TEXT_CHARS]
        shard = int(hashlib.sha256(view.item_id.encode()).hexdigest()[:8], 16) % count
        shards[shard].append({"kind": "item", "title": view.item_id, "where": dataset_id, "text": text,
                              "url": paths.item(dataset_id, view.item_id)})
    return {paths.search_shard(search_shard_name(dataset_id, n)): search_script(docs) for n, docs in enumerate(shards)}


def search_script(docs: list[dict]) -> bytes:
    """Documents as a script that hands them to the page's search (``search.js``); ``<`` is escaped so
    no text can close a script element."""
    payload = json.dumps(docs, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")
    return f"window.evalsiteSearch&&window.evalsiteSearch.add({payload});\n".encode()
