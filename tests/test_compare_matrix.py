"""The comparison matrix the site renders: cells, per-row winners, divergence and outliers."""

from __future__ import annotations

import pytest
from matrix_support import make_run

from evalsite.analysis.matrix import comparison_matrix
from evalsite.errors import NotComparableError
from evalsite.runlog.store import read_run


def test_cells_winners_divergence_and_outliers():
    runs = [
        make_run("r1", "fast", {"i1": [("4", 1.0, 10, 0.2, 5)], "i2": [("x", 1.0, 5, 0.1, 5)], "i3": [("a", 0.0, 9, 0.1, 5)], "i4": [("4", 1.0, 1, 0.1, 5)]}),
        make_run("r2", "slow", {"i1": [("4", 1.0, 20, 0.3, 9)], "i2": [("x", 1.0, 5, 0.1, 5)], "i3": [("b", 0.5, 9, 0.1, 5)], "i4": [("4", 1.0, 2, 0.1, 5)]}),
        make_run("r3", "cheap", {"i1": [("5", 0.0, 30, 0.05, 2)], "i2": [("x", 1.0, 5, 0.1, 5)], "i3": [("c", 0.0, 9, 0.1, 5)]}),
    ]
    matrix = comparison_matrix(runs)
    assert [c.label for c in matrix.columns] == ["fast", "slow", "cheap"]
    i1, i2, i3, i4 = matrix.rows
    assert (i1.best, i1.fastest, i1.cheapest) == (["r1", "r2"], ["r1"], ["r3"])
    assert i1.divergent and i1.majority_output == "4"
    assert [cell.outlier for cell in i1.cells] == [False, False, True]
    assert i1.cells[0].tokens == 6 and i1.cells[2].cost_usd == 0.05
    assert (i2.best, i2.fastest, i2.cheapest, i2.divergent) == ([], [], [], False)
    assert not any(cell.outlier for cell in i2.cells)
    assert i3.divergent and i3.majority_output is None and all(cell.outlier for cell in i3.cells)
    assert i3.best == ["r2"]
    assert i4.cells[2] is None and not i4.divergent and i4.fastest == ["r1"]
    assert matrix.divergent_rows == 2


def test_a_cell_summarises_its_repeats():
    run = make_run("r1", "a", {"i1": [("7", 1.0, 10, 0.1, 4), ("7", 1.0, 20, 0.3, 6), ("8", 0.0, 30, None, None)]})
    other = make_run("r2", "b", {"i1": [("7", 1.0, 10, 0.1, 4)]})
    (row,) = comparison_matrix([run, other]).rows
    cell = row.cells[0]
    assert (cell.output, cell.repeats, cell.passed) == ("7", 3, False)
    assert cell.score == pytest.approx(2 / 3)
    assert cell.latency_ms == 20 and cell.cost_usd == pytest.approx(0.2) and cell.tokens == 6
    assert row.divergent and row.outputs == 2  # both arms' most common answer is "7", but one repeat said "8"


def test_outputs_are_the_same_only_when_every_repeat_of_every_arm_agrees():
    same = [make_run("r1", "a", {"i1": [("7", 1.0, 1, 0.1, 1), (" 7", 1.0, 1, 0.1, 1)]}),
            make_run("r2", "b", {"i1": [("7", 1.0, 1, 0.1, 1)] * 3})]
    (row,) = comparison_matrix(same).rows
    assert (row.divergent, row.outputs) == (False, 1)
    mixed = [make_run("r1", "a", {"i1": [("7", 1.0, 1, 0.1, 1), ("9", 0.0, 1, 0.1, 1)]}),
             make_run("r2", "b", {"i1": [("8", 0.0, 1, 0.1, 1), ("7", 1.0, 1, 0.1, 1)]})]
    (row,) = comparison_matrix(mixed).rows
    assert (row.divergent, row.outputs) == (True, 3)  # 7, 9 and 8 over the four repeats


def test_outputs_differing_only_in_surrounding_whitespace_agree():
    runs = [make_run("r1", "a", {"i1": [(" 4\n", 1.0, 1, 0.1, 1)]}), make_run("r2", "b", {"i1": [("4", 1.0, 1, 0.1, 1)]})]
    assert not comparison_matrix(runs).rows[0].divergent


def test_two_runs_of_one_arm_are_labelled_by_run_id():
    runs = [make_run("r1", "a", {"i1": [("4", 1.0, 1, 0.1, 1)]}), make_run("r2", "a", {"i1": [("4", 1.0, 1, 0.1, 1)]})]
    assert [c.label for c in comparison_matrix(runs).columns] == ["r1", "r2"]


def test_runs_that_are_not_comparable_are_refused():
    runs = [make_run("r1", "a", {"i1": [("4", 1.0, 1, 0.1, 1)]}), make_run("r2", "b", {"i1": [("4", 1.0, 1, 0.1, 1)]}, inputs_id="other@bbb")]
    with pytest.raises(NotComparableError, match="not comparable: r1 vs r2: dataset golden@111 vs golden@111"):
        comparison_matrix(runs)


def test_the_example_arms_as_a_matrix(example_project, cli):
    cli("run", "experiments/arithmetic.yaml", "--repeat", "1")
    runs = [read_run(p) for p in sorted((example_project / "runs").iterdir())]
    matrix = comparison_matrix(runs)
    assert len(matrix.rows) == 60 and len(matrix.columns) == 3
    careful = [c.label for c in matrix.columns].index("careful")
    for row in matrix.rows:
        cell = row.cells[careful]
        if "," in cell.output:  # careful writes thousands with a comma, which the others never do
            assert row.divergent and cell.outlier and cell.run_id not in row.best
        assert row.divergent or not any(c.outlier for c in row.cells)


def test_a_lead_too_small_to_matter_earns_no_mark():
    runs = [
        make_run("r1", "a", {"i1": [("4", 1.0, 10.0, 0.100, 5)], "i2": [("4", 1.0, 100, 0.1, 5)]}),
        make_run("r2", "b", {"i1": [("4", 1.0, 10.6, 0.1005, 9)], "i2": [("4", 1.0, 104, 0.1, 5)]}),
    ]
    i1, i2 = comparison_matrix(runs).rows
    assert (i1.fastest, i1.cheapest, i1.fewest_tokens) == ([], [], ["r1"])  # 0.6 ms and 0.5% are noise; 4 tokens are not
    assert i2.fastest == []  # 4 ms of 104 is under 5%
