"""``evalsite run --baseline RUN`` when the new run may not be compared with RUN (found by the
type checker: the warning read an attribute the run record does not have, and crashed)."""

from __future__ import annotations


def test_a_baseline_on_another_dataset_is_a_warning_not_a_traceback(cli, example_with_runs):
    [full] = [row["run_id"] for row in cli.json("runs") if row["arm"] == "careful"]
    done = cli("run", "experiments/arithmetic.yaml", "--arm", "careful", "--set", "dataset.limit=10", "--set", "repeat=1",
               "--baseline", full, "--allow-failures")
    assert done.exit_code == 0, done.output
    assert "warning: careful: not comparable with its baseline: dataset arithmetic@" in done.stderr
