"""`evalsite run --executor ray`: the shards as tasks on a local Ray started by the test."""

from __future__ import annotations

import pytest
from example_support import copy_example
from shards_support import MANIFEST, headers, json_in, run_in

ray = pytest.importorskip("ray", reason="--executor ray needs the optional extra: pip install 'evalsite[ray]'")


@pytest.fixture(scope="module")
def local_ray():
    """A local Ray (two CPUs, no dashboard) for the module's tests."""
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_a_batch_on_ray_equals_the_local_run(cli, local_ray, tmp_path, monkeypatch):
    local = copy_example(tmp_path / "local")
    assert run_in(cli, local, monkeypatch, "run", MANIFEST, "--allow-failures").exit_code == 0
    on_ray = copy_example(tmp_path / "ray")
    merged = json_in(cli, on_ray, monkeypatch, "run", MANIFEST, "--executor", "ray", "--shards", "3")
    assert sorted(run["arm_id"] for run in merged) == ["careful", "left_to_right", "sampler"]
    assert all(run["cases"] == 180 and len(run["shards"]) == 3 and run["status"] == "completed" for run in merged)
    assert all(h["merged_from"] for h in headers(on_ray))
    ours, reference = json_in(cli, on_ray, monkeypatch, "leaderboard"), json_in(cli, local, monkeypatch, "leaderboard")
    for key in ("mean", "mean_interval", "pass_rate", "n_items", "n_cases", "mean_rank"):
        assert [arm.get(key) for arm in ours["arms"]] == [arm.get(key) for arm in reference["arms"]], key
    assert ours["verdict"]["friedman"] == reference["verdict"]["friedman"]
