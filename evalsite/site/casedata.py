"""A run's cases as compact data scripts the browser renders: the run page's case listing, the item
pages and the search read them; nothing else carries a case's text.

Each run writes ``data/runs/<run>/index.js`` (which buckets it has and in how many parts) and
``data/runs/<run>/<bucket>-<part>.js``: its cases grouped by :func:`evalsite.site.paths.item_bucket`,
so an item page (one bucket of a dataset) loads exactly the part of each run that holds its items.
A part is columnar JSON with one table of shared strings (an evaluator's detail, a repeated input
or output is stored once a part). The files are scripts, not JSON fetched by the page, so they load
from ``file://`` as from any static host; ``static/data.js`` decodes them.

Texts are cut to ``max_field_chars`` with the omitted length kept, and left out when redacting; the
cut ones are also kept whole (up to :data:`WHOLE_FACTOR` times that) in a ``.whole.js`` script beside
their part, loaded only when the reader asks to see one whole.
A case with a conversation (:mod:`evalsite.site.transcripts`) carries it as one JSON text (``tr``).

An item's input and expected value are the same in every run of a dataset that asked it the same way,
so with ``item_texts`` a run writes them once per item bucket, in ``data/items/<dataset>/texts/<bucket>-<hash>.js``
(:func:`evalsite.site.paths.item_texts`: ``{"v": 1, "items": {item id: [input, expected]}}``, named by a
hash of its content): runs showing the same texts write the same file, which the site holds once. A
case whose text is that of its item's entry has :data:`ITEM_TEXT` in its ``in`` or ``exp`` column and
its part names the file (``it``); a text that differs from the entry (another repeat asked differently)
or was cut stays in the part. The run's scripts still depend only on the run.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any, TypeVar

import numpy as np
import orjson

from evalsite.analysis.case_columns import FALSE, NONE, TRUE, CaseColumns, natural_order
from evalsite.analysis.case_texts import CaseTexts
from evalsite.runlog.hashing import sha256_text
from evalsite.site import paths
from evalsite.site.safe_text import display
from evalsite.site.transcripts import conversation

FORMAT = 1
#: A text cut to ``max_field_chars`` is kept whole, up to this many times that, in the part's
#: ``<bucket>-<n>.whole.js``, which a page loads only when the reader asks for the whole text.
WHOLE_FACTOR = 50
#: In a part's ``in`` or ``exp`` column: the text is the item's, in the bucket's item texts file (``it``).
ITEM_TEXT = -1
STATUSES = ("passed", "failed", "errored", "unscored")


#: The strings of a case in its part's string table, in the order the table first lists them: the
#: item id, its input, expected value and output as shown, its error, finish reason, cache and
#: conversation, each score's label, detail and error (:data:`SCORE_SLOTS` a score), and its anchor.
CASE_SLOTS = 8
SCORE_SLOTS = 3
#: The smallest size of a float (but zero) orjson writes as ``json`` does (:func:`_written_alike`).
SMALLEST_ALIKE = 1e-4


@dataclass(frozen=True)
class RunData:
    """What a run's data job writes, and the counts its page shows beside the listing."""

    files: dict[str, bytes]
    counts: dict[str, int]


def run_data(run_id: str, columns: CaseColumns, texts: CaseTexts, *, limit: int, redact: bool, item_pages: bool,
             part_chars: int, item_texts: str | None = None) -> RunData:
    """The run's data scripts (index and parts) and its cases counted by filter, from its columns
    (critical flags filled in from its dataset where the cases did not record them) and texts. A
    part is closed once its texts hold about ``part_chars`` characters ([site] page_budget_kb), so a
    bucket of a very large run, or of one with long outputs, never makes one large file. With
    ``item_texts`` (the run's dataset id) the items' inputs and expected values go to the dataset's
    shared item texts files instead of the parts. Every field is taken for all cases at once, in
    the listing's order (:class:`_Listing`); a part picks its cases' entries and numbers its strings."""
    listing = _Listing(columns, texts, limit=limit, redact=redact, item_pages=item_pages, share=item_texts is not None)
    shared = {bucket: _item_texts_file(item_texts, bucket, found) for bucket, found in listing.shared.items()
              if item_texts is not None}
    files = {path: script for path, script in shared.values()}
    parts: dict[str, int] = {}
    for bucket, positions in listing.buckets().items():
        chunks = listing.chunks(positions, part_chars)
        parts[bucket] = len(chunks)
        for n, chunk in enumerate(chunks):
            path = paths.run_data(run_id, bucket, n)
            payload, whole = listing.part(chunk, shared[bucket][0] if bucket in shared else None)
            files[path] = json_script(path, _fast_json(payload, listing.float_fields))
            if whole:
                files[whole_path(path)] = data_script(whole_path(path), {"v": FORMAT, "rows": whole})
    counts = listing.counts()
    index = {"v": FORMAT, "parts": dict(sorted(parts.items())), "counts": counts}
    files[paths.run_data_index(run_id)] = data_script(paths.run_data_index(run_id), index)
    return RunData(files, counts)


def _item_texts_file(dataset_id: str, bucket: str, found: tuple[dict[str, str], dict[str, str]]) -> tuple[str, bytes]:
    """The bucket's item texts file: its path (named by a hash of its content) and its bytes."""
    inputs, expected = found
    items = {item_id: [inputs.get(item_id), expected.get(item_id)] for item_id in sorted(inputs.keys() | expected.keys())}
    payload = _fast_json({"v": FORMAT, "items": items})
    path = paths.item_texts(dataset_id, bucket, sha256_text(payload)[:16])
    return path, json_script(path, payload)


def _anchors(item_ids: Sequence[str]) -> list[str | None]:
    """Each item's anchor on its item page when it is not ``item-<id>`` (which the browser derives)."""
    return [None if anchor == f"item-{item_id}" else anchor for item_id, anchor in zip(item_ids, paths.item_anchors(item_ids))]


#: A cut text: the characters left out, and ``[text, omitted]`` whole up to :data:`WHOLE_FACTOR` times the limit.
Cut = tuple[int, list[Any]]
T = TypeVar("T")


class _Listing:
    """A run's cases in the listing's order (natural item order, then repeat: a case's *position*),
    each field one list over every case, and every case's strings as one row of ``slots``
    (:data:`CASE_SLOTS`, then :data:`SCORE_SLOTS` for each score up to the most a case has, then
    the anchor): a part's string table is the first appearances in its rows, read row by row."""

    def __init__(self, columns: CaseColumns, texts: CaseTexts, *, limit: int, redact: bool, item_pages: bool,
                 share: bool) -> None:
        order = natural_order(columns)
        self.rows: list[int] = order.tolist()
        self.size = len(self.rows)
        position_of = np.empty(self.size, dtype=np.int64)
        position_of[order] = np.arange(self.size)
        codes = columns.item[order].tolist()
        self.item_ids = [columns.item_ids[code] for code in codes]
        bucket_of = {item_id: paths.item_bucket(item_id) for item_id in columns.item_ids}
        self.bucket = [bucket_of[item_id] for item_id in self.item_ids]
        anchors = _anchors(columns.item_ids) if item_pages else [None] * len(columns.item_ids)
        self.anchors = [anchors[code] for code in codes]
        error, passed, critical = columns.error[order], columns.passed[order], columns.critical[order]
        self.status: list[int] = np.where(error, 2, np.where(passed == TRUE, 0, np.where(passed == FALSE, 1, 3))).tolist()
        self.critical = [None if flag == NONE else flag for flag in critical.tolist()]
        self.cuts: dict[str, dict[int, Cut]] = {}
        self.fields: dict[str, list[Any]] = {"rep": columns.repeat[order].tolist()}
        for key, values in (("in", texts.input), ("exp", texts.expected), ("out", texts.output)):
            self.fields[key], self.cuts[key] = _shown([values[row] for row in self.rows], limit, redact)
        self.fields.update(score=_optional(columns.score[order]), lat=_optional(columns.latency_ms[order]),
                           tin=_whole(columns.input_tokens[order]), tout=_whole(columns.output_tokens[order]),
                           cost=_optional(columns.cost_usd[order]))
        self.fields["err"] = [None if texts.error[row] is None else str(texts.error[row])[:limit] for row in self.rows]
        self.fields["fin"] = [None if texts.finish_reason[row] in (None, "stop") else texts.finish_reason[row]
                              for row in self.rows]
        self.fields["cache"] = [texts.cache[row] if isinstance(texts.cache[row], str) else None for row in self.rows]
        self.fields["tr"] = [None] * self.size
        for row, line in ({} if redact else texts.records).items():
            messages = conversation(line, limit)
            if messages is not None:
                self.fields["tr"][position_of[row]] = json.dumps(messages, ensure_ascii=False, sort_keys=True)
        #: bucket → (item id → input, item id → expected) as shown, for the item texts files
        self.shared: dict[str, tuple[dict[str, str], dict[str, str]]] = {}
        if share:
            for slot, key in enumerate(("in", "exp")):
                self._share(key, slot, bucket_of)
        self.scores = _Scores(columns, texts, position_of, limit=limit, redact=redact)
        self.slots = self._slots()
        floats = {"score": columns.score, "lat": columns.latency_ms, "cost": columns.cost_usd, "sc": columns.scores.score}
        #: the fields :func:`_fast_json` writes by :func:`_json` (the rest as orjson writes them alike)
        self.float_fields = frozenset(key for key, values in floats.items() if not _written_alike(values))

    def _share(self, key: str, slot: int, bucket_of: dict[str, str]) -> None:
        """Each item's entry (the text its first case shows whole) into ``shared``, and :data:`ITEM_TEXT`
        for the cases showing their item's entry."""
        shown, cut, ids = self.fields[key], self.cuts[key], self.item_ids
        first = dict(reversed([(ids[p], text) for p, text in enumerate(shown) if text is not None and p not in cut]))
        for item_id, text in first.items():
            self.shared.setdefault(bucket_of[item_id], ({}, {}))[slot][item_id] = text
        self.fields[key] = [ITEM_TEXT if text is not None and p not in cut and first[ids[p]] == text else text
                            for p, text in enumerate(shown)]

    def _slots(self) -> np.ndarray:
        table = np.full((self.size, CASE_SLOTS + SCORE_SLOTS * self.scores.most + 1), None, dtype=object)
        texts = [[value if isinstance(value, str) else None for value in self.fields[key]] for key in ("in", "exp")]
        for column, values in enumerate((self.item_ids, *texts, *(self.fields[key] for key in ("out", "err", "fin", "cache", "tr")))):
            table[:, column] = _objects(values)
        for slot, values in enumerate(self.scores.strings):
            table[self.scores.position, CASE_SLOTS + SCORE_SLOTS * self.scores.rank + slot] = _objects(values)
        table[:, -1] = _objects(self.anchors)
        return table

    def buckets(self) -> dict[str, list[int]]:
        """Bucket → the positions of its cases."""
        found: dict[str, list[int]] = defaultdict(list)
        for position, bucket in enumerate(self.bucket):
            found[bucket].append(position)
        return found

    def chunks(self, positions: list[int], part_chars: int) -> list[list[int]]:
        """``positions`` split into parts: a case starts a new part when the strings its part holds
        already come to more than ``part_chars`` characters."""
        unique = set(self.slots[positions].ravel().tolist())
        unique.discard(None)
        if sum(map(len, unique)) <= part_chars:
            return [positions]
        chunks: list[list[int]] = [[]]
        seen: set[str] = set()
        chars = 0
        for position, strings in zip(positions, self.slots[positions].tolist()):
            if chars > part_chars:
                chunks.append([])
                seen, chars = set(), 0
            chunks[-1].append(position)
            for text in strings:
                if text is not None and text not in seen:
                    seen.add(text)
                    chars += len(text)
        return chunks

    def part(self, positions: list[int], item_texts: str | None) -> tuple[dict[str, Any], dict[int, dict[str, list[Any]]]]:
        """The payload of the part holding the cases at ``positions``, and its cut texts whole (row → field → [text, omitted])."""
        table = dict.fromkeys(self.slots[positions].ravel().tolist())
        table.pop(None, None)
        strings = list(table)
        get = dict(zip(strings, range(len(strings)))).get
        pick = _picker(positions)

        def numbered(values: list[Any]) -> list[Any]:  # a string's index; None and ITEM_TEXT as they are
            picked = pick(values)
            return list(map(get, picked, picked))

        cut, whole = self._cut(positions)
        fields = self.fields
        columns = {
            "item": numbered(self.item_ids), "ord": list(positions), "rep": pick(fields["rep"]), "st": pick(self.status),
            "crit": pick(self.critical), **{key: numbered(fields[key]) for key in ("in", "exp", "out")},
            **{key: pick(fields[key]) for key in ("score", "lat", "tin", "tout", "cost")},
            **{key: numbered(fields[key]) for key in ("err", "fin", "cache", "tr")},
            "sc": self.scores.of(pick(self.rows), get), "anc": numbered(self.anchors),
        }
        shared = {"it": item_texts} if item_texts is not None else {}
        return {"v": FORMAT, "s": strings, "ev": self.scores.evaluators, "cut": cut, "wh": int(bool(whole)), **shared,
                **columns}, whole

    def _cut(self, positions: list[int]) -> tuple[dict[str, list[int]], dict[int, dict[str, list[Any]]]]:
        """A part's cut texts: field → [row, omitted, …], and row → field → [text whole, omitted]."""
        cut: dict[str, list[int]] = {}
        whole: dict[int, dict[str, list[Any]]] = {}
        if not any(self.cuts.values()):
            return cut, whole
        for index, position in enumerate(positions):
            for key, found in self.cuts.items():
                if position in found:
                    cut.setdefault(key, []).extend((index, found[position][0]))
                    whole.setdefault(index, {})[key] = found[position][1]
        return cut, whole

    def counts(self) -> dict[str, int]:
        """The cases by filter: all, by status, critical."""
        by_status = np.bincount(np.asarray(self.status, dtype=np.int64), minlength=len(STATUSES)).tolist()
        return {"all": self.size, **dict(zip(STATUSES, by_status)), "critical": self.critical.count(TRUE)}


class _Scores:
    """Every score's entries, in the order of the run's scores: evaluator (an index into the sorted
    ``evaluators``), score, verdict and skipped, and its label, detail (as shown) and error strings."""

    def __init__(self, columns: CaseColumns, texts: CaseTexts, position_of: np.ndarray, *, limit: int, redact: bool) -> None:
        s = columns.scores
        self.evaluators = sorted(set(s.evaluators))
        ev_index = [self.evaluators.index(name) for name in s.evaluators]
        starts = np.searchsorted(s.case, np.arange(columns.size + 1))
        self.bounds = starts  # case i's scores: bounds[i]:bounds[i + 1]
        self.most = int(np.diff(starts).max()) if columns.size else 0
        self.position, self.rank = position_of[s.case], np.arange(s.case.size) - starts[s.case]
        self.evaluator = [ev_index[code] for code in s.evaluator.tolist()]
        self.score, self.skipped = _optional(s.score), s.skipped.astype(np.int64).tolist()
        self.passed = [None if verdict == NONE else verdict for verdict in s.passed.tolist()]
        labels = [None if label < 0 else s.labels[label] for label in s.label.tolist()]
        errors = [None if error is None else str(error)[:limit] for error in texts.score_error]
        self.strings = (labels, _shown(texts.detail, limit, redact)[0], errors)

    def of(self, rows: list[int], number: Callable[[str | None], int | None]) -> list[list[list[Any]]]:
        """The scores of the cases at ``rows``, each case's as a list of ``[evaluator, score, passed,
        label, detail, error, skipped]``, strings numbered (``number``: a string's index)."""
        starts, ends = self.bounds[rows], self.bounds[np.asarray(rows, dtype=np.int64) + 1]
        counts = ends - starts
        if not counts.sum():
            return [[] for _ in rows]
        at = _picker((np.arange(counts.sum()) + np.repeat(starts - np.cumsum(counts) + counts, counts)).tolist())
        labels, details, errors = (at(strings) for strings in self.strings)
        entries = list(map(list, zip(at(self.evaluator), at(self.score), at(self.passed), map(number, labels),
                                     map(number, details), map(number, errors), at(self.skipped))))
        cut = np.cumsum(counts).tolist()
        return [entries[end - count:end] for end, count in zip(cut, counts.tolist())]


def _shown(values: list[Any], limit: int, redact: bool) -> tuple[list[str | None], dict[int, Cut]]:
    """Each value as shown (:func:`~evalsite.site.safe_text.display`, cut to ``limit``), and the cut ones by index."""
    if redact:
        return [None] * len(values), {}
    shown: list[str | None] = [value if type(value) is str and len(value) <= limit else None for value in values]
    cuts: dict[int, Cut] = {}
    for index in [n for n, value in enumerate(values) if value is not None and shown[n] is None]:
        found = display(values[index], limit)
        assert found is not None
        shown[index] = found.text
        if found.omitted:
            whole = display(values[index], limit * WHOLE_FACTOR)
            assert whole is not None
            cuts[index] = (found.omitted, [whole.text, whole.omitted])
    return shown, cuts


def _objects(values: list[Any]) -> np.ndarray:
    """``values`` (strings and None) as an object array holding the same objects."""
    array = np.empty(len(values), dtype=object)
    array[:] = values
    return array


def _picker(positions: list[int]) -> Callable[[list[T]], list[T]]:
    """A function taking the entries at ``positions`` from a list over every case."""
    if len(positions) == 1:
        only = positions[0]
        return lambda values: [values[only]]
    get = itemgetter(*positions)
    return lambda values: list(get(values))


def _optional(values: np.ndarray) -> list[float | None]:
    """Each value, None where there is none (NaN)."""
    return [None if value != value else value for value in values.tolist()]


def _written_alike(values: np.ndarray) -> bool:
    """Whether orjson writes each of these floats (NaN standing for None) as :func:`_json` does:
    the same shortest digits, in the same form, but for a size below 1e-4 other than zero (orjson
    ``0.00001`` or ``1e-7``, ``json`` ``1e-05``, ``1e-07``) and infinities (orjson ``null``, ``json``
    refuses them); tests/test_site_run_data.py holds it over random bit patterns."""
    sizes = np.abs(values[~np.isnan(values)])
    return bool(np.isfinite(sizes).all() and not ((sizes > 0) & (sizes < SMALLEST_ALIKE)).any())


def _whole(values: np.ndarray) -> list[int | None]:
    """Each count as an integer, None where there is none (NaN)."""
    return [None if value != value else int(value) for value in values.tolist()]


def whole_path(part_path: str) -> str:
    """Where a part's whole texts are: ``<bucket>-<n>.whole.js`` beside ``<bucket>-<n>.js``."""
    return part_path.removesuffix(".js") + ".whole.js"


def data_script(key: str, payload: Any) -> bytes:
    """``payload`` as a script handing it to ``static/data.js`` under ``key`` (its path without
    ``.js``). ``<`` is escaped so no text can end a script element; the file is data, never markup."""
    return json_script(key, _json(payload))


def _json(payload: Any) -> str:
    """The compact JSON of every data script."""
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _fast_json(payload: dict[str, Any], float_fields: frozenset[str] = frozenset()) -> str:
    """:func:`_json` of ``payload`` by orjson, ~4x faster, whose text is the same for strings, integers
    and null; its ``float_fields`` (those that may hold a float orjson writes otherwise: ``1e-05`` as
    ``0.00001``, :func:`_written_alike`) by :func:`_json` itself. A payload orjson refuses
    (an integer past 64 bits, a lone surrogate) is written, or refused, by :func:`_json` whole."""
    try:
        return orjson.dumps({key: orjson.Fragment(_json(value)) if key in float_fields else value
                             for key, value in payload.items()}).decode()
    except orjson.JSONEncodeError:
        return _json(payload)


def json_script(key: str, text: str) -> bytes:
    """:func:`data_script` of a payload already written as JSON text (compact, as ``data_script`` writes it)."""
    escaped = text.replace("<", "\\u003c")
    return f"evalsiteData({json.dumps(key.removesuffix('.js'))},{escaped});\n".encode()
