"""The schedule: depth and coverage orderings, parallel arms, the pause; never in the fingerprint."""

from __future__ import annotations

from study_support import lines, runs, write_study

TARGET = '''
import json, time

def tagged(input, params):
    with open("order.log", "a") as log:
        log.write(json.dumps([params["tag"], input]) + "\\n")
    time.sleep(params.get("sleep", 0))
    return "ok " + input
'''


def two_arm_study(study, sleep: float = 0.0, **schedule):
    (study / "study_sched.py").write_text(TARGET)
    return write_study(study, items=3, concurrency=1, arms=[
        {"id": "a", "target": "python:study_sched:tagged", "params": {"tag": "a", "sleep": sleep}},
        {"id": "b", "target": "python:study_sched:tagged", "params": {"tag": "b", "sleep": sleep}},
    ], schedule={"backoff_s": 0.01, **schedule})


def order(study) -> list[tuple[str, str]]:
    return [tuple(entry) for entry in lines(study / "order.log")]


def test_depth_walks_arm_by_arm(study_project, cli):
    assert cli("run", two_arm_study(study_project)).exit_code == 0
    assert order(study_project) == [("a", "x0"), ("a", "x1"), ("a", "x2"), ("b", "x0"), ("b", "x1"), ("b", "x2")]


def test_coverage_gives_every_arm_an_item_before_any_gets_the_next(study_project, cli):
    assert cli("run", two_arm_study(study_project, ordering="coverage")).exit_code == 0
    assert order(study_project) == [("a", "x0"), ("b", "x0"), ("a", "x1"), ("b", "x1"), ("a", "x2"), ("b", "x2")]
    assert [r.footer.raw["status"] for r in runs(study_project)] == ["completed", "completed"]


def _first_and_last_start(run) -> tuple[str, str]:
    starts = sorted(case["started_at"] for case in run.cases)
    return starts[0], starts[-1]


def test_coverage_with_parallel_arms_starts_both_arms_before_either_finishes(study_project, cli):
    assert cli("run", two_arm_study(study_project, sleep=0.05, ordering="coverage", parallel_arms=2)).exit_code == 0
    first, second = runs(study_project)
    first_start, first_last = _first_and_last_start(first)
    second_start, second_last = _first_and_last_start(second)
    assert first_start < second_last and second_start < first_last  # the runs' cases overlap
    assert first_start < second.footer.raw["ended_at"] and second_start < first.footer.raw["ended_at"]
    assert first.header.raw["schedule"]["parallel_arms"] == 2 and first.header.raw["schedule"]["ordering"] == "coverage"


def test_depth_with_parallel_arms_runs_arms_at_once_each_in_its_own_order(study_project, cli):
    assert cli("run", two_arm_study(study_project, sleep=0.05, parallel_arms=2)).exit_code == 0
    first, second = runs(study_project)
    assert _first_and_last_start(first)[0] < second.footer.raw["ended_at"]
    assert _first_and_last_start(second)[0] < first.footer.raw["ended_at"]
    for arm in ("a", "b"):
        assert [i for tag, i in order(study_project) if tag == arm] == ["x0", "x1", "x2"]


def test_the_schedule_is_not_part_of_the_fingerprint(study_project, cli):
    manifest = two_arm_study(study_project)
    assert cli("run", manifest, "--arm", "a").exit_code == 0
    assert cli("run", manifest, "--arm", "a", "--set", "schedule.ordering=coverage",
               "--set", "schedule.pause_between_s=0.01", "--set", "schedule.parallel_arms=3").exit_code == 0
    first, second = runs(study_project)
    assert first.header.raw["fingerprint_hash"] == second.header.raw["fingerprint_hash"]
    assert second.header.raw["schedule"]["pause_between_s"] == 0.01


def test_a_bad_ordering_is_one_line(study_project, cli):
    result = cli("run", two_arm_study(study_project, ordering="breadth"), "--dry-run")
    assert result.exit_code == 1
    assert "schedule.ordering: must be one of depth, coverage, got 'breadth'" in result.output
