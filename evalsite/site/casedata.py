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
from dataclasses import dataclass, field
from typing import Any

import numpy as np

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


@dataclass
class _Part:
    """The columns of one part under construction."""

    strings: dict[str, int] = field(default_factory=dict)
    columns: dict[str, list[Any]] = field(default_factory=lambda: defaultdict(list))
    cut: dict[str, list[int]] = field(default_factory=dict)
    whole: dict[int, dict[str, Any]] = field(default_factory=dict)  # row → the cut texts, whole
    chars: int = 0

    def text(self, value: str | None) -> int | None:
        if value is None:
            return None
        if value not in self.strings:
            self.strings[value] = len(self.strings)
            self.chars += len(value)
        return self.strings[value]

    def payload(self, evaluators: list[str], item_texts: str | None) -> dict[str, Any]:
        texts = {"it": item_texts} if item_texts is not None else {}
        return {"v": FORMAT, "s": list(self.strings), "ev": evaluators, "cut": self.cut, "wh": int(bool(self.whole)),
                **texts, **self.columns}


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
    shared item texts files instead of the parts."""
    scores = columns.scores
    evaluators = sorted(set(scores.evaluators))
    ev_index = [evaluators.index(name) for name in scores.evaluators]
    bounds = np.searchsorted(scores.case, np.arange(columns.size + 1)).tolist()  # case i's scores: bounds[i]:bounds[i + 1]
    rows = _Rows(columns, texts, ev_index, limit, redact, item_texts is not None)
    buckets = [paths.item_bucket(item_id) for item_id in columns.item_ids]
    anchors = [_anchor(item_id) if item_pages else None for item_id in columns.item_ids]
    parts: dict[str, list[_Part]] = defaultdict(lambda: [_Part()])
    counts = dict.fromkeys(("all", *STATUSES, "critical"), 0)
    items = columns.item.tolist()
    for position, row in enumerate(natural_order(columns).tolist()):
        code = items[row]
        part = parts[buckets[code]][-1]
        if part.chars > part_chars:
            part = _Part()
            parts[buckets[code]].append(part)
        status, is_critical = rows.add(part, row, position, range(bounds[row], bounds[row + 1]), anchors[code],
                                       rows.shared[buckets[code]] if rows.share else None)
        counts["all"] += 1
        counts[status] += 1
        counts["critical"] += is_critical == TRUE
    shared = {bucket: _item_texts_file(item_texts, bucket, found) for bucket, found in rows.shared.items()
              if (found[0] or found[1]) and item_texts is not None}
    files = {path: script for path, script in shared.values()}
    files.update({paths.run_data(run_id, bucket, n): data_script(
        paths.run_data(run_id, bucket, n), part.payload(evaluators, shared[bucket][0] if bucket in shared else None))
        for bucket, chunks in parts.items() for n, part in enumerate(chunks)})
    files.update({whole_path(paths.run_data(run_id, bucket, n)): data_script(whole_path(paths.run_data(run_id, bucket, n)),
                                                                            {"v": FORMAT, "rows": part.whole})
                  for bucket, chunks in parts.items() for n, part in enumerate(chunks) if part.whole})
    index = {"v": FORMAT, "parts": {bucket: len(chunks) for bucket, chunks in sorted(parts.items())}, "counts": counts}
    files[paths.run_data_index(run_id)] = data_script(paths.run_data_index(run_id), index)
    return RunData(files, counts)


def _item_texts_file(dataset_id: str, bucket: str, found: tuple[dict[str, str], dict[str, str]]) -> tuple[str, bytes]:
    """The bucket's item texts file: its path (named by a hash of its content) and its bytes."""
    inputs, expected = found
    items = {item_id: [inputs.get(item_id), expected.get(item_id)] for item_id in sorted(inputs.keys() | expected.keys())}
    payload = json.dumps({"v": FORMAT, "items": items}, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    path = paths.item_texts(dataset_id, bucket, sha256_text(payload)[:16])
    return path, json_script(path, payload)


def _anchor(item_id: str) -> str | None:
    """The item's anchor on its item page when it is not ``item-<id>`` (which the browser derives)."""
    anchor = paths.item_anchor(item_id)
    return None if anchor == f"item-{item_id}" else anchor


class _Rows:
    """A run's columns and texts as lists, appended case by case to parts."""

    def __init__(self, columns: CaseColumns, texts: CaseTexts, ev_index: list[int], limit: int, redact: bool,
                 share: bool) -> None:
        self.item_ids, self.texts, self.limit, self.redact, self.share = columns.item_ids, texts, limit, redact, share
        #: bucket → (item id → input, item id → expected) as shown, for the item texts files (two
        #: dicts of strings, not a list per item: a million small lists would burden the cycle collector).
        self.shared: dict[str, tuple[dict[str, str], dict[str, str]]] = defaultdict(lambda: ({}, {}))
        self.item, self.repeat, self.error = columns.item.tolist(), columns.repeat.tolist(), columns.error.tolist()
        self.passed, self.critical = columns.passed.tolist(), columns.critical.tolist()
        self.figures = {name: _optional(getattr(columns, name)) for name in ("score", "latency_ms", "cost_usd")}
        self.tokens = {name: _whole(getattr(columns, name)) for name in ("input_tokens", "output_tokens")}
        s = columns.scores
        self.evaluator, self.score, self.verdict = s.evaluator.tolist(), _optional(s.score), s.passed.tolist()
        self.label, self.skipped, self.ev_index, self.labels = s.label.tolist(), s.skipped.tolist(), ev_index, s.labels

    def add(self, part: _Part, row: int, position: int, scores: range, anchor: str | None,
            shared: tuple[dict[str, str], dict[str, str]] | None) -> tuple[str, int]:
        """Append case ``row`` to ``part``'s columns; its status and critical flag (1, 0, -1: unknown)."""
        columns, text, texts, limit = part.columns, part.text, self.texts, self.limit
        index = len(columns["item"])
        passed = self.passed[row]
        status = "errored" if self.error[row] else "passed" if passed == TRUE else "failed" if passed == FALSE else "unscored"
        critical = self.critical[row]
        item_id = self.item_ids[self.item[row]]
        columns["item"].append(text(item_id))
        columns["ord"].append(position)
        columns["rep"].append(self.repeat[row])
        columns["st"].append(STATUSES.index(status))
        columns["crit"].append(None if critical == NONE else critical)
        self._shown(part, index, "in", texts.input[row], item_id, None if shared is None else shared[0])
        self._shown(part, index, "exp", texts.expected[row], item_id, None if shared is None else shared[1])
        self._shown(part, index, "out", texts.output[row])
        columns["score"].append(self.figures["score"][row])
        columns["lat"].append(self.figures["latency_ms"][row])
        columns["tin"].append(self.tokens["input_tokens"][row])
        columns["tout"].append(self.tokens["output_tokens"][row])
        columns["cost"].append(self.figures["cost_usd"][row])
        error, finish, cache = texts.error[row], texts.finish_reason[row], texts.cache[row]
        columns["err"].append(text(None if error is None else str(error)[:limit]))
        columns["fin"].append(text(None if finish in (None, "stop") else finish))
        columns["cache"].append(text(cache) if isinstance(cache, str) else None)
        line = None if self.redact else texts.records.get(row)
        messages = None if line is None else conversation(line, limit)
        columns["tr"].append(None if messages is None else text(json.dumps(messages, ensure_ascii=False, sort_keys=True)))
        columns["sc"].append([self._score(part, n) for n in scores])
        columns["anc"].append(None if anchor is None else text(anchor))
        return status, critical

    def _shown(self, part: _Part, index: int, key: str, value: Any, item_id: str = "",
               entries: dict[str, str] | None = None) -> None:
        """A text as shown (cut to the limit; whole, up to :data:`WHOLE_FACTOR` times it, beside), or
        :data:`ITEM_TEXT` when it is the item's entry in ``entries`` (the bucket's shared texts of this
        field, an item's entry set by its first case with a text)."""
        shown = None if self.redact else display(value, self.limit)
        if entries is not None and shown is not None and not shown.omitted:
            if entries.setdefault(item_id, shown.text) == shown.text:
                part.columns[key].append(ITEM_TEXT)
                return
        part.columns[key].append(None if shown is None else part.text(shown.text))
        if shown is not None and shown.omitted:
            part.cut.setdefault(key, []).extend((index, shown.omitted))
            whole = display(value, self.limit * WHOLE_FACTOR)
            if whole is not None:
                part.whole.setdefault(index, {})[key] = [whole.text, whole.omitted]

    def _score(self, part: _Part, n: int) -> list[Any]:
        """``[evaluator, score, passed, label, detail, error, skipped]`` with strings as indices."""
        passed, label = self.verdict[n], self.label[n]
        detail = None if self.redact else display(self.texts.detail[n], self.limit)
        error = self.texts.score_error[n]
        return [
            self.ev_index[self.evaluator[n]], self.score[n], None if passed == NONE else passed,
            part.text(None if label < 0 else self.labels[label]), part.text(None if detail is None else detail.text),
            part.text(None if error is None else str(error)[:self.limit]), int(self.skipped[n]),
        ]


def _optional(values: np.ndarray) -> list[float | None]:
    """Each value, None where there is none (NaN)."""
    return [None if value != value else value for value in values.tolist()]


def _whole(values: np.ndarray) -> list[int | None]:
    """Each count as an integer, None where there is none (NaN)."""
    return [None if value != value else int(value) for value in values.tolist()]


def whole_path(part_path: str) -> str:
    """Where a part's whole texts are: ``<bucket>-<n>.whole.js`` beside ``<bucket>-<n>.js``."""
    return part_path.removesuffix(".js") + ".whole.js"


def data_script(key: str, payload: Any) -> bytes:
    """``payload`` as a script handing it to ``static/data.js`` under ``key`` (its path without
    ``.js``). ``<`` is escaped so no text can end a script element; the file is data, never markup."""
    return json_script(key, json.dumps(payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False))


def json_script(key: str, text: str) -> bytes:
    """:func:`data_script` of a payload already written as JSON text (compact, as ``data_script`` writes it)."""
    escaped = text.replace("<", "\\u003c")
    return f"evalsiteData({json.dumps(key.removesuffix('.js'))},{escaped});\n".encode()
