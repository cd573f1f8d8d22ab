"""A run's cases as compact data scripts the browser renders: the run page's case listing, the item
pages and the search read them; nothing else carries a case's text.

Each run writes ``data/runs/<run>/index.js`` (which buckets it has and in how many parts) and
``data/runs/<run>/<bucket>-<part>.js``: its cases grouped by :func:`evalsite.site.paths.item_bucket`,
so an item page (one bucket of a dataset) loads exactly the part of each run that holds its items.
A part is columnar JSON with one table of shared strings (an evaluator's detail, a repeated input
or output is stored once a part). The files are scripts, not JSON fetched by the page, so they load
from ``file://`` as from any static host; ``static/data.js`` decodes them.

Texts are cut to ``max_field_chars`` with the omitted length kept, and left out when redacting.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from evalsite.runlog.records import Case
from evalsite.runlog.rows import case_critical, case_order, finite_number, repeat_of, whole_number
from evalsite.site import paths
from evalsite.site.text import display

FORMAT = 1
STATUSES = ("passed", "failed", "errored", "unscored")


@dataclass
class _Part:
    """The columns of one part under construction."""

    strings: dict[str, int] = field(default_factory=dict)
    columns: dict[str, list] = field(default_factory=lambda: defaultdict(list))
    cut: dict[str, list[int]] = field(default_factory=dict)
    chars: int = 0

    def text(self, value: str | None) -> int | None:
        if value is None:
            return None
        if value not in self.strings:
            self.strings[value] = len(self.strings)
            self.chars += len(value)
        return self.strings[value]

    def payload(self, evaluators: list[str]) -> dict:
        return {"v": FORMAT, "s": list(self.strings), "ev": evaluators, "cut": self.cut, **self.columns}


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
    evaluators = sorted({str(s.get("evaluator")) for c in ordered for s in _scores(c)})
    ev_index = {name: n for n, name in enumerate(evaluators)}
    parts: dict[str, list[_Part]] = defaultdict(lambda: [_Part()])
    counts = dict.fromkeys(("all", *STATUSES, "critical"), 0)
    for position, case in enumerate(ordered):
        item_id = str(case.get("item_id"))
        bucket = paths.item_bucket(item_id)
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
    index = {"v": FORMAT, "parts": {bucket: len(chunks) for bucket, chunks in sorted(parts.items())}, "counts": counts}
    files[paths.run_data_index(run_id)] = data_script(paths.run_data_index(run_id), index)
    return RunData(files, counts)


def _scores(case: Case) -> list[dict]:
    return [s for s in case.get("scores") or [] if isinstance(s, dict)]


def _add(part: _Part, case: Case, position: int, critical: dict[str, bool] | None, ev_index: dict[str, int],
         limit: int, redact: bool, item_pages: bool) -> tuple[str, bool | None]:
    """Append one case to ``part``'s columns; its status and critical flag."""
    item_id = str(case.get("item_id"))
    columns = part.columns
    row = len(columns["item"])
    error = case.error
    scores = _scores(case)
    passed = case.get("passed") if isinstance(case.get("passed"), bool) else None
    status = "errored" if error else "passed" if passed else "failed" if passed is False else "unscored"
    is_critical = case_critical(case, critical)
    columns["item"].append(part.text(item_id))
    columns["ord"].append(position)
    columns["rep"].append(repeat_of(case))
    columns["st"].append(STATUSES.index(status))
    columns["crit"].append(None if is_critical is None else int(is_critical))
    for key, name in (("in", "input"), ("exp", "expected"), ("out", "output")):
        shown = None if redact else display(case.get(name), limit)
        columns[key].append(None if shown is None else part.text(shown.text))
        if shown is not None and shown.omitted:
            part.cut.setdefault(key, []).extend((row, shown.omitted))
    columns["score"].append(finite_number(case.get("score")))
    columns["lat"].append(finite_number(case.get("latency_ms")))
    columns["tin"].append(whole_number(case.get("input_tokens")))
    columns["tout"].append(whole_number(case.get("output_tokens")))
    columns["cost"].append(finite_number(case.get("cost_usd")))
    columns["err"].append(part.text(None if error is None else str(error)[:limit]))
    finish = case.get("finish_reason")
    columns["fin"].append(part.text(None if finish is None or finish == "stop" else str(finish)))
    cache = case.get("cache")
    columns["cache"].append(part.text(cache) if isinstance(cache, str) else None)
    columns["sc"].append([_score(part, s, ev_index, limit, redact) for s in scores])
    anchor = paths.item_anchor(item_id)
    columns["anc"].append(None if not item_pages or anchor == f"item-{item_id}" else part.text(anchor))
    return status, is_critical


def _score(part: _Part, score: dict, ev_index: dict[str, int], limit: int, redact: bool) -> list:
    """``[evaluator, score, passed, label, detail, error, skipped]`` with strings as indices."""
    passed = score.get("passed")
    detail = None if redact else display(score.get("detail"), limit)
    return [
        ev_index[str(score.get("evaluator"))], finite_number(score.get("score")),
        int(passed) if isinstance(passed, bool) else None,
        part.text(None if score.get("label") is None else str(score.get("label"))),
        part.text(None if detail is None else detail.text),
        part.text(None if score.get("error") is None else str(score.get("error"))[:limit]),
        int(bool(score.get("skipped"))),
    ]


def data_script(key: str, payload: Any) -> bytes:
    """``payload`` as a script handing it to ``static/data.js`` under ``key`` (its path without
    ``.js``). ``<`` is escaped so no text can end a script element; the file is data, never markup."""
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False).replace("<", "\\u003c")
    return f"evalsiteData({json.dumps(key.removesuffix('.js'))},{text});\n".encode()
