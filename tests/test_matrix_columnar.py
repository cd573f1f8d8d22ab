"""The comparison matrix decided over arrays equals a row-by-row reading of its cells, and a matrix
combined from per-run cells (as the site keeps them) equals the matrix of the runs.

Random runs (items missing from some runs, several repeats, tied and missing scores, latencies,
costs and tokens, outputs differing only in whitespace, JSON outputs) are compared with a plain
reference that applies the rules stated in ``evalsite.analysis.matrix`` one row at a time.
"""

from __future__ import annotations

import random
from collections import Counter

import pytest
from matrix_support import make_run

from evalsite.analysis.matrix import MIN_LEAD, answer_key, comparison_matrix, run_cells

TIE = 1e-9


def _winners(cells, name, highest):
    known = [(cell.run_id, getattr(cell, name)) for cell in cells if getattr(cell, name) is not None]
    if len(known) < 2:
        return []
    target = (max if highest else min)(v for _, v in known)
    won = [run_id for run_id, v in known if abs(v - target) <= TIE]
    return [] if len(won) == len(known) else won


def _clear_lead(cells, name):
    won = _winners(cells, name, highest=False)
    if not won:
        return []
    values = {cell.run_id: getattr(cell, name) for cell in cells if getattr(cell, name) is not None}
    best = min(values[run_id] for run_id in won)
    runner_up = min(v for run_id, v in values.items() if run_id not in won)
    absolute, share = MIN_LEAD[name]
    return won if runner_up - best >= max(absolute, share * runner_up) else []


def reference_row(cells):
    """(best, fastest, cheapest, fewest tokens, divergent, majority output, outliers) of one row."""
    present = [cell for cell in cells if cell is not None]
    answers = Counter(answer_key(cell.output) for cell in present)
    ranked = answers.most_common(2)
    majority = ranked[0][0] if len(ranked) == 1 or ranked[0][1] > ranked[1][1] else None
    divergent = len(answers) > 1
    outliers = [cell is not None and divergent and answer_key(cell.output) != majority for cell in cells]
    return (_winners(present, "score", True), _clear_lead(present, "latency_ms"), _clear_lead(present, "cost_usd"),
            _clear_lead(present, "tokens"), divergent,
            next((c.output for c in present if answer_key(c.output) == majority), None), outliers)


def random_runs(seed: int):
    """Up to five runs; odd seeds give every case a single repeat (the matrix's one-value path)."""
    rng = random.Random(seed)
    most = 1 if seed % 2 else 3
    outputs = ["4", " 4\n", "5", "x", {"a": 1}, ["b"], None]
    runs = []
    for n in range(rng.randint(1, 5)):
        items = {}
        for item in range(rng.randint(1, 12)):
            if rng.random() < 0.2:
                continue  # this run lacks the item
            items[f"i{item}"] = [(rng.choice(outputs), rng.choice([0.0, 0.5, 1.0, 1.0, None]), rng.choice([1, 2, 10, 10.5, 30]),
                                  rng.choice([0.1, 0.1, 0.2, None]), rng.choice([2, 5, None]))
                                 for _ in range(rng.randint(1, most))]
        if not items:
            items["i0"] = [("4", 1.0, 1, 0.1, 2)]
        runs.append(make_run(f"r{n}", f"arm{n}", items))
    return runs


@pytest.mark.parametrize("seed", range(60))
def test_the_rows_equal_a_row_by_row_reading_of_the_cells(seed):
    runs = random_runs(seed)
    matrix = comparison_matrix(runs)
    cells = [run_cells(run) for run in runs]
    assert [row.item_id for row in matrix.rows] == sorted({i for c in cells for i in c}, key=lambda i: int(i[1:]))
    for row in matrix.rows:
        plain = [column.get(row.item_id) for column in cells]
        best, fastest, cheapest, tokens, divergent, majority, outliers = reference_row(plain)
        assert (row.best, row.fastest, row.cheapest, row.fewest_tokens) == (best, fastest, cheapest, tokens)
        assert (row.divergent, row.majority_output) == (divergent, majority)
        assert [cell is not None and cell.outlier for cell in row.cells] == outliers
        assert [None if c is None else (c.output, c.score, c.latency_ms, c.cost_usd, c.tokens, c.repeats) for c in row.cells] \
            == [None if c is None else (c.output, c.score, c.latency_ms, c.cost_usd, c.tokens, c.repeats) for c in plain]
        first = next(run for run in runs if row.item_id in {c.item_id for c in run.cases})
        assert row.input == f"question {row.item_id}" and first is not None


@pytest.mark.parametrize("seed", range(10))
def test_a_matrix_of_kept_cells_equals_the_matrix_of_the_runs(seed):
    runs = random_runs(seed)
    bare = [make_run(run.run_id, run.header.arm_id, {}) for run in runs]  # headers only, as the site scans them
    kept = comparison_matrix(bare, [run_cells(run) for run in runs])
    full = comparison_matrix(runs)
    assert kept.columns == full.columns
    assert [(r.item_id, r.cells, r.best, r.fastest, r.cheapest, r.fewest_tokens, r.divergent, r.majority_output)
            for r in kept.rows] == [(r.item_id, r.cells, r.best, r.fastest, r.cheapest, r.fewest_tokens, r.divergent,
                                     r.majority_output) for r in full.rows]
    assert all(row.input is None for row in kept.rows)  # no cases: inputs come from the runs' data scripts
