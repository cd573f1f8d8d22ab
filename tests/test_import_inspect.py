"""``evalsite import inspect`` on the logs Inspect AI 0.3.285 wrote (see fixtures/external/README.md)."""

from __future__ import annotations

import json
import zipfile
from collections import Counter
from pathlib import Path

import pytest
from import_support import INSPECT_EVAL, INSPECT_JSON, evaluator_means, runs_by_arm

from evalsite.execute.importers.evalzip import EvalZip, write_zstd_zip
from evalsite.execute.importers.inspect_log import grade

MODEL_A, MODEL_B = "openai-api/fake/model-a", "openai-api/fake/model-b"


def eval_members(path: Path) -> dict[str, bytes]:
    with EvalZip(path) as log:
        return {name: log.read(name) for name in log.names()}


def log_of(model: str, paths: list[Path]) -> Path:
    """The fixture log of ``model``: both logs of one call share run_id, so look at eval.model."""
    for path in paths:
        if path.suffix == ".eval":
            header = json.loads(eval_members(path)["header.json"])
        else:
            header = json.loads(path.read_text())
        if header["eval"]["model"] == model:
            return path
    raise AssertionError(model)


@pytest.mark.parametrize("value, expected", [
    ("C", (1.0, True, "C", None)),
    ("P", (0.5, False, "P", None)),
    ("I", (0.0, False, "I", None)),
    ("N", (0.0, False, "N", None)),
    ("yes", (1.0, True, "yes", None)),
    ("False", (0.0, False, "False", None)),
    ("0.25", (0.25, None, "0.25", None)),
    (0.75, (0.75, None, None, None)),
    (True, (1.0, True, None, None)),
])
def test_grades_and_numbers_map_as_inspects_value_to_float(value, expected):
    assert grade(value) == expected


def test_an_unmappable_value_is_a_score_error_not_a_silent_zero():
    score, passed, label, error = grade("maybe")
    assert score is None and passed is False and label == "maybe"
    assert "cannot map the score value 'maybe'" in error


def test_eval_logs_give_one_run_per_model_with_every_epoch(import_project, cli):
    result = cli("import", "inspect", *map(str, INSPECT_EVAL))
    assert result.exit_code == 0, result.output
    runs = runs_by_arm(import_project)
    assert sorted(runs) == [MODEL_A, MODEL_B]
    for run in runs.values():
        assert run.status == "completed" and run.header.raw["source"]["status"] == "success"
        assert len(run.cases) == 48
        assert Counter(c["repeat"] for c in run.cases) == {0: 24, 1: 24}
        assert all(len(c["scores"]) == 2 for c in run.cases)
        assert run.header.plan == {"items": 24, "repeat": 2, "cases": 48}
    # the README's observed results, and the accuracy each log reports itself
    means = {arm: evaluator_means(run) for arm, run in runs.items()}
    assert means[MODEL_A]["match"] == pytest.approx(0.7083, abs=1e-4)
    assert means[MODEL_B]["match"] == pytest.approx(0.4167, abs=1e-4)
    assert means[MODEL_A]["includes"] == means[MODEL_B]["includes"] == pytest.approx(0.7083, abs=1e-4)
    for arm, run in runs.items():
        reported = run.header.raw["source"]["reported"]["scores"]
        for scorer in ("match", "includes"):
            assert means[arm][scorer] == pytest.approx(reported[scorer]["accuracy"])


def test_json_logs_stream_their_samples(import_project, cli):
    assert cli("import", "inspect", *map(str, INSPECT_JSON)).exit_code == 0
    runs = runs_by_arm(import_project)
    expected = {MODEL_A: {"match": 7 / 9, "includes": 7 / 9}, MODEL_B: {"match": 3 / 9, "includes": 7 / 9}}
    for arm, run in runs.items():
        assert len(run.cases) == 18 and run.header.dataset.items == 9
        assert evaluator_means(run) == pytest.approx(expected[arm])


def test_a_folder_stands_for_the_logs_inside(import_project, cli):
    assert cli("import", "inspect", str(INSPECT_EVAL[0].parent)).exit_code == 0
    assert len(runs_by_arm(import_project)) == 2


def test_case_and_header_fields(import_project, cli):
    cli("import", "inspect", str(log_of(MODEL_B, INSPECT_EVAL)))
    run = runs_by_arm(import_project)[MODEL_B]
    case = next(c for c in run.cases if c["item_id"] == "item-00" and c["repeat"] == 0)
    assert case["input"] == "Answer: item 0: echo harbor signal packet"  # what the solver sent
    assert case["expected"] == "ITEM 0: ECHO HARBOR SIGNAL PACKET"
    assert case["output"] == "ANSWER: ITEM 0: ECHO HARBOR SIGNAL PACKET"
    assert (case["input_tokens"], case["output_tokens"]) == (7, 7)
    assert case["latency_ms"] == pytest.approx(64.174, abs=1e-3)
    assert case["finish_reason"] == "stop"
    assert {s["evaluator"]: s["label"] for s in case["scores"]} == {"match": "I", "includes": "C"}
    header = run.header.raw
    assert header["source"]["version"] == "0.3.285"
    assert header["experiment"] == "fixture"
    assert header["fingerprint"]["code"] == {"commit": "2ec8992", "dirty": True, "origin": ""}
    spec = header["fingerprint"]["source"]["spec"]
    assert spec["config"]["epochs"] == 2
    assert spec["task_args"] == {"dataset": "<dataset location>"}  # a machine's path never enters it
    assert header["dataset"]["path"] == "fixtures/data/items-24.jsonl"


def test_cases_follow_the_dataset_order(import_project, cli):
    cli("import", "inspect", str(INSPECT_EVAL[0]))
    (run,) = runs_by_arm(import_project).values()
    assert [c["item_id"] for c in run.cases[:3]] == ["item-00", "item-01", "item-02"]
    assert [c["repeat"] for c in run.cases[23:25]] == [0, 1]


def test_an_interrupted_eval_log_is_imported_as_interrupted(import_project, cli, tmp_path):
    members = eval_members(log_of(MODEL_A, INSPECT_EVAL))
    kept = {n: d for n, d in members.items()
            if n.startswith("_journal/start") or (n.startswith("samples/") and "epoch_1" in n)}
    path = tmp_path / "interrupted.eval"
    write_zstd_zip(path, list(kept.items())[:11])  # start.json and 10 samples; no header.json
    result = cli("import", "inspect", str(path))
    assert result.exit_code == 0, result.output
    assert "status is 'started': imported as interrupted" in result.output
    run = runs_by_arm(import_project)[MODEL_A]
    assert run.status == "interrupted" and run.footer.raw["source_status"] == "started"
    assert len(run.cases) == 10


def test_a_log_without_samples_is_read_from_its_summaries(import_project, cli, tmp_path):
    members = eval_members(log_of(MODEL_A, INSPECT_EVAL))
    path = tmp_path / "no-samples.eval"
    write_zstd_zip(path, [(n, d) for n, d in members.items() if not n.startswith("samples/")])
    result = cli("import", "inspect", str(path))
    assert result.exit_code == 0, result.output
    assert "only summaries" in result.output
    run = runs_by_arm(import_project)[MODEL_A]
    assert len(run.cases) == 48 and all(c["output"] is None for c in run.cases)
    assert evaluator_means(run)["match"] == pytest.approx(17 / 24)


def test_a_sample_error_is_kept_as_a_case_error(import_project, cli, tmp_path):
    log = json.loads(log_of(MODEL_A, INSPECT_JSON).read_text())
    sample = log["samples"][2]
    sample["error"] = {"message": "RuntimeError: connection reset", "traceback": "..."}
    del sample["scores"]
    log["status"] = "error"
    log["error"] = {"message": "RuntimeError: connection reset", "traceback": "..."}
    path = tmp_path / "error.json"
    path.write_text(json.dumps(log))
    assert cli("import", "inspect", str(path)).exit_code == 0
    run = runs_by_arm(import_project)[MODEL_A]
    assert run.status == "failed" and run.footer.raw["source_error"] == "RuntimeError: connection reset"
    case = next(c for c in run.cases if c["item_id"] == sample["id"] and c["repeat"] == sample["epoch"] - 1)
    assert case["error"] == "RuntimeError: connection reset"
    assert [(s["evaluator"], s["score"], s["passed"]) for s in case["scores"]] == [
        ("match", 0.0, False), ("includes", 0.0, False)]


def test_an_unknown_log_version_is_refused_naming_the_field(import_project, cli, tmp_path):
    members = eval_members(INSPECT_EVAL[0])
    header = json.loads(members["header.json"])
    header["version"] = 3
    members["header.json"] = json.dumps(header).encode()
    path = tmp_path / "future.eval"
    write_zstd_zip(path, members.items())
    result = cli("import", "inspect", str(path))
    assert result.exit_code == 1
    assert result.output.strip() == f"Error: {path}: log version is 3; evalsite reads Inspect log version 2"


def test_a_damaged_member_is_reported_by_name(import_project, cli, tmp_path):
    data = bytearray(INSPECT_EVAL[0].read_bytes())
    with zipfile.ZipFile(INSPECT_EVAL[0]) as log:
        info = log.getinfo("samples/item-03_epoch_1.json")
    data[info.header_offset + 30 + len(info.filename) + 20] ^= 0xFF
    path = tmp_path / "damaged.eval"
    path.write_bytes(bytes(data))
    result = cli("import", "inspect", str(path))
    assert result.exit_code == 1
    assert "member samples/item-03_epoch_1.json" in result.output
    assert not (import_project / "runs").exists()


def test_an_encrypted_member_is_refused_by_name(import_project, cli, tmp_path):
    """A member flagged encrypted (a password-protected ZIP) was a RuntimeError traceback from zipfile."""
    path = tmp_path / "encrypted.eval"
    with EvalZip(INSPECT_EVAL[0]) as log, zipfile.ZipFile(path, "w") as out:
        for name in log.names():
            out.writestr(name, bytes(log.read(name)))
    data = bytearray(path.read_bytes())
    for signature, flags_at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):  # every header's flag bit 0
        at = data.find(signature)
        while at != -1:
            data[at + flags_at] |= 1
            at = data.find(signature, at + 4)
    path.write_bytes(bytes(data))
    result = cli("import", "inspect", str(path))
    assert (result.exit_code, result.output) == (
        1, f"Error: {path}: member header.json is encrypted; evalsite reads only unencrypted logs\n")
    assert not (import_project / "runs").exists()


def test_members_sort_by_epoch_in_numeric_order_however_long_the_number(import_project, cli, tmp_path):
    """A member named ``…_epoch_<5,000 digits>.json`` was a ValueError traceback (int() refuses past
    4,300 digits); epochs 10 and 9 still sort as numbers."""
    with EvalZip(INSPECT_EVAL[0]) as log:
        members = {name: bytes(log.read(name)) for name in log.names()}
    renamed = {"samples/item-00_epoch_1.json": "samples/item-00_epoch_" + "9" * 5000 + ".json",
               "samples/item-01_epoch_1.json": "samples/item-01_epoch_10.json",
               "samples/item-02_epoch_1.json": "samples/item-02_epoch_9.json"}
    path = tmp_path / "epochs.eval"
    write_zstd_zip(path, [(renamed.get(name, name), data) for name, data in members.items()])
    result = cli("import", "inspect", str(path))
    assert result.exit_code == 0, result.output
    (run,) = runs_by_arm(import_project).values()
    order = [case.item_id for case in run.cases]
    assert order[-3:] == ["item-02", "item-01", "item-00"]


def test_arm_from_reads_the_log_header(import_project, cli):
    result = cli("import", "inspect", str(INSPECT_EVAL[0]), "--arm-from", "eval.dataset.name")
    assert result.exit_code == 0, result.output
    assert list(runs_by_arm(import_project)) == ["items-24"]


def test_members_written_as_several_zstd_frames_import_with_the_same_figures(import_project, cli, tmp_path):
    """Inspect splits a large member into several zstd frames; every frame is read, not the first."""
    source = log_of(MODEL_A, INSPECT_EVAL)
    path = tmp_path / "frames.eval"
    write_zstd_zip(path, eval_members(source).items(), frame_size=64)
    with EvalZip(path) as log:  # the rewritten file really holds several frames per member
        info = log._zip.getinfo("header.json")
        raw = open(path, "rb").read()
        assert raw.count(b"\x28\xb5\x2f\xfd", info.header_offset, info.header_offset + info.compress_size + 200) > 2
    result = cli("import", "inspect", str(path))
    assert result.exit_code == 0, result.output
    run = runs_by_arm(import_project)[MODEL_A]
    assert len(run.cases) == 48
    assert evaluator_means(run)["match"] == pytest.approx(0.7083, abs=1e-4)


def test_a_status_that_is_not_text_is_an_unknown_status_not_a_crash(import_project, cli, tmp_path):
    log = json.loads(log_of(MODEL_A, INSPECT_JSON).read_text())
    log["status"] = {"state": "success"}  # unhashable: looking it up used to raise TypeError
    path = tmp_path / "odd-status.json"
    path.write_text(json.dumps(log))
    result = cli("import", "inspect", str(path))
    assert result.exit_code == 0, result.output
    assert "unknown log status {'state': 'success'}; imported as interrupted" in result.output
    assert runs_by_arm(import_project)[MODEL_A].status == "interrupted"
