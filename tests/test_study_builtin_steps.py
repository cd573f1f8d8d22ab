"""The built-in ``eval``, ``trace_stats`` and ``plot`` steps, end to end in a study, and the SVG
they draw read back as XML."""

from __future__ import annotations

import csv
import json
import re
import xml.etree.ElementTree as ET

import pytest
from example_support import REPO
from sitekit import parse
from study_support import runs, write_study

from evalsite.execute.svg_plot import LEFT, RIGHT, WIDTH, Estimate, interval_chart
from evalsite.site import paths

SVG = "{http://www.w3.org/2000/svg}"
DOCS = REPO / "docs/reference/manifest.md"
ROWS = [{"id": f"q{i}", "input": f"x{i}", "expected": f"ok x{i}" if i % 3 else "no", "topic": "t"} for i in range(6)]
CHECKS = '''
def mentions_topic(output, row):
    return {"score": 1.0 if row["topic"] in "ok t" else 0.0, "passed": True}
'''


def pipeline(**experiment_post) -> dict:
    return {
        "artifacts": {
            "case": {"metrics": "metrics", "stats": "dataframe"},
            "item": {"df": "dataframe", "stats": "dataframe"},
            "arm": {"df": "dataframe", "stats": "dataframe"},
            "experiment": {"chart": {"type": "plot", "path": "{level_dir}/score.svg"},
                           "ci": {"type": "dataframe", "path": "{level_dir}/ci_summary.csv"}},
        },
        "hooks": {
            "case": {"post": [
                {"builtin": "eval", "out": "metrics", "config": {"evaluators": [
                    {"type": "contains", "name": "has_ok", "value": "ok"}, {"type": "python:checks:mentions_topic", "name": "mentions_topic"}]}},
                {"builtin": "trace_stats", "out": "stats"},
            ]},
            "item": {"post": [{"name": "g-item", "builtin": "gather", "in": "metrics", "out": "df"},
                              {"name": "g-item-stats", "builtin": "gather", "in": "stats", "out": "stats"}]},
            "arm": {"post": [{"name": "g-arm", "builtin": "gather", "in": "df", "out": "df"},
                             {"name": "g-arm-stats", "builtin": "gather", "in": "stats", "out": "stats"}]},
            "experiment": {"post": [
                {"name": "ci", "builtin": "bootstrap_ci", "in": "df", "out": "ci", "config": {"metrics": ["score.exactly"]}},
                {"builtin": "plot", "in": "df", "out": "chart", "config": {"metric": "score.exactly", "title": "a <b> & c"}},
                *experiment_post.get("extra", []),
            ]},
        },
    }


def study(project, **extra) -> str:
    (project / "checks.py").write_text(CHECKS)
    manifest = pipeline(**extra)
    manifest["hooks"]["case"]["post"][0]["config"]["evaluators"].append({"type": "exact", "name": "exactly"})
    return write_study(project, rows=ROWS, repeat=2, arms=[
        {"id": "a", "target": "python:study_target:answer"},
        {"id": "b", "target": "python:study_target:answer", "params": {"variant": 2}},
    ], **manifest)


def read_csv(path):
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def test_eval_scores_each_case_again_without_touching_its_scores(study_project, cli):
    result = cli("run", study(study_project), "--allow-failures")
    assert result.exit_code == 0, result.output
    for run in runs(study_project):
        for case in run.cases:
            metrics = json.loads((run.directory / "items" / case["item_id"] / f"repeat-{case['repeat']}" / "metrics.json").read_text())
            exact = case["output"] == case["expected"]
            assert metrics["score.exactly"] == float(exact) and metrics["score.has_ok"] == 1.0
            assert metrics["score.mentions_topic"] == 1.0, "the python evaluator saw the row's own field"
            assert metrics["score"] == pytest.approx((1.0 + 1.0 + float(exact)) / 3)
            assert [s["evaluator"] for s in metrics["scores"]] == ["has_ok", "mentions_topic", "exactly"]
            assert (metrics["item_id"], metrics["repeat"], metrics["arm"]) == (case["item_id"], case["repeat"], run.header.raw["arm_id"])
            assert [s["evaluator"] for s in case["scores"]] == ["exact"], "the case's own scores stay as recorded"


def test_trace_stats_counts_each_cases_conversation_beside_its_figures(study_project, cli):
    cli("run", study(study_project), "--allow-failures")
    for run in runs(study_project):
        rows = read_csv(run.directory / "stats.csv")
        assert len(rows) == 12
        by_case = {(r["item_id"], int(r["repeat"])): r for r in rows}
        for case in run.cases:
            row = by_case[(case["item_id"], case["repeat"])]
            assert (row["messages"], row["user_turns"], row["assistant_messages"], row["tool_calls"]) == ("2", "1", "1", "0")
            assert float(row["latency_ms"]) == case["latency_ms"] and int(row["output_chars"]) == len(case["output"])


def test_plot_draws_the_same_intervals_bootstrap_ci_writes(study_project, cli):
    cli("run", study(study_project), "--allow-failures")
    (results,) = study_project.glob("results/study/*")
    summary = {row["arm"]: row for row in read_csv(results / "ci_summary.csv")}
    svg = ET.parse(results / "score.svg").getroot()
    assert svg.find(f"{SVG}title").text == "a <b> & c"
    groups = svg.findall(f"{SVG}g")
    assert [g.find(f"{SVG}text").text for g in groups] == ["a", "b"]
    plot_width = WIDTH - LEFT - RIGHT
    for group in groups:
        row = summary[group.find(f"{SVG}text").text]
        assert float(group.get("data-mean")) == pytest.approx(float(row["mean"]))
        line = group.find(f"{SVG}line")
        assert float(line.get("x1")) == pytest.approx(LEFT + float(row["ci_low"]) * plot_width, abs=0.01)
        assert float(line.get("x2")) == pytest.approx(LEFT + float(row["ci_high"]) * plot_width, abs=0.01)
    (run,) = [r for r in runs(study_project) if r.header.raw["arm_id"] == "a"][:1]
    exact = [float(c["output"] == c["expected"]) for c in run.cases]
    assert float(summary["a"]["mean"]) == pytest.approx(sum(exact) / len(exact)), "4 of 6 items answer 'ok xN'"


def test_the_chart_is_proportional_escaped_and_skips_an_interval_it_does_not_have():
    text = interval_chart([Estimate("<arm & 1>", 0.25, 0.1, 0.4), Estimate("plain", 0.75)], "t", "score")
    root = ET.fromstring(text)
    circles = root.findall(f".//{SVG}circle")
    plot_width = WIDTH - LEFT - RIGHT
    assert [float(c.get("cx")) for c in circles] == [pytest.approx(LEFT + 0.25 * plot_width), pytest.approx(LEFT + 0.75 * plot_width)]
    assert len(root.findall(f".//{SVG}line[@class='interval']")) == 1
    assert "&lt;arm &amp; 1&gt;" in text and root.findall(f".//{SVG}g")[0].find(f"{SVG}text").text == "<arm & 1>"
    ticks = [t.text for t in root.findall(f"{SVG}text[@class='tick']")]
    assert ticks == ["0", "0.2", "0.4", "0.6", "0.8", "1"]
    wide = ET.fromstring(interval_chart([Estimate("x", 120.0, 100.0, 140.0)], "t", "latency_ms"))
    assert [t.text for t in wide.findall(f"{SVG}text[@class='tick']")][0] == "98", "outside [0, 1]: the data's range, padded"
    with pytest.raises(ValueError):
        interval_chart([], "t", "score")


@pytest.mark.parametrize(("step", "message"), [
    ({"builtin": "eval", "out": "metrics"},
     "hooks.case.post[eval]: eval: config.evaluators needs a list of evaluators, as the manifest's 'evaluators'"),
    ({"builtin": "eval", "out": "metrics", "config": {"evaluators": [{"type": "exakt"}]}},
     "hooks.case.post[eval]: eval: config.evaluators[0].type: unknown evaluator 'exakt'"),
])
def test_a_bad_eval_step_is_refused_before_anything_runs(study_project, cli, step, message):
    manifest = write_study(study_project, artifacts={"case": {"metrics": "metrics"}}, hooks={"case": {"post": [step]}})
    result = cli("run", manifest)
    assert result.exit_code == 1 and message in result.output, result.output
    assert not (study_project / "calls.log").exists()


@pytest.mark.parametrize(("builtin", "config", "message"), [
    # each was found only after every case ran: a traceback's last line naming no key, or silently another value
    ("bootstrap_ci", {"seed": -1}, "bootstrap_ci: config.seed: needs a whole number of at least 0, got -1"),
    ("bootstrap_ci", {"seed": 1.5}, "bootstrap_ci: config.seed: needs a whole number of at least 0, got 1.5"),
    ("bootstrap_ci", {"confidence": 1.5},
     "bootstrap_ci: config.confidence: needs a number between 0 and 1 (exclusive), got 1.5"),
    ("bootstrap_ci", {"metrics": "score"}, "bootstrap_ci: config.metrics: needs a list of column names, got 'score'"),
    ("plot", {"metric": ["score"]}, "plot: config.metric: needs a column name, got ['score']"),
    ("plot", {"confidence": True}, "plot: config.confidence: needs a number between 0 and 1 (exclusive), got True"),
])
def test_a_bad_interval_step_config_is_refused_before_anything_runs(study_project, cli, builtin, config, message):
    manifest = write_study(study_project, artifacts={"arm": {"df": "dataframe"}, "experiment": {
        "out": {"type": "plot" if builtin == "plot" else "dataframe", "path": "{level_dir}/out." + ("svg" if builtin == "plot" else "csv")}}},
        hooks={"experiment": {"post": [{"builtin": builtin, "in": "df", "out": "out", "config": config}]}})
    for command in (("run", manifest), ("validate",)):
        result = cli(*command)
        assert result.exit_code == 1 and f"hooks.experiment.post[{builtin}]: {message}" in result.output, result.output
    assert not (study_project / "calls.log").exists()


def test_a_case_step_elsewhere_is_refused_before_anything_runs(study_project, cli):
    manifest = write_study(study_project, artifacts={"item": {"df": "dataframe"}},
                           hooks={"item": {"post": [{"builtin": "trace_stats", "out": "df"}]}})
    result = cli("run", manifest)
    assert result.exit_code == 1 and not (study_project / "calls.log").exists()
    assert result.output.strip() == ("Error: experiments/study.yaml: hooks.item.post[trace_stats]: trace_stats runs as "
                                     "a case post step (hooks.case.post)")


def test_a_png_plot_fails_with_one_line(study_project, cli):
    manifest = write_study(study_project, artifacts={"arm": {"df": "dataframe"},
                                                     "experiment": {"chart": {"type": "plot", "path": "{level_dir}/s.png"}}},
                           hooks={"experiment": {"post": [{"builtin": "plot", "in": "df", "out": "chart"}]}})
    result = cli("run", manifest)
    assert result.exit_code == 1
    assert ("Error: experiment post step 'plot' failed: plot needs an 'out' artifact of type plot whose path ends in "
            ".svg (it draws SVG, not PNG)") in result.output.splitlines()


def test_the_documented_example_runs_in_the_example_project(example_project, cli):
    text = re.search(r"```yaml\n(name: arithmetic-steps\n.*?)```", DOCS.read_text(), re.S).group(1)
    (example_project / "experiments/arithmetic-steps.yaml").write_text(text)
    result = cli("run", "experiments/arithmetic-steps.yaml", "--allow-failures")
    assert result.exit_code == 0, result.output
    for run in runs(example_project):
        frame = read_csv(run.directory / "df.csv")
        assert len(frame) == 20 and len(read_csv(run.directory / "stats.csv")) == 20
        by_case = {(c["item_id"], c["repeat"]): c for c in run.cases}
        for row in frame:
            case = by_case[(row["item_id"], int(row["repeat"]))]
            assert float(row["score.mentions"]) == float(str(case["expected"]) in str(case["output"]))
    (chart,) = example_project.glob("results/arithmetic-steps/*/contains.svg")
    groups = ET.parse(chart).getroot().findall(f"{SVG}g")
    assert sorted(g.find(f"{SVG}text").text for g in groups) == ["careful", "sampler"]
    assert cli("build").exit_code == 0
    page = example_project / "site" / paths.experiment("arithmetic-steps")
    images = [node.attrs.get("src") for node in parse(page).iter() if node.tag == "img"]
    (shown,) = [src for src in images if src and src.endswith("/artifacts/chart.svg")]  # named by its artifact
    assert (page.parent / shown).read_bytes() == chart.read_bytes(), "the experiment page shows the chart as drawn"


def test_write_trace_writes_a_column_per_evaluator(study_project, cli):
    manifest = write_study(study_project, artifacts={"case": {"trace": "trace"}},
                           hooks={"case": {"post": [{"builtin": "write_trace", "out": "trace"}]}})
    assert cli("run", manifest).exit_code == 0
    (run,) = runs(study_project)
    (line,) = [json.loads(x) for x in (run.directory / "items/q0/repeat-0/trace.jsonl").read_text().splitlines()]
    assert line["score.exact"] == 1.0


def test_an_eval_steps_judge_spends_against_the_batchs_ceiling(study_project, cli):
    (study_project / "paid_judge.py").write_text(
        "def grade(input):\n    return {'output': '{\"score\": 9, \"reason\": \"ok\"}', 'cost_usd': 0.01}\n")
    judge = {"type": "llm_judge", "name": "judged", "judge": "python:paid_judge:grade"}
    manifest = write_study(study_project, items=10, concurrency=1, artifacts={"case": {"metrics": "metrics"}},
                           hooks={"case": {"post": [{"builtin": "eval", "out": "metrics", "config": {"evaluators": [judge]}}]}})
    result = cli("run", manifest, "--max-cost", "0.03")
    assert result.exit_code == 1
    (run,) = runs(study_project)
    assert run.footer.status == "stopped_cost_ceiling" and len(run.cases) == 3
    assert run.footer.raw["cost_ceiling"]["spent_usd"] == pytest.approx(0.03)
    metrics = json.loads((run.directory / "items/q0/repeat-0/metrics.json").read_text())
    assert metrics["scoring_cost_usd"] == 0.01 and metrics["score.judged"] == pytest.approx(0.9)  # 9 on the default 0-10 scale


def test_a_row_that_is_not_a_json_object_is_refused_naming_its_file(tmp_path):
    from evalsite.execute.builtin_steps import StepFailed, read_rows

    lines = tmp_path / "metrics.jsonl"
    lines.write_text('{"score": 1}\n\n"text"\n', encoding="utf-8")  # gather used to split "text" into columns t, e, x
    with pytest.raises(StepFailed, match=r"metrics\.jsonl: row 2 is a str, not a JSON object$"):
        read_rows(lines)
    whole = tmp_path / "metrics.json"
    whole.write_text('[{"score": 1}, [2]]', encoding="utf-8")
    with pytest.raises(StepFailed, match=r"metrics\.json: row 2 is a list, not a JSON object$"):
        read_rows(whole)
    whole.write_text('{"score": 1}', encoding="utf-8")
    assert read_rows(whole) == [{"score": 1}]


def test_the_steps_files_are_unicode_when_a_target_or_an_evaluator_gave_a_lone_surrogate(study_project, cli):
    """A target's undecodable byte (surrogateescape) and an evaluator's half an emoji: the trace and
    eval files hold U+FFFD where the steps used to end in UnicodeEncodeError."""
    (study_project / "undecoded.py").write_text("def answer(input):\n    return b'ok \\xff'.decode('utf-8', 'surrogateescape')\n")
    (study_project / "halves.py").write_text("def check(output, row):\n    return {'score': 1.0, 'passed': True, 'detail': 'half \\ud83d'}\n")
    evaluators = [{"type": "python:halves:check", "name": "halves"}]
    manifest = write_study(study_project, items=1, target="python:undecoded:answer",
                           artifacts={"case": {"trace": "trace", "metrics": "metrics"}},
                           hooks={"case": {"post": [{"builtin": "write_trace", "out": "trace"},
                                                    {"builtin": "eval", "out": "metrics", "config": {"evaluators": evaluators}}]}})
    cli("run", manifest)
    (run,) = runs(study_project)
    folder = run.directory / "items/q0/repeat-0"
    assert json.loads((folder / "trace.jsonl").read_text())["output"] == "ok \ufffd"
    (metrics,) = [path for path in folder.iterdir() if path.name.startswith("metrics")]
    assert json.loads(metrics.read_text())["scores"][0]["detail"] == "half \ufffd"
