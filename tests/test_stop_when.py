"""``stop_when: {decided: true}`` (and ``run --until decided``): the manifest rule, the paired
block-by-block walk, the footer it writes, and resume after a crash between looks."""

from __future__ import annotations

import hashlib
import shlex
import signal
import time
from collections import Counter

import numpy as np
import pytest
from runner_support import all_runs, start_run
from stop_when_support import TAILS, by_tail, seeded_order, write_project

from evalsite.runlog.store import CASES_FILE, read_cases, run_directories
from evalsite.stats.confseq import confidence_sequence, family_alpha

# ---- the manifest ---------------------------------------------------------------------------

def test_a_bad_stop_when_value_is_one_line_naming_its_key(runner_project, cli):
    manifest = write_project(runner_project, stop_when={"decided": True, "alpha": 0.7, "chek_every": 5,
                                                        "min_items": 50, "max_items": 40, "margin": 0})
    result = cli("run", manifest)
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert any("stop_when.alpha: must be less than 0.5, got 0.7" in line for line in lines)
    assert any("stop_when.chek_every: unknown key; did you mean 'check_every'?" in line for line in lines)
    assert any("stop_when.margin: must be more than 0, got 0" in line for line in lines)
    assert "Traceback" not in result.output


def test_max_items_below_min_items_is_refused(runner_project, cli):
    manifest = write_project(runner_project, stop_when={"decided": True, "min_items": 50, "max_items": 40})
    result = cli("run", manifest)
    assert result.exit_code == 1
    assert "stop_when.max_items: 40 is below stop_when.min_items (50)" in result.stderr
    assert not (runner_project / "calls.log").exists()


def test_one_config_has_nothing_to_decide(runner_project, cli):
    manifest = write_project(runner_project)
    result = cli("run", manifest, "--until", "decided", "--set", "sweep.variables.tail=['']")
    assert result.exit_code == 1
    assert "stop_when: needs at least two arms (or configs) to compare" in result.stderr


# ---- the walk -------------------------------------------------------------------------------

def test_until_decided_stops_early_on_the_same_seeded_items_for_every_arm(runner_project, cli):
    manifest = write_project(runner_project)
    result = cli("run", manifest, "--until", "decided", "--allow-failures")
    assert result.exit_code == 0, result.output
    runs = by_tail(all_runs(runner_project))
    assert {run.footer.status for run in runs.values()} == {"completed"}
    items = {tail: {case["item_id"] for case in run.cases} for tail, run in runs.items()}
    assert items[""] == items[" a"] == items[" b"]  # paired
    used = len(items[""])
    assert 30 <= used < 300 and used % 20 == 0  # whole blocks of check_every, after min_items
    assert sorted(items[""]) == sorted(seeded_order([f"q{i}" for i in range(300)], 0)[:used])
    record = runs[""].footer.stop_when
    assert record["reason"] == "separated" and record["items_used"] == used and record["items_planned"] == 300
    assert record["calls_saved"] == 300 - used and record["look"] == used // 20 == len(record["looks"])
    assert runs[""].header.stop_when.seed == 0 and runs[""].header.stop_when.alpha == 0.05
    assert Counter((runner_project / "calls.log").read_text().split("\n")[:-1]).most_common(1)[0][1] == 1
    assert (f"stop_when: separated at look {used // 20}, after {used} of 300 items; {3 * (300 - used)} calls saved"
            in result.stderr)


def test_each_look_is_the_confidence_sequence_of_the_recorded_differences(runner_project, cli):
    manifest = write_project(runner_project, stop_when={"decided": True, "check_every": 10, "min_items": 10})
    assert cli("run", manifest, "--allow-failures").exit_code == 0
    runs = by_tail(all_runs(runner_project))
    order = seeded_order([f"q{i}" for i in range(300)], 0)
    scores = {tail: {case["item_id"]: case["score"] for case in run.cases} for tail, run in runs.items()}
    used = runs[""].footer.stop_when["items_used"]
    looks = runs[""].footer.stop_when["looks"]
    for index, (a, b) in enumerate([("", " a"), ("", " b"), (" a", " b")]):
        differences = np.array([scores[a][i] - scores[b][i] for i in order[:used]])
        low, high = confidence_sequence(differences, alpha=family_alpha(0.05, 3), horizon=300)
        for look in looks:
            pair = look["pairs"][index]
            assert (pair["low"], pair["high"]) == (float(low[look["n"] - 1]), float(high[look["n"] - 1]))
    final = looks[-1]["pairs"]
    assert [p["decision"] for p in final] == ["separated"] * 3 and final[0]["low"] > 0  # '' beats ' a'
    assert not all(p["decision"] for p in looks[-2]["pairs"])  # it stopped at the first decided look


def test_max_items_stops_undecided_as_budget(runner_project, cli):
    manifest = write_project(runner_project, stop_when={"decided": True, "min_items": 10, "max_items": 30,
                                                        "check_every": 20})
    assert cli("run", manifest, "--allow-failures").exit_code == 0
    run = by_tail(all_runs(runner_project))[""]
    assert run.footer.status == "completed" and len(run.cases) == 40  # the first look at or past 30
    assert run.footer.stop_when["reason"] == "budget" and "max_items" in run.footer.stop_when["budget"]


# ---- resume ---------------------------------------------------------------------------------

def test_a_killed_adaptive_batch_resumes_with_the_same_order_and_looks_and_calls_nothing_twice(tmp_path, cli, monkeypatch):
    reference, crashed = tmp_path / "reference", tmp_path / "crashed"
    for root in (reference, crashed):
        (root / "data").mkdir(parents=True)
        (root / "experiments").mkdir()
    rule = {"decided": True, "check_every": 10, "min_items": 10}
    monkeypatch.chdir(reference)
    assert cli("run", write_project(reference, stop_when=rule), "--allow-failures").exit_code == 0
    manifest = write_project(crashed, stop_when=rule, sleep=0.02)
    process = start_run(crashed, manifest, "--concurrency", "2")
    deadline = time.monotonic() + 60
    while sum(len(read_cases(d / CASES_FILE)) for d in run_directories(crashed / "runs")) < 45:
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.01)
    process.send_signal(signal.SIGKILL)  # a crash: no footer, nothing cleaned up
    process.wait()
    monkeypatch.chdir(crashed)
    first = sorted(run_directories(crashed / "runs"))[0].name
    assert cli("run", manifest, "--resume", first, "--allow-failures").exit_code == 0
    after, before = by_tail(all_runs(crashed)), by_tail(all_runs(reference))
    for tail in TAILS:
        assert after[tail].footer.status == "completed"
        assert Counter(c.key for c in after[tail].cases).most_common(1)[0][1] == 1
        assert {c.key for c in after[tail].cases} == {c.key for c in before[tail].cases}
        assert after[tail].footer.stop_when["looks"] == before[tail].footer.stop_when["looks"]
    logged = Counter((crashed / "calls.log").read_text().split("\n")[:-1])
    recorded = sum(len(run.cases) for run in after.values())
    assert sum(logged.values()) <= recorded + 4  # at most the calls in flight at the kill (concurrency 2 × 2)



def test_clusters_are_drawn_whole_and_the_verdict_flips_them_as_units(runner_project, cli):
    manifest = write_project(runner_project, cluster=3, stop_when={"decided": True, "check_every": 10, "min_items": 10})
    assert cli("run", manifest, "--allow-failures").exit_code == 0
    runs = by_tail(all_runs(runner_project))
    record = runs[""].footer.stop_when
    used = record["items_used"]
    assert used % 3 == 0 and all(look["n"] % 3 == 0 and look["units"] == look["n"] // 3 for look in record["looks"])
    assert runs[""].header.stop_when.cluster_key == "group"
    key = lambda text: hashlib.sha256(text.encode()).digest()  # noqa: E731 - the documented cluster order
    groups = sorted({f"g{i // 3}" for i in range(300)}, key=lambda g: key(f"0\0\0cluster\0{g}"))[: used // 3]
    assert {c["item_id"] for c in runs[""].cases} == {f"q{3 * int(g[1:]) + k}" for g in groups for k in range(3)}
    scores = {tail: {c["item_id"]: c["score"] for c in run.cases} for tail, run in runs.items()}
    per_cluster = np.array([np.mean([scores[""][f"q{3 * int(g[1:]) + k}"] - scores[" a"][f"q{3 * int(g[1:]) + k}"]
                                     for k in range(3)]) for g in groups])
    low, high = confidence_sequence(per_cluster, alpha=family_alpha(0.05, 3), horizon=100)
    verdict = cli.json("leaderboard")["verdict"]
    pair = next(p for p in verdict["pairs"] if (p["ahead_label"], p["behind_label"]) == ('echo tail=""', 'echo tail=" a"'))
    assert verdict["unit"] == "cluster" and verdict["n_units"] == used // 3
    assert (pair["interval"]["low"], pair["interval"]["high"]) == pytest.approx((low[-1], high[-1]))


def test_repeats_finish_each_block_and_count_once_per_item(runner_project, cli):
    manifest = write_project(runner_project, stop_when={"decided": True, "check_every": 10, "min_items": 10})
    assert cli("run", manifest, "--repeat", "2", "--allow-failures").exit_code == 0
    runs = by_tail(all_runs(runner_project))
    used = runs[""].footer.stop_when["items_used"]
    for run in runs.values():
        assert Counter(c.repeat for c in run.cases) == {0: used, 1: used}
    assert len((runner_project / "calls.log").read_text().splitlines()) == 3 * 2 * used
    assert runs[""].footer.stop_when["looks"][-1]["units"] == used  # an item is one value: its mean over repeats


def test_max_cost_stops_at_the_first_look_past_it_as_budget(runner_project, cli):
    manifest = write_project(runner_project, stop_when={"decided": True, "max_cost_usd": 0.1})
    assert cli("run", manifest, "--allow-failures").exit_code == 0
    runs = by_tail(all_runs(runner_project))
    record = runs[""].footer.stop_when
    assert [look["cost_usd"] for look in record["looks"]] == pytest.approx([0.06, 0.12])  # 3 arms × 20 items × $0.001
    assert record["reason"] == "budget" and record["budget"] == "stop_when.max_cost_usd 0.1 spent"
    assert runs[""].footer.status == "completed" and record["cost_saved_usd"] == pytest.approx(0.001 * (300 - 40))


def test_a_ceiling_stop_prints_one_line_that_resumes_the_whole_batch(runner_project, cli):
    manifest = write_project(runner_project, stop_when={"decided": True})
    stopped = cli("run", manifest, "--concurrency", "1", "--max-cost", "0.03", "--allow-failures")
    assert stopped.exit_code == 1
    runs = by_tail(all_runs(runner_project))
    assert {run.footer.status for run in runs.values()} == {"stopped_cost_ceiling"}
    assert runs[""].footer.stop_when["budget"] == "the batch was stopped before this look"
    lines = [line.strip() for line in stopped.stderr.split("to continue, run:\n", 1)[1].splitlines()
             if line.startswith("  evalsite ")]
    assert len(lines) == 1 and "--resume" in lines[0]
    assert runs[""].footer.stop_when["calls_saved"] == 0  # not saved: the resume runs them
    resumed = cli(*shlex.split(lines[0])[1:], "--max-cost", "10")  # the ceiling counts per invocation
    assert resumed.exit_code == 0, resumed.output
    after = by_tail(all_runs(runner_project))
    assert {run.footer.status for run in after.values()} == {"completed"}
    assert after[""].footer.stop_when["reason"] == "separated"
    assert all(Counter(c.key for c in run.cases).most_common(1)[0][1] == 1 for run in after.values())
