"""The footer's totals of a run whose every line the writer found well typed are read from the
records' columns a field at a time (``run_totals(..., checked=True)``): the same totals as the
summary of the same records read case by case (seeded random lines as evalsite writes them, as the
writer returned them: numbers out of range, NaN and infinity among them)."""

from __future__ import annotations

import random

import pytest
from case_lines_support import good_case

from evalsite.execute.runner import run_totals
from evalsite.runlog.store import RunWriter


@pytest.mark.parametrize("seed", range(8))
def test_checked_totals_equal_the_case_by_case_totals(tmp_path, seed):
    rng = random.Random(seed)
    writer = RunWriter.create(tmp_path / "runs", "a", {"experiment": "e", "arm_id": "a"})
    written = []
    for item in range(rng.randint(1, 40)):
        for repeat in range(rng.randint(1, 3)):
            case = {**good_case(rng, item), "repeat": repeat, "finish_reason": rng.choice(["stop", "length", None])}
            if rng.random() < 0.1:  # out of range: the writer records null and says so in the error
                case[rng.choice(["latency_ms", "cost_usd", "input_tokens"])] = rng.choice([-1, float("nan"), 1e300])
            written.append(writer.append_case(case))
    writer.finish({"status": "completed"})
    assert writer.well_typed
    planned = len(written) + rng.randint(0, 5)
    checked = run_totals(written, planned, checked=True)
    assert checked == run_totals(written, planned)
    assert checked.to_json() == run_totals(written, planned).to_json()


def test_checked_totals_of_no_case_equal_the_case_by_case_totals():
    assert run_totals([], 3, checked=True).to_json() == run_totals([], 3).to_json()
