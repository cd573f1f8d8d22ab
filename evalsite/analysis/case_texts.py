"""What a page shows of each case beyond its figures (texts, errors, score details), one list per
field in the order of the run's :class:`~evalsite.analysis.case_columns.CaseColumns`: how the site
draws a run's cases without one Python object per case.

Two builders give the same texts: :func:`texts_from_arrow` from the columns DuckDB read
(:func:`evalsite.analysis.case_scan.scan_cases` with ``texts``), and :func:`texts_of_cases` from
case records the Python reader read (the fallback for a file DuckDB's reading is not trusted on).
A value is what the Python reader gives for the field (``case.raw.get(name)``): DuckDB hands over
only JSON strings (and nulls), and a line holding anything else in a shown field — a structured
input, a conversation, a ``cache`` object — is parsed whole by Python, so its values are exactly
the reader's (``records`` keeps those lines, for what only they hold: ``transcript``, ``turns``,
``turn_figures``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from evalsite.runlog.records import Case

#: The fields shown as texts, one value per case.
SHOWN = ("input", "expected", "output", "cache")
#: The fields only a line parsed whole gives (a line holding one is never read from DuckDB's strings).
WHOLE_ONLY = ("transcript", "turns", "turn_figures")


@dataclass(frozen=True)
class CaseTexts:
    """One entry per case (``input`` … ``finish_reason``) or per score (``detail``, ``score_error``,
    aligned with :class:`~evalsite.analysis.case_columns.ScoreColumns`). ``error`` is the
    generation's message (None: none); ``records`` the whole lines of the cases whose shown values
    are not all text, by case index."""

    input: list[Any]
    expected: list[Any]
    output: list[Any]
    cache: list[Any]
    error: list[str | None]
    finish_reason: list[str | None]
    detail: list[str | None]
    score_error: list[str | None]
    records: dict[int, dict[str, Any]]

    def whole(self, row: int, name: str) -> Any:
        """Field ``name`` of case ``row``'s line as the reader reads it, for a field of
        :data:`WHOLE_ONLY` (None for a line not parsed whole: it has none)."""
        found = self.records.get(row)
        return None if found is None else found.get(name)


def texts_of_cases(cases: Sequence[Case]) -> CaseTexts:
    """The texts of cases the Python reader read."""
    raws = [case.raw for case in cases]
    return CaseTexts(
        **{name: [raw.get(name) for raw in raws] for name in SHOWN},
        error=[case.error for case in cases], finish_reason=[case.finish_reason for case in cases],
        detail=[score.detail for case in cases for score in case.scores],
        score_error=[score.error for case in cases for score in case.scores],
        records=dict(enumerate(raws)),
    )


def texts_from_arrow(table: pa.Table, line: Callable[[int], bytes]) -> CaseTexts:
    """The texts of a scan's table (its ``plain``, ``<field>_text``, ``error_text``,
    ``finish_reason_text`` and ``scores`` columns); ``line(row)`` is case ``row``'s line, parsed
    whole where ``plain`` is false."""
    shown = {name: table.column(f"{name}_text").to_pylist() for name in SHOWN}
    records: dict[int, dict[str, Any]] = {}
    for row in np.flatnonzero(~table.column("plain").to_numpy(zero_copy_only=False)).tolist():
        records[row] = record = json.loads(line(row))
        for name in SHOWN:
            shown[name][row] = record.get(name)
    flat = pc.list_flatten(table.column("scores").combine_chunks())
    return CaseTexts(
        **shown, error=table.column("error_text").to_pylist(), finish_reason=table.column("finish_reason_text").to_pylist(),
        detail=flat.field("detail").to_pylist(), score_error=flat.field("error").to_pylist(),
        records=records,
    )
