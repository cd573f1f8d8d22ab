"""Where every page lives, relative to the site root: the one place that knows the site's URL scheme.

Templates prefix these with ``root`` (``../`` per folder level of the current page), so every link
is relative and the site works from file://, a sub-path on GitHub Pages, or any static server.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from collections.abc import Sequence
from functools import lru_cache

from evalsite.runlog.hashing import sha256_text

HOME = "index.html"
RUNS = "runs.html"
DECISIONS = "decisions.html"
JUDGES = "judges.html"
SEARCH_MANIFEST = "search/index.js"


MAX_SLUG = 100  # characters: two slugs and a suffix stay under the 255-byte file name limit
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def slug(text: str) -> str:
    """A file-name-safe form of an id (``arithmetic@1a2b`` → ``arithmetic-1a2b``). A long one (an
    imported dataset or experiment name can be any length) is cut and ends in a hash of the whole,
    so it stays unique and every file system accepts it."""
    safe = _UNSAFE.sub("-", str(text)).strip("-.") or "unnamed"
    if len(safe) <= MAX_SLUG:
        return safe
    return f"{safe[:MAX_SLUG - 13].rstrip('-.')}-{sha256_text(str(text))[:12]}"


def run(run_id: str) -> str:
    return f"runs/{slug(run_id)}.html"


def run_data(run_id: str, bucket: str, part: int) -> str:
    """Part ``part`` (from 0) of the run's cases whose items fall in ``bucket`` (:mod:`evalsite.site.casedata`)."""
    return f"data/runs/{slug(run_id)}/{bucket}-{part}.js"


def run_data_index(run_id: str) -> str:
    """Which buckets and parts the run's case data has."""
    return f"data/runs/{slug(run_id)}/index.js"


def dataset(dataset_id: str) -> str:
    return f"datasets/{slug(dataset_id)}.html"


def experiment(name: str) -> str:
    return f"experiments/{slug(name)}.html"


def matrix_data(name: str, part: int) -> str:
    """Part ``part`` (from 0) of the rows of an experiment's arm × item matrix, rendered on its page."""
    return f"data/experiments/{slug(name)}/matrix-{part}.js"


def compare(run_id: str, baseline_id: str) -> str:
    return f"compare/{slug(run_id)}--{slug(baseline_id)}.html"


def compare_data(run_id: str, baseline_id: str, part: str) -> str:
    """One part of a compare page's item rows (``changed-1``, ``unchanged-0``: the changed items
    beyond its HTML rows, the unchanged ones), a data script drawn into its table on request."""
    return f"data/compare/{slug(run_id)}--{slug(baseline_id)}.{part}.js"


def _bucket_of(item_id: str) -> str:
    """Which page of its dataset's item pages holds an item: two hex digits of a hash of its id, so any
    page can link an item without knowing the dataset's other items (at most 256 item pages a dataset)."""
    return hashlib.sha256(str(item_id).encode("utf-8")).hexdigest()[:2]


#: :func:`_bucket_of`, remembered (the pages of a build ask for the same items' buckets many times).
item_bucket = lru_cache(maxsize=1 << 18)(_bucket_of)


@lru_cache(maxsize=1 << 18)
def item_anchor(item_id: str) -> str:
    """The item's HTML id; ids that the slug changes get a hash suffix, so two ids never share one."""
    text = f"item-{item_id}"
    return text if slug(text) == text else f"{slug(text)}-{item_bucket(item_id)}{hashlib.sha256(text.encode()).hexdigest()[:6]}"


@lru_cache(maxsize=256)
def items_folder(dataset_id: str) -> str:
    """The folder of a dataset's item pages (ends in /)."""
    return f"items/{slug(dataset_id)}/"


def item_page(dataset_id: str, bucket: str) -> str:
    return f"{items_folder(dataset_id)}{bucket}.html"


def item(dataset_id: str, item_id: str) -> str:
    """The item's section on its item page: input, expected and every run's output."""
    return items(dataset_id, [item_id])[0]


def items(dataset_id: str, item_ids: list[str]) -> list[str]:
    """:func:`item` of each of ``item_ids`` (a page listing many items links them all), each id
    hashed once and no memo asked (:func:`item_buckets`, :func:`item_anchors`)."""
    folder = items_folder(dataset_id)
    return [f"{folder}{bucket}.html#{anchor}" for bucket, anchor in zip(item_buckets(item_ids), item_anchors(item_ids))]


def item_buckets(item_ids: list[str]) -> list[str]:
    """:func:`item_bucket` of each id, computed (a listing of 100,000 items asks its memo nothing)."""
    return list(map(_bucket_of, item_ids))


#: An id whose anchor is ``item-<id>``: the slug leaves it alone (safe characters, not ending in - or .).
_PLAIN_ID = re.compile(r"[A-Za-z0-9_.-]*[A-Za-z0-9_]")


def item_anchors(item_ids: Sequence[str]) -> list[str]:
    """:func:`item_anchor` of each id: ``item-<id>`` without a slug or a memo for an id the slug
    leaves alone, :func:`item_anchor` for any other."""
    plain, longest = _PLAIN_ID.fullmatch, MAX_SLUG - len("item-")
    return [f"item-{item_id}" if len(item_id) <= longest and plain(item_id) else item_anchor(item_id) for item_id in item_ids]


def item_metadata(dataset_id: str, bucket: str) -> str:
    """The dataset rows' metadata of one item bucket, a data script read by its item page."""
    return f"data/items/{slug(dataset_id)}/{bucket}.js"


def item_texts(dataset_id: str, bucket: str, content_hash: str) -> str:
    """The input and expected texts of one item bucket as a run shows them, named by a hash of its
    content, so the runs of a dataset that show the same texts share one file (:mod:`evalsite.site.casedata`)."""
    return f"data/items/{slug(dataset_id)}/texts/{bucket}-{content_hash}.js"


#: Item texts files are content-addressed: several pages may write one, with the same bytes.
SHARED_FILES = re.compile(r"data/items/[^/]+/texts/[0-9a-f]{2}-[0-9a-f]{16}\.js")


def items_index(dataset_id: str) -> str:
    return f"items/{slug(dataset_id)}/index.html"


def search_shard(name: str) -> str:
    """A script of search documents (loaded as a script so search also works from file://)."""
    return f"search/{slug(name)}.js"


def report(name: str) -> str:
    return f"reports/{slug(name)}.html"


def root_of(page: str) -> str:
    """The prefix that leads from ``page`` back to the site root."""
    return "../" * page.count("/")


def relative(page: str, target: str) -> str:
    """``target`` (site-root relative) as seen from ``page``."""
    return posixpath.relpath(target, posixpath.dirname(page) or ".")


def item_index_data(dataset_id: str, part: int) -> str:
    """Part ``part`` (from 0) of a dataset's item index rows, read by ``items/<dataset>/index.html``."""
    return f"data/items/{slug(dataset_id)}/index-{part}.js"
