"""`evalsite run --shard K/N` and `evalsite merge`: one experiment over N machines."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from example_support import copy_example
from shards_support import MANIFEST, headers, json_in, run_in

from evalsite.errors import PlanError
from evalsite.experiment.shards import Shard, parse_shard


@pytest.fixture(scope="module")
def sharded(cli, tmp_path_factory):
    """The example experiment unsharded in one project, and as shards 1/3, 2/3, 3/3 in three others."""
    monkeypatch = pytest.MonkeyPatch()
    base = tmp_path_factory.mktemp("shards")
    whole = copy_example(base / "whole")
    assert run_in(cli, whole, monkeypatch, "run", MANIFEST, "--allow-failures").exit_code == 0
    machines = []
    for k in (1, 2, 3):
        machine = copy_example(base / f"machine{k}")
        assert run_in(cli, machine, monkeypatch, "run", MANIFEST, "--shard", f"{k}/3", "--allow-failures").exit_code == 0
        machines.append(machine)
    yield whole, machines
    monkeypatch.undo()


def gather(machines: list[Path], into: Path, skip: int | None = None) -> Path:
    """What a CI job's download step does: every shard's run folders into one project."""
    target = copy_example(into)
    for number, machine in enumerate(machines, start=1):
        if number == skip:
            continue
        for folder in (machine / "runs").iterdir():
            shutil.copytree(folder, target / "runs" / folder.name)
    return target


def test_shards_agree_on_a_batch_and_split_the_items(sharded):
    whole, machines = sharded
    batch_ids = {h["batch_id"] for machine in machines for h in headers(machine)}
    assert len(batch_ids) == 1 and batch_ids.pop().startswith("batch-arithmetic-")
    assert {h["shard"]["index"] for m in machines for h in headers(m)} == {1, 2, 3}
    per_arm = Counter(h["arm_id"] for m in machines for h in headers(m))
    assert per_arm == {"careful": 3, "left_to_right": 3, "sampler": 3}
    sizes = [h["plan"]["cases"] for h in headers(machines[0])]
    assert all(0 < size < 180 for size in sizes)
    assert "shard" not in headers(whole)[0] and not headers(whole)[0]["batch_id"].startswith("batch-arithmetic-")


def test_merged_shards_give_the_unsharded_leaderboard(cli, sharded, tmp_path, monkeypatch):
    whole, machines = sharded
    gathered = gather(machines, tmp_path / "gathered")
    merged = json_in(cli, gathered, monkeypatch, "merge")
    assert sorted(run["arm_id"] for run in merged) == ["careful", "left_to_right", "sampler"]
    assert all(run["cases"] == 180 and len(run["shards"]) == 3 for run in merged)
    for run in merged:
        lines = (gathered / "runs" / run["run_id"] / "cases.jsonl").read_text().splitlines()
        keys = Counter((c["item_id"], c["repeat"]) for c in map(json.loads, lines))
        assert len(keys) == 180 and set(keys.values()) == {1}  # each item and repeat exactly once
    ours, reference = json_in(cli, gathered, monkeypatch, "leaderboard"), json_in(cli, whole, monkeypatch, "leaderboard")
    for key in ("mean", "mean_interval", "pass_rate", "n_items", "n_cases", "mean_rank"):
        assert [arm.get(key) for arm in ours["arms"]] == [arm.get(key) for arm in reference["arms"]], key
    assert ours["verdict"]["friedman"] == reference["verdict"]["friedman"]
    assert len([p for p in (gathered / "runs").iterdir() if (p / "run.json").exists()]) == 3  # shards parked


def test_a_missing_shard_is_named(cli, sharded, tmp_path, monkeypatch):
    _, machines = sharded
    gathered = gather(machines, tmp_path / "gathered", skip=2)
    result = run_in(cli, gathered, monkeypatch, "merge")
    assert result.exit_code == 1
    assert "shard 2/3 missing (have 2 of 3)" in result.output and "batch batch-arithmetic-" in result.output
    assert len(list((gathered / "runs").iterdir())) == 6  # nothing written, nothing moved


def test_a_shard_present_twice_is_refused_naming_both_runs(cli, sharded, tmp_path, monkeypatch):
    _, machines = sharded
    gathered = gather(machines, tmp_path / "gathered")
    again = copy_example(tmp_path / "again")
    assert run_in(cli, again, monkeypatch, "run", MANIFEST, "--shard", "1/3", "--allow-failures").exit_code == 0
    extras = list((again / "runs").iterdir())
    for extra in extras:
        shutil.copytree(extra, gathered / "runs" / extra.name)
    result = run_in(cli, gathered, monkeypatch, "merge")
    assert result.exit_code == 1
    assert ": shard 1/3 appears more than once (" in result.output
    assert any(extra.name in result.output for extra in extras)


def test_shard_values_are_checked_and_the_split_is_a_partition():
    assert parse_shard("2/3") == Shard(2, 3)
    for bad in ("0/3", "4/3", "3", "a/b", "1/" + "9" * 5000):  # (int() refuses more than 4,300 digits)
        with pytest.raises(PlanError, match="expected K/N"):
            parse_shard(bad)
    owners = [sum(Shard(k, 4).holds("config", f"item{i}") for k in range(1, 5)) for i in range(200)]
    assert owners == [1] * 200
