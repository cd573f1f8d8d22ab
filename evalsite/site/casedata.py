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
import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from evalsite.runlog.records import Case, Score
from evalsite.runlog.rows import case_critical, case_order
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
    columns: dict[str, list] = field(default_factory=lambda: defaultdict(list))
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

    def payload(self, evaluators: list[str]) -> dict:
        return {"v": FORMAT, "s": list(self.strings), "ev": evaluators, "cut": self.cut, "wh": int(bool(self.whole)),
                **self.columns}


@dataclass(frozen=True)
class RunData:
    """What a run's data job writes, and the counts its page shows beside the listing."""

    files: dict[str, bytes]
    counts: dict[str, int]


def run_data(run_id: str, cases: list[Case], critical: dict[str, bool] | None, *, limit: int, redact: bool,
             item_pages: bool, part_chars: int) -> RunData:
    """The run's data scripts (index and parts) and its cases counted by filter. A part is closed once
    its texts hold about ``part_chars`` characters ([site] page_budget_kb), so a bucket of a very
    large run, or of one with long outputs, never makes one large file."""
    ordered = sorted(cases, key=case_order)
    evaluators = sorted({score.evaluator for c in ordered for score in c.scores})
    ev_index = {name: n for n, name in enumerate(evaluators)}
    parts: dict[str, list[_Part]] = defaultdict(lambda: [_Part()])
    counts = dict.fromkeys(("all", *STATUSES, "critical"), 0)
    for position, case in enumerate(ordered):
        bucket = paths.item_bucket(case.item_id)
        part = parts[bucket][-1]
        if part.chars > part_chars:
            part = _Part()
            parts[bucket].append(part)
        status, is_critical = _add(part, case, position, critical, ev_index, limit, redact, item_pages)
        counts["all"] += 1
        counts[status] += 1
        counts["critical"] += bool(is_critical)
    files = {paths.run_data(run_id, bucket, n): data_script(paths.run_data(run_id, bucket, n), part.payload(evaluators))
             for bucket, chunks in parts.items() for n, part in enumerate(chunks)}
    files.update({whole_path(paths.run_data(run_id, bucket, n)): data_script(whole_path(paths.run_data(run_id, bucket, n)),
                                                                            {"v": FORMAT, "rows": part.whole})
                  for bucket, chunks in parts.items() for n, part in enumerate(chunks) if part.whole})
    index = {"v": FORMAT, "parts": {bucket: len(chunks) for bucket, chunks in sorted(parts.items())}, "counts": counts}
    files[paths.run_data_index(run_id)] = data_script(paths.run_data_index(run_id), index)
    return RunData(files, counts)


def _add(part: _Part, case: Case, position: int, critical: dict[str, bool] | None, ev_index: dict[str, int],
         limit: int, redact: bool, item_pages: bool) -> tuple[str, bool | None]:
    """Append one case to ``part``'s columns (typed fields, checked by the run log reader); its status
    and critical flag."""
    columns, text, raw = part.columns, part.text, case.raw
    row = len(columns["item"])
    error, passed = case.error, case.passed
    status = "errored" if error else "passed" if passed else "failed" if passed is False else "unscored"
    is_critical = case_critical(case, critical)
    columns["item"].append(text(case.item_id))
    columns["ord"].append(position)
    columns["rep"].append(case.repeat)
    columns["st"].append(STATUSES.index(status))
    columns["crit"].append(None if is_critical is None else int(is_critical))
    for key, name in (("in", "input"), ("exp", "expected"), ("out", "output")):
        shown = None if redact else display(raw.get(name), limit)
        columns[key].append(None if shown is None else text(shown.text))
        if shown is not None and shown.omitted:
            part.cut.setdefault(key, []).extend((row, shown.omitted))
            whole = display(raw.get(name), limit * WHOLE_FACTOR)
            if whole is not None:
                part.whole.setdefault(row, {})[key] = [whole.text, whole.omitted]
    columns["score"].append(_finite(case.score))
    columns["lat"].append(_finite(case.latency_ms))
    columns["tin"].append(case.input_tokens)
    columns["tout"].append(case.output_tokens)
    columns["cost"].append(_finite(case.cost_usd))
    columns["err"].append(text(None if error is None else str(error)[:limit]))
    columns["fin"].append(text(None if case.finish_reason in (None, "stop") else case.finish_reason))
    cache = raw.get("cache")
    columns["cache"].append(text(cache) if isinstance(cache, str) else None)
    messages = None if redact else conversation(case, limit)
    columns["tr"].append(None if messages is None else text(json.dumps(messages, ensure_ascii=False, sort_keys=True)))
    columns["sc"].append([_score(part, s, ev_index, limit, redact) for s in case.scores])
    anchor = paths.item_anchor(case.item_id) if item_pages else None
    columns["anc"].append(None if anchor is None or anchor == f"item-{case.item_id}" else text(anchor))
    return status, is_critical


def _finite(value: float | None) -> float | None:
    return value if value is None or math.isfinite(value) else None


def _score(part: _Part, score: Score, ev_index: dict[str, int], limit: int, redact: bool) -> list:
    """``[evaluator, score, passed, label, detail, error, skipped]`` with strings as indices."""
    detail = None if redact else display(score.detail, limit)
    return [
        ev_index[score.evaluator], _finite(score.score), None if score.passed is None else int(score.passed),
        part.text(None if score.label is None else str(score.label)),
        part.text(None if detail is None else detail.text),
        part.text(None if score.error is None else str(score.error)[:limit]),
        int(score.skipped),
    ]


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
