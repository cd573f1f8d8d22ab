"""One summary: `evalsite show --json`, `evalsite leaderboard --json` and every JSON download of
the built site agree on a run's mean, pass rate, errors and critical failures, and each figure
equals an independent computation straight from the run's cases.jsonl.

The project has runs with failed generations, three repeats and a critical row scored only by
evaluators without a pass rule (the case where the site once said pass rate 0 and one critical
failure while `show` said none), and runs on a second dataset where every row has a pass rule.
"""

from __future__ import annotations

import json
import math
import sys
import textwrap
from pathlib import Path

import pytest

from evalsite.site import paths

ROWS = ["alpha", "flaky", "boom", "late", "must", "omega"]
CRITICAL = "a5"  # the "must" row
TARGETS = '''
def steady(input, repeat):
    if input == "boom":
        raise RuntimeError("model exploded")
    if input == "flaky" and repeat == 1:
        return "wrong"
    return input


def sloppy(input, repeat):
    if input == "boom" or (input == "late" and repeat == 0) or (input == "must" and repeat == 2):
        raise RuntimeError("timed out")
    if repeat % 2 and input != "must":
        return "wrong"
    return input
'''
GRADERS = '''
def grade(output, row):
    """A pass rule on every row but the critical one, which only gets a measurement."""
    if (row.get("metadata") or {}).get("critical"):
        return 0.25 if output == row["expected"] else 0.0
    return output == row["expected"]


def size(output):
    """No pass rule at all: a number between 0 and 1."""
    return min(len(output or ""), 10) / 10
'''
MANIFEST = '''
name: {name}
dataset:
  path: data/{name}.jsonl
repeat: 3
arms:
  - id: steady
    target: python:summary_targets:steady
  - id: sloppy
    target: python:summary_targets:sloppy
evaluators:
{evaluators}
'''
MIXED = "  - type: python:summary_graders:grade\n    name: grade\n  - type: python:summary_graders:size\n    name: size\n"
RULED = "  - type: exact\n"
MODULES = ("summary_targets", "summary_graders")


@pytest.fixture(scope="module")
def summary_project(cli, tmp_path_factory) -> Path:
    """Both experiments run (2 arms × 6 items × 3 repeats each) and the site built."""
    root = tmp_path_factory.mktemp("one-summary")
    (root / "data").mkdir()
    (root / "experiments").mkdir()
    for name in ("mixed", "ruled"):
        rows = [{"id": f"a{i}", "input": text, "expected": text, **({"metadata": {"critical": True}} if text == "must" else {})}
                for i, text in enumerate(ROWS, start=1)]
        (root / "data" / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        evaluators = MIXED if name == "mixed" else RULED
        (root / "experiments" / f"{name}.yaml").write_text(MANIFEST.format(name=name, evaluators=evaluators))
    (root / "summary_targets.py").write_text(textwrap.dedent(TARGETS))
    (root / "summary_graders.py").write_text(textwrap.dedent(GRADERS))
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        patch.setattr(sys, "path", [*sys.path])
        for name in ("mixed", "ruled"):
            cli("run", f"experiments/{name}.yaml")
        assert cli("build").exit_code == 0
        yield root
    for module in MODULES:
        sys.modules.pop(module, None)


@pytest.fixture
def inside(summary_project, monkeypatch):
    """``summary_project`` as the working folder."""
    monkeypatch.chdir(summary_project)
    return summary_project


def runs_of(project: Path) -> dict[tuple[str, str], str]:
    """(experiment, arm) → run id."""
    found = {}
    for directory in sorted((project / "runs").iterdir()):
        if (directory / "run.json").exists():
            header = json.loads((directory / "run.json").read_text())
            found[(header["experiment"], header["arm_id"])] = directory.name
    return found


def cases_of(project: Path, run_id: str) -> list[dict]:
    lines = (project / "runs" / run_id / "cases.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def by_hand(cases: list[dict]) -> dict:
    """The documented rules (docs/reference/evaluators.md), written out without the package."""
    per_item: dict[str, list[dict]] = {}
    for case in cases:
        per_item.setdefault(case["item_id"], []).append(case)

    def over_items(value) -> float | None:
        means = []
        for item_cases in per_item.values():
            values = [value(c) for c in item_cases if value(c) is not None]
            if values:
                means.append(sum(values) / len(values))
        return sum(means) / len(means) if means else None

    scored = [c for c in cases if c["score"] is not None]
    rated = bool(scored) and all(c["passed"] is not None for c in scored)
    errored = [c for c in cases if c["error"] or any(s["error"] for s in c["scores"])]
    return {
        "cases": len(cases),
        "errors": sum(1 for c in cases if c["error"]),
        "mean": over_items(lambda c: c["score"]),
        "pass_rate": over_items(lambda c: None if c["passed"] is None else float(c["passed"])) if rated else None,
        "critical_failures": sorted({c["item_id"] for c in cases if c["critical"]
                                     and (c in errored or c["passed"] is False)}),
    }


def site_json(project: Path, page: str, table: str) -> list[dict]:
    return json.loads((project / "site" / f"{page.removesuffix('.html')}.{table}.json").read_text())


def test_the_runs_cover_the_case_this_test_is_about(summary_project):
    """Failed generations, repeats, and a critical row whose cases have no verdict."""
    run = runs_of(summary_project)[("mixed", "steady")]
    cases = cases_of(summary_project, run)
    assert {c["repeat"] for c in cases} == {0, 1, 2}
    assert any(c["error"] for c in cases)
    critical = [c for c in cases if c["item_id"] == CRITICAL]
    assert critical and all(c["critical"] and c["passed"] is None and c["error"] is None for c in critical)
    assert all(s["passed"] is None for c in critical for s in c["scores"])


@pytest.mark.parametrize("experiment", ["mixed", "ruled"])
@pytest.mark.parametrize("arm", ["steady", "sloppy"])
def test_show_equals_an_independent_computation_from_the_cases(cli, inside, experiment, arm):
    run = runs_of(inside)[(experiment, arm)]
    expected = by_hand(cases_of(inside, run))
    shown = cli.json("show", run)
    assert shown["cases"] == expected["cases"] and shown["errors"] == expected["errors"]
    assert shown["mean_score"] == pytest.approx(expected["mean"], abs=1e-12)
    assert (shown["pass_rate"] is None) == (expected["pass_rate"] is None)
    if expected["pass_rate"] is not None:
        assert shown["pass_rate"] == pytest.approx(expected["pass_rate"], abs=1e-12)
    assert shown["critical_failures"] == expected["critical_failures"]
    end = json.loads((inside / "runs" / run / "end.json").read_text())["totals"]
    assert {k: end[k] for k in ("mean_score", "pass_rate", "errors", "critical_failures")} == {
        k: shown[k] for k in ("mean_score", "pass_rate", "errors", "critical_failures")
    }


def test_the_rule_for_a_critical_row_without_a_pass_rule(cli, inside):
    """No pass rule: neither passes nor fails, unless it errored."""
    runs = runs_of(inside)
    steady, sloppy = cli.json("show", runs[("mixed", "steady")]), cli.json("show", runs[("mixed", "sloppy")])
    assert steady["critical_failures"] == [] and steady["pass_rate"] is None
    assert sloppy["critical_failures"] == [CRITICAL]  # it errored in one repeat
    assert steady["evaluators"]["size"]["pass_rate"] is None  # its failed generations give it no rule
    assert steady["evaluators"]["grade"]["critical_failures"] == []
    assert sloppy["evaluators"]["grade"]["critical_failures"] == [CRITICAL]
    ruled = cli.json("show", runs[("ruled", "sloppy")])
    assert ruled["pass_rate"] is not None and ruled["critical_failures"] == [CRITICAL]


@pytest.mark.parametrize("experiment", ["mixed", "ruled"])
def test_show_the_leaderboard_and_every_site_download_agree(cli, inside, experiment):
    runs = {arm: run for (exp, arm), run in runs_of(inside).items() if exp == experiment}
    shown = {arm: cli.json("show", run) for arm, run in runs.items()}
    dataset_id = shown["steady"]["dataset_id"]
    board = cli.json("leaderboard", "--dataset", dataset_id)
    on_board = {arm["summary"]["arm"]["run_id"]: arm["summary"] for arm in board["arms"]}
    assert set(on_board) == set(runs.values())

    listings = {
        "runs": site_json(inside, paths.RUNS, "runs"),
        "home": site_json(inside, paths.HOME, "recent-runs"),
        "dataset": site_json(inside, paths.dataset(dataset_id), "runs"),
        "experiment": site_json(inside, paths.experiment(experiment), "runs"),
    }
    leaderboard_rows = {row["run_id"]: row for row in site_json(inside, paths.dataset(dataset_id), "leaderboard-1")}
    listed_by_run = {"runs": cli.json("runs")}
    for arm, run in runs.items():
        figures = shown[arm]
        critical = None if figures["critical_failures"] is None else len(figures["critical_failures"])
        # the leaderboard: every arm scored every item, so its figures are the run's
        assert on_board[run]["mean"] == figures["mean_score"]
        assert on_board[run]["pass_rate"] == figures["pass_rate"]
        assert leaderboard_rows[run]["value"]["value"] == figures["mean_score"]
        assert leaderboard_rows[run]["pass_rate"] == figures["pass_rate"]
        # `evalsite runs`
        (listed,) = [row for row in listed_by_run["runs"] if row["run_id"] == run]
        assert (listed["mean_score"], listed["pass_rate"], listed["cases"]) == (
            figures["mean_score"], figures["pass_rate"], figures["cases"])
        # every runs table of the site
        for name, rows in listings.items():
            (row,) = [r for r in rows if r["run_id"] == run]
            assert (row["mean_score"], row["pass_rate"], row["errors"], row["critical_failures"]) == (
                figures["mean_score"], figures["pass_rate"], figures["errors"], critical), name
        # the run page's per-evaluator download
        evaluators = {row["evaluator"]: row for row in site_json(inside, paths.run(run), "evaluators")}
        assert set(evaluators) == set(figures["evaluators"])
        for name, aggregate in figures["evaluators"].items():
            row = evaluators[name]
            assert (row["pass_rate"], row["mean"], row["errors"], row["n"]) == (
                aggregate["pass_rate"], aggregate["mean"], aggregate["errors"], aggregate["n"])
            assert row["critical_failures"] == len(aggregate["critical_failures"])
        # the run page's case data (its listing and downloads are drawn from it) holds the same cases
        from sitedata import run_cases

        cases = run_cases(inside / "site", run)
        assert len(cases) == figures["cases"]
        assert sum(1 for c in cases if c["status"] == "errored") == figures["errors"]


def test_the_run_page_shows_the_noise_evalsite_noise_measures(cli, inside):
    from evalsite.analysis.summary import summarise_run

    for (_, _), run in runs_of(inside).items():
        measured = cli.json("noise", run)
        summary = summarise_run(cases_of(inside, run))
        assert summary.noise is not None and measured["noise"] is not None
        assert summary.noise.repeat_means == pytest.approx(measured["noise"]["repeat_means"], abs=0)
        assert summary.noise.std == measured["noise"]["std"]
        repeats = site_json(inside, paths.run(run), "repeats")
        assert [r["mean_score"] for r in repeats] == list(summary.noise.repeat_means)
        flaky = [r["item_id"] for r in site_json(inside, paths.run(run), "flaky")]
        assert flaky == [item["item_id"] for item in measured["items"] if item["flaky"]]
        assert not math.isnan(summary.noise.std)


def test_compare_reads_the_same_per_evaluator_figures(cli, inside):
    """An evaluator without a pass rule has no pass rate and no failing items in a comparison."""
    runs = runs_of(inside)
    baseline, current = runs[("mixed", "steady")], runs[("mixed", "sloppy")]
    report = cli.json("compare", current, "--baseline", baseline)
    changes = {e["evaluator"]: e for e in report["regression"]["evaluators"]}
    before, after = cli.json("show", baseline)["evaluators"], cli.json("show", current)["evaluators"]
    for name in ("grade", "size"):
        assert changes[name]["baseline_pass_rate"] == before[name]["pass_rate"]
        assert changes[name]["current_pass_rate"] == after[name]["pass_rate"]
        assert changes[name]["baseline_mean"] == before[name]["mean"]
        assert changes[name]["current_errors"] == after[name]["errors"]
    assert changes["size"]["baseline_pass_rate"] is None
    assert changes["size"]["still_failing"] == changes["size"]["newly_failing"] == []


def test_noise_equals_the_spread_of_per_repeat_means_computed_by_hand(cli, inside):
    for run in runs_of(inside).values():
        cases = cases_of(inside, run)
        scored = {c["item_id"] for c in cases if c["score"] is not None}
        means = []
        for repeat in sorted({c["repeat"] for c in cases}):
            values = [c["score"] for c in cases if c["repeat"] == repeat and c["item_id"] in scored
                      and c["score"] is not None]
            means.append(sum(values) / len(values))
        centre = sum(means) / len(means)
        std = math.sqrt(sum((m - centre) ** 2 for m in means) / (len(means) - 1))
        assert cli.json("show", run)["noise_std"] == pytest.approx(std, abs=1e-12)
