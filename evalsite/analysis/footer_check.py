"""Whether a run's footer tells the truth about its cases.

``end.json`` records the run's totals when it stops (:func:`~evalsite.analysis.summary.summarise_run`
over every case written). A hand-edited or forged footer can claim other counts than
``cases.jsonl`` holds; ``evalsite validate`` recomputes the headline figures from the cases as
the reader reads them and names each one that differs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from evalsite.analysis.case_columns import CaseColumns
from evalsite.analysis.summary import summarise_run
from evalsite.runlog.records import Case
from evalsite.runlog.totals import RunTotals

#: The figures compared (each only when the footer records it: older footers have fewer).
FIGURES = ("cases", "items", "repeats", "errors", "skipped", "scored", "mean_score", "pass_rate", "passed",
           "cost_usd", "input_tokens", "output_tokens")


def footer_problems(totals: RunTotals, cases: Sequence[Case] | CaseColumns, where: str) -> list[str]:
    """One line per figure of ``totals`` (a footer's) that its ``cases`` (records, or their columns)
    do not give; ``where`` names the footer file."""
    claimed, actual = totals.to_json(), summarise_run(cases).to_json()
    return [f"{where}: totals.{figure} is {_shown(claimed[figure])}, but cases.jsonl gives {_shown(actual[figure])}"
            for figure in FIGURES if totals.records(figure) and not _same(claimed[figure], actual[figure])]


def _same(claimed: Any, actual: Any) -> bool:
    if isinstance(claimed, bool) or isinstance(actual, bool) or claimed is None or actual is None:
        return type(claimed) is type(actual) and claimed == actual
    if isinstance(claimed, (int, float)) and isinstance(actual, (int, float)):
        return math.isclose(claimed, actual, rel_tol=1e-9, abs_tol=1e-12)
    return False


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
