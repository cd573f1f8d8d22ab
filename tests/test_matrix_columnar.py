"""The comparison matrix decided over arrays equals a row-by-row reading of its cells, and rows
decided from per-run columns (as the site keeps them) equal the matrix of the runs.

Random runs (items missing from some runs, several repeats, tied and missing scores, latencies,
costs and tokens, outputs differing only in whitespace, JSON outputs) are compared with a plain
reference that applies the rules stated in ``evalsite.analysis.matrix`` one row at a time.
"""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace

import numpy as np
import pytest
from matrix_support import make_run, random_runs

from evalsite.analysis.matrix import (
    MIN_LEAD,
    _column_of_cells,
    _distinct_answers,
    _distinct_counts,
    _one_output_each,
    answer_key,
    comparison_matrix,
    decide_rows,
    run_cells,
    run_column,
)

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


def reference_row(cells, outputs):
    """(best, fastest, cheapest, fewest tokens, divergent, majority output, outliers) of one row;
    ``outputs``: every repeat's output of every run on the item (divergent: more than one distinct)."""
    present = [cell for cell in cells if cell is not None]
    answers = Counter(answer_key(cell.output) for cell in present)
    ranked = answers.most_common(2)
    majority = ranked[0][0] if len(ranked) == 1 or ranked[0][1] > ranked[1][1] else None
    divergent = len({answer_key(output) for output in outputs}) > 1
    outliers = [cell is not None and divergent and answer_key(cell.output) != majority for cell in cells]
    return (_winners(present, "score", True), _clear_lead(present, "latency_ms"), _clear_lead(present, "cost_usd"),
            _clear_lead(present, "tokens"), divergent,
            next((c.output for c in present if answer_key(c.output) == majority), None), outliers)


@pytest.mark.parametrize("seed", range(60))
def test_the_rows_equal_a_row_by_row_reading_of_the_cells(seed):
    runs = random_runs(seed)
    matrix = comparison_matrix(runs)
    cells = [run_cells(run) for run in runs]
    assert [row.item_id for row in matrix.rows] == sorted({i for c in cells for i in c}, key=lambda i: int(i[1:]))
    for row in matrix.rows:
        plain = [column.get(row.item_id) for column in cells]
        outputs = [c["output"] for run in runs for c in run.cases if c["item_id"] == row.item_id]
        best, fastest, cheapest, tokens, divergent, majority, outliers = reference_row(plain, outputs)
        assert (row.best, row.fastest, row.cheapest, row.fewest_tokens) == (best, fastest, cheapest, tokens)
        assert (row.divergent, row.majority_output) == (divergent, majority)
        assert row.outputs == len({answer_key(output) for output in outputs})  # every repeat of every arm
        assert [cell is not None and cell.outlier for cell in row.cells] == outliers
        assert [None if c is None else (c.output, c.score, c.latency_ms, c.cost_usd, c.tokens, c.repeats) for c in row.cells] \
            == [None if c is None else (c.output, c.score, c.latency_ms, c.cost_usd, c.tokens, c.repeats) for c in plain]
        first = next(run for run in runs if row.item_id in {c.item_id for c in run.cases})
        assert row.input == f"question {row.item_id}" and first is not None


@pytest.mark.parametrize("seed", range(20))
def test_rows_decided_from_kept_columns_equal_the_matrix_of_the_runs(seed):
    runs = random_runs(seed)
    marks = decide_rows([run_column(run) for run in runs])  # each run's column alone, as the site keeps them
    matrix = comparison_matrix(runs)
    run_ids = [run.run_id for run in runs]
    assert list(marks.item_ids) == [row.item_id for row in matrix.rows]
    for n, row in enumerate(matrix.rows):
        def named(mask, n=n):
            return [run_id for run_id, marked in zip(run_ids, mask[n]) if marked]
        assert (named(marks.best), named(marks.fastest), named(marks.cheapest), named(marks.fewest_tokens)) \
            == (row.best, row.fastest, row.cheapest, row.fewest_tokens)
        assert named(marks.outlier) == [cell.run_id for cell in row.cells if cell is not None and cell.outlier]
        assert (bool(marks.divergent[n]), int(marks.outputs[n])) == (row.divergent, row.outputs)
        assert named(marks.present) == [cell.run_id for cell in row.cells if cell is not None]


@pytest.mark.parametrize("seed", range(10))
def test_a_matrix_of_kept_cells_equals_the_matrix_of_the_runs(seed):
    runs = random_runs(seed)
    bare = [make_run(run.run_id, run.header.arm_id, {}) for run in runs]  # headers only, as the site scans them
    kept = comparison_matrix(bare, [run_cells(run) for run in runs])
    full = comparison_matrix(runs)
    assert kept.columns == full.columns
    assert [(r.item_id, r.cells, r.best, r.fastest, r.cheapest, r.fewest_tokens, r.divergent, r.majority_output, r.outputs)
            for r in kept.rows] == [(r.item_id, r.cells, r.best, r.fastest, r.cheapest, r.fewest_tokens, r.divergent,
                                     r.majority_output, r.outputs) for r in full.rows]
    assert all(row.input is None for row in kept.rows)  # no cases: inputs come from the runs' data scripts



@pytest.mark.parametrize("seed", range(5))
def test_distinct_outputs_per_row_are_the_distinct_row_digest_triples(seed):
    """Each row's count of distinct outputs (its (row, digest) triples compared as whole bytes) is the
    number of distinct (row, digest) triples over every column, counted plainly."""
    rng = np.random.default_rng(seed)
    n_rows = 70
    position = np.full((n_rows, 4), -1)
    columns = []
    for index in range(4):
        n = int(rng.integers(1, 60))
        position[rng.permutation(n_rows)[:n], index] = np.arange(n)
        digests = rng.integers(0, 5, size=200).astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
        variants = np.column_stack([rng.integers(0, n, 200).astype(np.uint64), digests, digests >> np.uint64(index)])
        columns.append(SimpleNamespace(item_ids=tuple(range(n)), variants=variants))
    triples = {
        (int(np.flatnonzero(position[:, index] == item)[0]), hi, lo)
        for index, column in enumerate(columns)
        for item, hi, lo in column.variants.tolist()
    }
    expected = np.bincount([row for row, _, _ in triples], minlength=n_rows)
    assert np.array_equal(_distinct_counts(columns, position), expected)


@pytest.mark.parametrize("seed", range(40))
def test_distinct_answers_of_one_output_cells_are_the_distinct_triples(seed):
    """Where every cell has one output (odd seeds: one repeat; some even seeds too), the rows' distinct
    answers read from the cells' equal answers are the distinct (row, digest) triples' counts."""
    columns = [run_column(run) for run in random_runs(seed)]
    marks = decide_rows(columns)
    assert np.array_equal(marks.outputs, _distinct_counts(columns, marks.position))
    if seed % 2:
        assert _one_output_each(columns)
    if _one_output_each(columns):
        hi, lo = (np.where(marks.present, np.stack([c.answers[:, part][np.maximum(marks.position[:, i], 0)]
                                                     for i, c in enumerate(columns)], axis=1), 0) for part in (0, 1))
        same = (hi[:, :, None] == hi[:, None, :]) & (lo[:, :, None] == lo[:, None, :]) \
            & marks.present[:, None, :] & marks.present[:, :, None]
        assert np.array_equal(_distinct_answers(same.sum(axis=2), marks.present), marks.outputs)


@pytest.mark.parametrize("seed", range(10))
def test_a_columns_distinct_outputs_are_those_its_cells_give_case_by_case(seed):
    """Single-repeat runs (odd seeds) take the column's answers as its variants directly."""
    for run in random_runs(seed):
        column = run_column(run)
        by_cells = _column_of_cells(run.run_id, run_cells(run)).variants
        assert column.variants.dtype == by_cells.dtype == np.uint64
        assert column.variants.tolist() == by_cells.tolist()
