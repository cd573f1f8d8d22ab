"""``evalsite import lm-eval`` on lm-evaluation-harness 0.4.13 output (see fixtures/external/README.md)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from import_support import LMEVAL, evaluator_means, read_jsonl, runs_by_arm, write_jsonl

EXACT_MATCH = {"model-a": 0.7083, "model-b": 0.4167}  # README: lm-eval exact_match,none


def copy_model(tmp_path: Path, model: str = "model-a") -> tuple[Path, Path]:
    """A writable copy of one model's folder: (results file, samples file)."""
    folder = shutil.copytree(LMEVAL / model, tmp_path / "lmeval" / model)
    return next(folder.glob("results_*.json")), next(folder.glob("samples_*.jsonl"))


def test_results_and_samples_give_one_run_per_model_and_task(import_project, cli):
    result = cli("import", "lm-eval", str(LMEVAL))  # a folder stands for every results_*.json inside
    assert result.exit_code == 0, result.output
    runs = runs_by_arm(import_project)
    assert sorted(runs) == ["model-a", "model-b"]
    for arm, run in runs.items():
        assert run.status == "completed"
        assert run.header.experiment == "fixture_upper"
        assert len(run.cases) == 24
        assert [c["item_id"] for c in run.cases] == [f"item-{i:02d}" for i in range(24)]
        assert all([s["evaluator"] for s in c["scores"]] == ["exact_match"] for c in run.cases)
        mean = evaluator_means(run)["exact_match"]
        assert mean == pytest.approx(EXACT_MATCH[arm], abs=1e-4)
        assert mean == pytest.approx(run.header.raw["source"]["reported"]["metrics"]["exact_match,none"])


def test_corpus_metrics_stay_run_level(import_project, cli):
    cli("import", "lm-eval", str(LMEVAL / "model-a"))
    run = runs_by_arm(import_project)["model-a"]
    reported = run.header.raw["source"]["reported"]
    assert reported["corpus_metrics"] == ["bleu"]
    assert reported["metrics"]["bleu,none"] == pytest.approx(94.675, abs=1e-3)
    assert "bleu" not in run.header.evaluators


def test_header_and_case_fields(import_project, cli):
    cli("import", "lm-eval", str(LMEVAL / "model-b"))
    run = runs_by_arm(import_project)["model-b"]
    header = run.header.raw
    assert header["source"]["version"] == "0.4.13"
    assert [f["path"].rsplit("/", 1)[-1][:8] for f in header["source"]["files"]] == ["results_", "samples_"]
    assert header["fingerprint"]["code"] == {"commit": "2ec8992", "dirty": None}
    spec = header["fingerprint"]["source"]["spec"]
    assert spec["task_version"] == 1.0
    assert "data_files" not in spec["task_config"]["dataset_kwargs"]  # machine paths stay out
    assert header["config"]["model_args"]["model"] == "model-b"
    case = run.cases[0]
    assert case["input"] == "Answer: item 0: echo harbor signal packet"  # the chat message sent
    assert case["output"] == "ANSWER: ITEM 0: ECHO HARBOR SIGNAL PACKET"
    assert case["expected"] == "ITEM 0: ECHO HARBOR SIGNAL PACKET"
    assert case["scores"][0]["score"] == 0.0 and case["passed"] is False


def test_a_second_filter_adds_scores_to_the_same_documents(import_project, cli, tmp_path):
    results, samples = copy_model(tmp_path)
    lines = read_jsonl(samples)
    strict = [{**line, "filter": "strict-match", "filtered_resps": ["X"], "exact_match": 0.0} for line in lines]
    write_jsonl(samples, lines + strict)
    assert cli("import", "lm-eval", str(results)).exit_code == 0
    run = runs_by_arm(import_project)["model-a"]
    assert len(run.cases) == 24
    means = evaluator_means(run)
    assert means == pytest.approx({"exact_match": 17 / 24, "exact_match,strict-match": 0.0})
    assert run.cases[0]["scores"][1]["detail"] == "filtered answer: 'X'"


def test_missing_documents_make_an_interrupted_run(import_project, cli, tmp_path):
    results, samples = copy_model(tmp_path)
    write_jsonl(samples, read_jsonl(samples)[:20])
    result = cli("import", "lm-eval", str(results))
    assert result.exit_code == 0
    assert "20 documents in the samples file, 24 evaluated" in result.output
    assert runs_by_arm(import_project)["model-a"].status == "interrupted"


def test_results_without_samples_name_the_missing_file(import_project, cli, tmp_path):
    results, samples = copy_model(tmp_path)
    samples.unlink()
    result = cli("import", "lm-eval", str(results))
    assert result.exit_code == 1
    assert f"no {samples.name} beside it" in result.output and "--log_samples" in result.output


def test_an_unknown_lm_eval_version_is_refused_naming_the_field(import_project, cli, tmp_path):
    results, _ = copy_model(tmp_path)
    data = json.loads(results.read_text())
    data["lm_eval_version"] = "0.5.0"
    results.write_text(json.dumps(data))
    result = cli("import", "lm-eval", str(results))
    assert result.exit_code == 1
    assert result.output.strip() == (
        f"Error: {results}: lm_eval_version is '0.5.0'; evalsite reads lm-evaluation-harness 0.4.x results"
    )


def test_a_file_without_configs_is_not_lm_eval_results(import_project, cli, tmp_path):
    path = tmp_path / "results_x.json"
    path.write_text(json.dumps({"results": {}}))
    result = cli("import", "lm-eval", str(path))
    assert result.exit_code == 1
    assert "no 'configs' object: not an lm-eval results_*.json file" in result.output


def test_the_prompt_enters_the_fingerprint_and_the_metric_stays_comparable(import_project, cli):
    cli("import", "lm-eval", str(LMEVAL))
    a, b = (runs_by_arm(import_project)[arm].header.raw for arm in ("model-a", "model-b"))
    assert a["fingerprint"]["prompt_hash"] != b["fingerprint"]["prompt_hash"]  # different doc_to_text
    assert a["evaluators"] == b["evaluators"]  # same task version and metric: comparable scores


def test_an_imported_run_rescores_against_the_project_dataset_with_the_same_questions(import_project, cli):
    """The recorded path is lm-eval's own; the project's file under another name has the same questions."""
    shutil.copy(LMEVAL.parent / "data" / "items-24.jsonl", import_project / "data" / "questions.jsonl")
    assert cli("import", "lm-eval", str(LMEVAL / "model-a")).exit_code == 0
    (imported,) = runs_by_arm(import_project).values()
    (import_project / "experiments").mkdir()
    (import_project / "experiments" / "upper.yaml").write_text(
        "name: upper\ndataset: {path: data/questions.jsonl}\narms: [{id: model-a, target: none}]\n"
        "evaluators: [{type: exact, name: exact}]\n"
    )
    result = cli("rescore", imported.run_id, "--manifest", "experiments/upper.yaml", "--json")
    summary = json.loads(result.stdout)
    expected = {row["id"]: row["expected"] for row in read_jsonl(import_project / "data" / "questions.jsonl")}
    exact = [case["output"] == expected[case["item_id"]] for case in imported.cases]
    assert result.exit_code == (0 if all(exact) else 1), result.output  # exit 1: some items fail exact
    assert summary["derived_from"] == imported.run_id
    assert summary["mean_score"] == pytest.approx(sum(exact) / len(exact))


def test_rescore_refuses_a_dataset_with_other_questions(import_project, cli):
    rows = read_jsonl(LMEVAL.parent / "data" / "items-24.jsonl")
    rows[0]["input"] = "a different question"
    write_jsonl(import_project / "data" / "questions.jsonl", rows)
    assert cli("import", "lm-eval", str(LMEVAL / "model-a")).exit_code == 0
    (imported,) = runs_by_arm(import_project).values()
    (import_project / "experiments").mkdir()
    (import_project / "experiments" / "upper.yaml").write_text(
        "name: upper\ndataset: {path: data/questions.jsonl}\narms: [{id: model-a, target: none}]\n"
        "evaluators: [{type: exact, name: exact}]\n"
    )
    result = cli("rescore", imported.run_id, "--manifest", "experiments/upper.yaml")
    assert result.exit_code == 1
    assert "their questions differ" in result.output
