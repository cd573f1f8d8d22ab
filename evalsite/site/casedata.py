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
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from evalsite.analysis.case_columns import FALSE, NONE, TRUE, CaseColumns, natural_order
from evalsite.analysis.case_texts import CaseTexts
from evalsite.site import paths
from evalsite.site.safe_text import display
from evalsite.site.transcripts import conversation

FORMAT = 1
#: A text cut to ``max_field_chars`` is kept whole, up to this many times that, in the part's
#: ``<bucket>-<n>.whole.js``, which a page loads only when the reader asks for the whole text.
WHOLE_FACTOR = 50
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

    def payload(self, evaluators: list[str]) -> dict[str, Any]:
        return {"v": FORMAT, "s": list(self.strings), "ev": evaluators, "cut": self.cut, "wh": int(bool(self.whole)),
                **self.columns}


@dataclass(frozen=True)
class RunData:
    """What a run's data job writes, and the counts its page shows beside the listing."""

    files: dict[str, bytes]
    counts: dict[str, int]


def run_data(run_id: str, columns: CaseColumns, texts: CaseTexts, *, limit: int, redact: bool, item_pages: bool,
             part_chars: int) -> RunData:
    """The run's data scripts (index and parts) and its cases counted by filter, from its columns
    (critical flags filled in from its dataset where the cases did not record them) and texts. A
    part is closed once its texts hold about ``part_chars`` characters ([site] page_budget_kb), so a
    bucket of a very large run, or of one with long outputs, never makes one large file."""
    scores = columns.scores
    evaluators = sorted(set(scores.evaluators))
    ev_index = [evaluators.index(name) for name in scores.evaluators]
    bounds = np.searchsorted(scores.case, np.arange(columns.size + 1)).tolist()  # case i's scores: bounds[i]:bounds[i + 1]
    rows = _Rows(columns, texts, ev_index, limit, redact)
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
        status, is_critical = rows.add(part, row, position, range(bounds[row], bounds[row + 1]), anchors[code])
        counts["all"] += 1
        counts[status] += 1
        counts["critical"] += is_critical == TRUE
    files = {paths.run_data(run_id, bucket, n): data_script(paths.run_data(run_id, bucket, n), part.payload(evaluators))
             for bucket, chunks in parts.items() for n, part in enumerate(chunks)}
    files.update({whole_path(paths.run_data(run_id, bucket, n)): data_script(whole_path(paths.run_data(run_id, bucket, n)),
                                                                            {"v": FORMAT, "rows": part.whole})
                  for bucket, chunks in parts.items() for n, part in enumerate(chunks) if part.whole})
    index = {"v": FORMAT, "parts": {bucket: len(chunks) for bucket, chunks in sorted(parts.items())}, "counts": counts}
    files[paths.run_data_index(run_id)] = data_script(paths.run_data_index(run_id), index)
    return RunData(files, counts)


def _anchor(item_id: str) -> str | None:
    """The item's anchor on its item page when it is not ``item-<id>`` (which the browser derives)."""
    anchor = paths.item_anchor(item_id)
    return None if anchor == f"item-{item_id}" else anchor


class _Rows:
    """A run's columns and texts as lists, appended case by case to parts."""

    def __init__(self, columns: CaseColumns, texts: CaseTexts, ev_index: list[int], limit: int, redact: bool) -> None:
        self.item_ids, self.texts, self.limit, self.redact = columns.item_ids, texts, limit, redact
        self.item, self.repeat, self.error = columns.item.tolist(), columns.repeat.tolist(), columns.error.tolist()
        self.passed, self.critical = columns.passed.tolist(), columns.critical.tolist()
        self.figures = {name: _optional(getattr(columns, name)) for name in ("score", "latency_ms", "cost_usd")}
        self.tokens = {name: _whole(getattr(columns, name)) for name in ("input_tokens", "output_tokens")}
        s = columns.scores
        self.evaluator, self.score, self.verdict = s.evaluator.tolist(), _optional(s.score), s.passed.tolist()
        self.label, self.skipped, self.ev_index, self.labels = s.label.tolist(), s.skipped.tolist(), ev_index, s.labels

    def add(self, part: _Part, row: int, position: int, scores: range, anchor: str | None) -> tuple[str, int]:
        """Append case ``row`` to ``part``'s columns; its status and critical flag (1, 0, -1: unknown)."""
        columns, text, texts, limit = part.columns, part.text, self.texts, self.limit
        index = len(columns["item"])
        passed = self.passed[row]
        status = "errored" if self.error[row] else "passed" if passed == TRUE else "failed" if passed == FALSE else "unscored"
        critical = self.critical[row]
        columns["item"].append(text(self.item_ids[self.item[row]]))
        columns["ord"].append(position)
        columns["rep"].append(self.repeat[row])
        columns["st"].append(STATUSES.index(status))
        columns["crit"].append(None if critical == NONE else critical)
        for key, values in (("in", texts.input), ("exp", texts.expected), ("out", texts.output)):
            self._shown(part, index, key, values[row])
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

    def _shown(self, part: _Part, index: int, key: str, value: Any) -> None:
        """A text as shown (cut to the limit; whole, up to :data:`WHOLE_FACTOR` times it, beside)."""
        shown = None if self.redact else display(value, self.limit)
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
