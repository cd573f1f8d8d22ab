"""A block of an imported source that is not the JSON type its tool writes: read as absent (as
:func:`evalsite.jsonshape.mapping` reads a block that is not an object), or, where nothing can be
read without it, refused in one line naming it. Each of these used to escape ``evalsite import``
as an AttributeError, TypeError, ValueError or OverflowError traceback, or (a text field holding
another type) to write a run whose reader then skipped the case."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from import_support import INSPECT_EVAL, INSPECT_JSON, LMEVAL, PROMPTFOO, imported_runs

from evalsite.execute.importers.evalzip import EvalZip, write_zstd_zip
from evalsite.runlog.store import Run

LMEVAL_TASK = "fixture_upper"  # the one task of the model-a fixture
Change = Callable[[dict[str, Any]], None]


def inspect_log(folder: Path, change: Change) -> Path:
    folder.mkdir()
    log = json.loads(INSPECT_JSON[0].read_text(encoding="utf-8"))
    change(log)
    path = folder / "log.json"
    path.write_text(json.dumps(log), encoding="utf-8")
    return path


def promptfoo_results(folder: Path, change: Change) -> Path:
    folder.mkdir()
    document = json.loads((PROMPTFOO / "results.json").read_text(encoding="utf-8"))
    change(document)
    path = folder / "results.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def lmeval_results(folder: Path, change: Change) -> Path:
    """The model-a results (with its samples file beside it), changed."""
    copy = shutil.copytree(LMEVAL / "model-a", folder)
    path = next(copy.glob("results_*.json"))
    results = json.loads(path.read_text(encoding="utf-8"))
    change(results)
    path.write_text(json.dumps(results), encoding="utf-8")
    return path


def lmeval_samples(folder: Path, change: Change, change_results: Change = lambda results: None) -> Path:
    """The model-a results, its samples file's first line changed (and its results, by ``change_results``)."""
    path = lmeval_results(folder, change_results)
    samples = next(folder.glob("samples_*.jsonl"))
    first, rest = samples.read_text(encoding="utf-8").split("\n", 1)
    line = json.loads(first)
    change(line)
    samples.write_text(json.dumps(line) + "\n" + rest, encoding="utf-8")
    return path


def metric_named_by_a_list(results: dict[str, Any]) -> None:
    results["configs"][LMEVAL_TASK]["metric_list"].insert(0, {"metric": []})


def first_sample(change: Change) -> Change:
    return lambda log: change(log["samples"][0])


def unscored_cases(run: Run) -> int:
    return sum(not case.scores for case in run.cases)


def no_usage(sample: dict[str, Any]) -> None:
    del sample["output"]["usage"]
    sample["model_usage"] = [1]


READ_AS_ABSENT = [
    ("inspect", inspect_log, first_sample(lambda s: s.update(scores=[1])), lambda run: unscored_cases(run) == 1),
    ("inspect", inspect_log, first_sample(no_usage),
     lambda run: sum(case.input_tokens is None for case in run.cases) == 1),
    ("inspect", inspect_log, lambda log: log["results"]["scores"][0].update(metrics=[1]),
     lambda run: unscored_cases(run) == 0),
    ("inspect", inspect_log, lambda log: log["eval"].update(scorers=5), lambda run: unscored_cases(run) == 0),
    # a scorer entry without a text name (was a TypeError traceback: unhashable, or None sorted with text)
    ("inspect", inspect_log, lambda log: log["eval"]["scorers"][0].update(name=[1]),
     lambda run: unscored_cases(run) == 0),
    ("inspect", inspect_log, lambda log: log["results"]["scores"][0].update(name=[1]),
     lambda run: all(isinstance(name, str) for name in run.header.raw["source"]["reported"]["scores"])),
    ("inspect", inspect_log, lambda log: log["results"]["scores"].insert(0, {}),
     lambda run: all(isinstance(name, str) for name in run.header.raw["source"]["reported"]["scores"])),
    ("inspect", inspect_log, lambda log: log["eval"]["dataset"].update(location=5),  # was a TypeError traceback
     lambda run: run.header.dataset.path is None),
    ("promptfoo", promptfoo_results, lambda doc: doc["results"]["results"][0]["response"].update(tokenUsage="x"),
     lambda run: all(case.input_tokens is not None for case in run.cases)),  # the result's own tokenUsage instead
    ("promptfoo", promptfoo_results, lambda doc: doc["results"]["stats"].update(durationMs=10**30),  # OverflowError
     lambda run: run.footer is not None and run.footer.ended_at is None),
    # a metric named by another JSON type than text (was a TypeError traceback: unhashable, or sorted with text)
    ("lm-eval", lambda folder, change: lmeval_samples(folder, change), lambda line: line.update(metrics=[1]),
     lambda run: unscored_cases(run) == 0),
    ("lm-eval", lambda folder, change: lmeval_samples(folder, change), lambda line: line.update(metrics=[[]]),
     lambda run: unscored_cases(run) == 0),
    ("lm-eval", lambda folder, change: lmeval_samples(folder, change, metric_named_by_a_list),
     lambda line: line.pop("metrics"), lambda run: unscored_cases(run) == 0),
    ("lm-eval", lmeval_results, lambda results: results.update(date=1e20), lambda run: run.header.started_at is None),
    ("lm-eval", lmeval_results, lambda results: results.update(total_evaluation_time_seconds="inf"),
     lambda run: run.header.started_at is not None),
    ("lm-eval", lmeval_results, lambda results: results["configs"][LMEVAL_TASK].update(metric_list=5, filter_list=5),
     lambda run: unscored_cases(run) == 0),
]


@pytest.mark.parametrize("format_name, write, change, holds", READ_AS_ABSENT)
def test_a_malformed_block_reads_as_absent(import_project, cli, tmp_path, format_name, write, change, holds):
    path = write(tmp_path / "source", change)
    result = cli("import", format_name, str(path))
    assert result.exit_code == 0, result.output
    runs = imported_runs(import_project)
    assert runs and all(run.cases for run in runs)
    assert any(holds(run) for run in runs)


def eval_log_without_header(folder: Path) -> Path:
    """An interrupted ``.eval`` log whose ``_journal/start.json`` holds a list."""
    folder.mkdir()
    with EvalZip(INSPECT_EVAL[0]) as log:
        members = {name: log.read(name) for name in log.names() if name != "header.json"}
    members["_journal/start.json"] = bytearray(b"[1]")
    path = folder / "interrupted.eval"
    write_zstd_zip(path, [(name, bytes(data)) for name, data in members.items()])
    return path


def plain_rows(folder: Path, row: dict[str, Any]) -> Path:
    folder.mkdir()
    path = folder / "rows.jsonl"
    path.write_text(json.dumps({"id": "q1", "input": "x", "output": "y", "score": 1}) + "\n" + json.dumps(row) + "\n",
                    encoding="utf-8")
    return path


def component_not_an_object(document: dict[str, Any]) -> None:
    document["results"]["results"][0]["gradingResult"]["componentResults"] = [1]


def rename_task(results: dict[str, Any]) -> None:
    results["configs"]["a/b"] = results["configs"].pop(LMEVAL_TASK)


@pytest.mark.parametrize("format_name, write, message", [
    ("inspect", eval_log_without_header, "_journal/start.json is not an object"),
    ("promptfoo", lambda folder: promptfoo_results(folder, component_not_an_object),
     "results.results[0]: gradingResult.componentResults[0] is not an object"),
    ("lm-eval", lambda folder: lmeval_results(folder, lambda r: r["configs"].update({LMEVAL_TASK: 5})),
     f"configs[{LMEVAL_TASK!r}] is not an object"),
    ("lm-eval", lambda folder: lmeval_results(folder, rename_task), "task name 'a/b' cannot name a samples file"),
    # an item id that is a boolean, a list or an object: its Python spelling ('True') became the item id
    ("promptfoo", lambda folder: promptfoo_results(
        folder, lambda document: document["results"]["results"][0]["vars"].update(id=True)),
     "results.results[0]: field 'vars.id' is True, not text or a number"),
    ("inspect", lambda folder: inspect_log(folder, first_sample(lambda sample: sample.update(id=[1]))),
     "samples[0]: field 'id' is [1], not text or a number"),
    # a text field holding a number: the run was written, then its reader skipped the case line
    ("jsonl", lambda folder: plain_rows(folder, {"id": "q2", "output": "y", "finish_reason": 5}),
     "line 2: finish_reason=5 is not text; a run cannot record it"),
    ("jsonl", lambda folder: plain_rows(folder, {"id": "q2", "scores": {"s": {"score": 1, "label": [3]}}}),
     "line 2: score 's': label=[3] is not text; a run cannot record it"),
    ("promptfoo", lambda folder: promptfoo_results(
        folder, lambda document: document["results"]["results"][1]["response"].update(finishReason=5)),
     "results.results[1]: finish_reason=5 is not text; a run cannot record it"),
])
def test_a_malformed_block_nothing_can_be_read_without_is_refused_in_one_line(import_project, cli, tmp_path,
                                                                              format_name, write, message):
    path = write(tmp_path / "source")
    result = cli("import", format_name, str(path))
    assert (result.exit_code, result.output) == (1, f"Error: {path}: {message}\n")
    assert not (import_project / "runs").exists()


def test_an_lm_eval_doc_id_that_is_an_object_is_refused_naming_the_samples_line(import_project, cli, tmp_path):
    """Its Python spelling ("{'n': 1}") became the item id."""
    path = lmeval_samples(tmp_path / "source", lambda line: line["doc"].update(id={"n": 1}))
    result = cli("import", "lm-eval", str(path))
    samples = next((tmp_path / "source").glob("samples_*.jsonl"))
    assert (result.exit_code, result.output) == (
        1, f"Error: {samples}: line 1: field 'doc.id' is {{'n': 1}}, not text or a number\n")
    assert not (import_project / "runs").exists()

