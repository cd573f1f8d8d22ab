"""Artifacts, the built-in steps and output_schema, end to end; the pipeline's validation."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from study_support import lines, runs, write_study

PIPELINE = {
    "artifacts": {
        "case": {"trace": "trace"},
        "item": {"df": "dataframe"},
        "arm": {"df": {"type": "dataframe", "path": "{run_dir}/frames/arm.csv"}},
        "experiment": {"ci": {"type": "dataframe", "path": "{level_dir}/ci_summary.csv"}},
    },
    "hooks": {
        "case": {"pre": [{"name": "prepare", "run": "python:study_steps:note"}],
                 "post": [{"builtin": "write_trace", "out": "trace"}]},
        "item": {"post": [{"name": "gather-item", "builtin": "gather", "in": "trace", "out": "df"}]},
        "arm": {"post": [{"name": "gather-arm", "builtin": "gather", "in": "df", "out": "df"}]},
        "experiment": {"post": [
            {"name": "ci", "builtin": "bootstrap_ci", "in": "df", "out": "ci", "config": {"metrics": ["score"]}},
            {"builtin": "validate_outputs", "depends_on": ["ci"]},
        ]},
    },
    "output_schema": {"required_files": ["ci_summary.csv"],
                      "required_columns": {"ci_summary.csv": ["arm", "metric", "mean", "ci_low", "ci_high"]}},
}


def two_arms(study, **extra):
    rows = [{"id": f"q{i}", "input": f"x{i}", "expected": f"ok x{i}" if i % 3 else "no"} for i in range(6)]
    return write_study(study, rows=rows, repeat=2, arms=[
        {"id": "a", "target": "python:study_target:answer"},
        {"id": "b", "target": "python:study_target:answer", "params": {"variant": 2}},
    ], **{**PIPELINE, **extra})


def read_csv(path):
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def test_case_pre_item_gather_and_experiment_ci_summary_run_end_to_end(study_project, cli):
    result = cli("run", two_arms(study_project), "--allow-failures")
    assert result.exit_code == 0, result.output
    first, second = runs(study_project)
    for run in (first, second):
        traces = sorted(run.directory.glob("items/*/repeat-*/trace.jsonl"))
        assert len(traces) == 12
        item_frame = read_csv(run.directory / "items" / "q0" / "df.csv")
        assert [(r["item_id"], r["repeat"]) for r in sorted(item_frame, key=lambda r: r["repeat"])] == [("q0", "0"), ("q0", "1")]
        arm_frame = read_csv(run.directory / "frames" / "arm.csv")
        assert len(arm_frame) == 12 and {r["arm"] for r in arm_frame} == {run.header.raw["arm_id"]}
        assert run.footer.raw["artifacts"] == {"df": {"type": "dataframe", "path": "frames/arm.csv"}}
    (results,) = study_project.glob("results/study/*")
    summary = read_csv(results / "ci_summary.csv")
    assert [(r["arm"], r["metric"]) for r in summary] == [("a", "score"), ("b", "score")]
    for row in summary:
        scores = [1.0 if i % 3 else 0.0 for i in range(6)]  # items 0 and 3 expect "no"
        assert float(row["mean"]) == np.mean(scores)
        assert float(row["ci_low"]) <= float(row["mean"]) <= float(row["ci_high"])
    end = json.loads((results / "end.json").read_text())
    assert end["hook_errors"] == [] and sorted(end["runs"]) == sorted(r.directory.name for r in (first, second))
    assert len([e for e in lines(study_project / "steps.log") if e["step"] == "prepare"]) == 24  # before every case
    assert end["artifacts"] == {"ci": {"type": "dataframe", "path": "ci_summary.csv"}}
    assert cli("build").exit_code == 0
    page = (study_project / "site/experiments/study.html").read_text()
    assert 'href="../experiments/study/artifacts/ci.csv"' in page
    assert (study_project / "site/experiments/study/artifacts/ci.csv").read_bytes() == (results / "ci_summary.csv").read_bytes()


def test_output_schema_naming_a_missing_column_fails_the_run_naming_file_and_column(study_project, cli):
    schema = {"required_columns": {"ci_summary.csv": ["arm", "median"]}}
    result = cli("run", two_arms(study_project, output_schema=schema), "--allow-failures")
    assert result.exit_code == 1
    assert ("experiment post step 'validate_outputs' failed: output_schema: ci_summary.csv has no column 'median' "
            "(columns: arm, metric, mean, ci_low, ci_high, items)") in result.output


def test_declaring_output_schema_alone_checks_nothing(study_project, cli):
    manifest = write_study(study_project, output_schema={"required_files": ["missing.csv"]})
    assert cli("run", manifest).exit_code == 0


def test_a_missing_required_file_is_named(study_project, cli):
    manifest = write_study(study_project, output_schema={"required_files": ["plots/score.svg"]},
                           hooks={"experiment": {"post": [{"builtin": "validate_outputs"}]}})
    result = cli("run", manifest)
    assert result.exit_code == 1
    assert "output_schema: required file 'plots/score.svg' is missing from" in result.output


def test_steps_from_a_ref_file(study_project, cli):
    (study_project / "hooks").mkdir()
    (study_project / "hooks/post.yaml").write_text("- {name: noted, run: 'python:study_steps:note'}\n")
    manifest = write_study(study_project, items=1, hooks={"arm": {"post": {"ref": "hooks/post.yaml"}}})
    assert cli("run", manifest).exit_code == 0
    assert [e["step"] for e in lines(study_project / "steps.log")] == ["noted"]


def validate_output(study, cli, **manifest) -> list[str]:
    write_study(study, **manifest)
    result = cli("run", "experiments/study.yaml", "--dry-run")
    assert result.exit_code == 1
    assert not (study / "runs").exists()
    return [line.removeprefix("Error: ").removeprefix("experiments/study.yaml: ") for line in result.output.splitlines()]


def test_bad_pipelines_are_refused_one_line_each_before_anything_runs(study_project, cli):
    assert validate_output(study_project, cli, hooks={"itme": {"pre": []}}) == [
        "hooks.itme: unknown key; did you mean 'item'? (allowed: arm, case, experiment, item)"]
    assert validate_output(study_project, cli, hooks={"arm": {"post": [
        {"name": "x", "builtin": "gather", "depends_on": ["y"]},
        {"name": "y", "builtin": "gather", "depends_on": ["x"]},
    ]}}) == ["hooks.arm.post: depends_on cycle x -> y -> x"]
    assert validate_output(study_project, cli, hooks={"item": {"post": [{"builtin": "gather", "in": "trace"}]}}) == [
        "hooks.item.post[gather].in: no case artifact 'trace' (declared at artifacts.case: none)"]
    assert validate_output(study_project, cli, artifacts={"arm": {"df": "dataframe"}},
                           hooks={"arm": {"post": [{"builtin": "gather", "out": "frame"}]}}) == [
        "hooks.arm.post[gather].out: no arm artifact 'frame' (declared at artifacts.arm: df)"]
    assert validate_output(study_project, cli, hooks={"arm": {"pre": [{"builtin": "gahter"}]}}) == [
        "hooks.arm.pre[gahter].builtin: unknown builtin 'gahter'; did you mean 'gather'? (known: bootstrap_ci, eval, gather, plot, trace_stats, validate_outputs, write_trace)"]
    assert validate_output(study_project, cli, hooks={"arm": {"pre": [{"name": "two", "builtin": "gather", "run": "python:a:b"}]}}) == [
        "hooks.arm.pre[0]: a step needs exactly one of run, command, builtin (got run, builtin)"]
    assert validate_output(study_project, cli, hooks={"arm": {"pre": [{"ref": "hooks/nope.yaml"}]}}) == [
        "hooks.arm.pre[0].ref: step file 'hooks/nope.yaml' not found (relative to the project root)"]
    assert validate_output(study_project, cli, hooks={"arm": {"pre": [{"name": "f", "run": "python:study_steps:absent"}]}}) == [
        "hooks.arm.pre[f].run: step 'study_steps:absent': module 'study_steps' has no function 'absent'"]
    assert validate_output(study_project, cli, artifacts={"experiment": {"df": {"type": "dataframe", "path": "{run_dir}/x.csv"}}}) == [
        "artifacts.experiment.df.path: unknown placeholder {run_dir} at the experiment level (known: batch_id, experiment, level_dir)"]
    assert validate_output(study_project, cli, artifacts={"case": {"t": "tracee"}})[0].startswith("artifacts.case.t:")


def test_run_artifacts_appear_on_the_site_plots_inline(study_project, cli):
    manifest = write_study(study_project, items=2, artifacts={
        "case": {"trace": "trace"}, "item": {"df": "dataframe"},
        "arm": {"df": "dataframe", "chart": {"type": "plot", "path": "{run_dir}/plots/chart.svg"}}}, hooks={
        "case": {"post": [{"builtin": "write_trace", "out": "trace"}]},
        "item": {"post": [{"builtin": "gather", "in": "trace", "out": "df"}]},
        "arm": {"post": [{"builtin": "gather", "in": "df", "out": "df"}, {"name": "plot", "run": "python:study_steps:plot", "out": "chart"}]},
    })
    assert cli("run", manifest, "--build").exit_code == 0
    (run,) = runs(study_project)
    page = (study_project / "site" / "runs" / f"{run.run_id}.html").read_text()
    assert f'href="../runs/{run.run_id}/artifacts/chart.svg"' in page
    assert f'<img src="../runs/{run.run_id}/artifacts/chart.svg" alt="chart">' in page
    assert f'href="../runs/{run.run_id}/artifacts/df.csv"' in page
    copied = study_project / "site" / "runs" / run.run_id / "artifacts"
    assert (copied / "chart.svg").read_bytes() == (run.directory / "plots/chart.svg").read_bytes()
    assert (copied / "df.csv").read_text().splitlines()[0].startswith("experiment,batch_id,arm_id")


def test_gather_reads_metrics_json_and_writes_parquet(study_project, cli):
    import pyarrow.parquet as pq

    manifest = write_study(study_project, items=3, repeat=2, artifacts={
        "case": {"m": "metrics"}, "item": {"df": {"type": "dataframe", "path": "{level_dir}/frame.parquet"}},
        "arm": {"df": "dataframe"}, "experiment": {"ci": "dataframe"}}, hooks={
        "case": {"post": [{"name": "m", "run": "python:study_steps:metrics", "out": "m"}]},
        "item": {"post": [{"builtin": "gather", "in": "m", "out": "df"}]},
        "arm": {"post": [{"builtin": "gather", "in": "df", "out": "df"}]},
        "experiment": {"post": [{"builtin": "bootstrap_ci", "in": "df", "out": "ci"}]},
    })
    assert cli("run", manifest).exit_code == 0
    (run,) = runs(study_project)
    table = pq.read_table(run.directory / "items/q1/frame.parquet").to_pylist()
    assert sorted((r["item_id"], r["repeat"], r["score"]) for r in table) == [("q1", 0, 1.0), ("q1", 1, 1.0)]
    (ci,) = study_project.glob("results/study/*/ci.csv")
    assert ci.read_text().splitlines()[1].startswith("a,score,1.0,1.0,1.0,3")


def test_bootstrap_ci_agrees_with_scipy_on_items_and_averages_repeats_first(tmp_path):
    from types import SimpleNamespace

    from scipy import stats as scipy_stats

    from evalsite.execute.builtin_steps import bootstrap_ci, write_rows

    rng = np.random.default_rng(5)
    scores = rng.uniform(0, 1, 40).round(3)
    frame = tmp_path / "in.csv"
    write_rows(frame, [{"arm": "a", "item_id": f"q{i}", "repeat": 0, "score": float(s)} for i, s in enumerate(scores)])
    context = SimpleNamespace(inputs=[frame], config={}, output=tmp_path / "ci.csv", level_dir=tmp_path)
    bootstrap_ci(context)
    (row,) = read_csv(tmp_path / "ci.csv")
    reference = scipy_stats.bootstrap((scores,), np.mean, method="BCa", n_resamples=9999, random_state=1).confidence_interval
    assert float(row["mean"]) == pytest.approx(scores.mean())
    assert float(row["ci_low"]) == pytest.approx(reference.low, abs=0.01)
    assert float(row["ci_high"]) == pytest.approx(reference.high, abs=0.01)

    # two repeats per item: the mean is the mean of item means, whatever the order of the rows
    rows = [{"arm": "a", "item_id": f"q{i}", "repeat": r, "score": float(s) if r == 0 else 1.0}
            for r in (1, 0) for i, s in enumerate(scores)]
    write_rows(frame, rows)
    bootstrap_ci(context)
    (row,) = read_csv(tmp_path / "ci.csv")
    assert float(row["mean"]) == pytest.approx(np.mean((scores + 1.0) / 2))
    assert float(row["ci_low"]) < float(row["mean"]) < float(row["ci_high"])


def test_a_step_file_is_checked_like_inline_steps(study_project, cli):
    (study_project / "hooks").mkdir()
    (study_project / "hooks/bad.yaml").write_text("- {naem: x, builtin: gather}\n")
    (study_project / "hooks/not-a-list.yaml").write_text("name: x\n")
    lines_ = validate_output(study_project, cli, hooks={"arm": {"pre": [{"ref": "hooks/bad.yaml"}]}})
    assert lines_[0].startswith("hooks.arm.pre[0].ref: hooks/bad.yaml: [0].naem: unknown key; did you mean 'name'?")
    assert validate_output(study_project, cli, hooks={"arm": {"pre": {"ref": "hooks/not-a-list.yaml"}}}) == [
        "hooks.arm.pre[0].ref: hooks/not-a-list.yaml must hold a list of steps (or {steps: [...]}), without nested refs"]


def test_a_misspelt_inline_step_key_gets_the_closest_one(study_project, cli):
    assert validate_output(study_project, cli, hooks={"arm": {"pre": [{"naem": "x", "builtin": "gather"}]}})[0].startswith(
        "hooks.arm.pre[0].naem: unknown key; did you mean 'name'?")
    assert validate_output(study_project, cli, hooks={"arm": {"pre": [{"ref": "x.yaml", "builtin": "gather"}]}}) == [
        "hooks.arm.pre[0]: a {ref: FILE} entry takes no other key (got builtin)"]
