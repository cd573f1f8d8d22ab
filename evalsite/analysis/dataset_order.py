"""A run's cases in dataset order, however they were scheduled.

``cases.jsonl`` is written in completion order (concurrency, ``schedule.ordering: coverage``,
retries and resumes all reorder it), and it is never rewritten. This reader presents the cases in
the order of the items in the run's dataset file, each item's repeats in order; when the file is
not there or no longer holds the rows the run scored, in the order each item first appears in the
run, which a resume or a schedule cannot make differ between two reads of the same file.
"""

from __future__ import annotations

from pathlib import Path

from evalsite.analysis.run_views import dataset_rows
from evalsite.runlog.records import Case
from evalsite.runlog.store import Run


def in_dataset_order(root: Path, run: Run) -> list[Case]:
    """The run's cases by dataset position (items the dataset lacks after the rest, by first appearance), then repeat."""
    rows = dataset_rows(root, run.header.dataset) or {}
    position = {item_id: index for index, item_id in enumerate(rows)}
    for case in run.cases:
        position.setdefault(case.item_id, len(position))
    return sorted(run.cases, key=lambda case: (position[case.item_id], case.repeat))
