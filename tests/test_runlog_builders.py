"""The records a writer builds (evalsite.runlog.builders, evalsite.runlog.totals): each one's JSON is
what its reader reads back, a run `evalsite run` writes holds exactly what the builders give, and a
value no reader accepts is refused where the record is built."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalsite.analysis.summary import summarise_run
from evalsite.errors import RunLogError
from evalsite.runlog.builders import (
    CaseRecord,
    DatasetRecord,
    Execution,
    FooterRecord,
    HeaderRecord,
    PlanRecord,
    SourceOutcome,
    case_json,
    score_json,
)
from evalsite.runlog.decisions import Decision
from evalsite.runlog.fingerprint import fingerprint_hash
from evalsite.runlog.records import Case, Footer, RunStatus, Score
from evalsite.runlog.store import (
    CASES_SHA256,
    RunWriter,
    case_line,
    read_footer,
    read_header,
    read_run,
    run_directories,
)
from evalsite.runlog.totals import EvaluatorTotals, RunTotals

FINGERPRINT = {"dataset": {"dataset_id": "d@1", "inputs_id": "d@2"}, "config": {"target": "python:m:f"}}
SCORES = (Score("exact", "v1", score=1.0, passed=True), Score("judge", "v2", score=0.5, passed=None, cost_usd=0.01))


def _header() -> HeaderRecord:
    return HeaderRecord.of(
        batch_id="batch-1", experiment="exp", arm_id="arm", config={"target": "python:m:f", "params": {"t": 0}},
        config_id="c1", dataset=DatasetRecord("data/d.jsonl", "d@1", 2, reference_tier="gold"),
        evaluators={"exact": {"type": "exact", "version": "v1"}}, fingerprint=FINGERPRINT,
        started_at="2026-01-01T00:00:00.000Z", plan=PlanRecord(2, 1, 2),
        sections={"manifest_path": "experiments/e.yaml", "schedule": {"concurrency": 4}},
    )


def _case(item_id: str, execution: Execution | None) -> CaseRecord:
    return CaseRecord(
        item_id=item_id, item_sha="sha-" + item_id, repeat=0, input="2+2?", expected="4", output="4", error=None,
        latency_ms=12.5, input_tokens=3, output_tokens=1, cost_usd=0.002, finish_reason="stop", scores=SCORES,
        score=0.75, passed=True, started_at="2026-01-01T00:00:01.000Z", execution=execution,
    )


def _executed(**extra: Any) -> Execution:
    return Execution(**{"critical": True, "scoring_cost_usd": 0.01, "attempts": 2, **extra})


# ----------------------------------------------------------------------------- round trips


def test_a_header_written_reads_back_with_every_value_it_was_built_with(tmp_path: Path) -> None:
    built = _header()
    writer = RunWriter.create(tmp_path, "arm", built.to_json())
    writer.close()
    read = read_header(writer.directory)
    assert (read.batch_id, read.experiment, read.arm_id, read.config, read.config_id) == (
        "batch-1", "exp", "arm", dict(built.config), "c1")
    assert (read.dataset.path, read.dataset.dataset_id, read.dataset.items, read.dataset.reference_tier,
            read.dataset.inputs_id) == ("data/d.jsonl", "d@1", 2, "gold", "d@2")
    assert read.fingerprint_hash == fingerprint_hash(FINGERPRINT) and read.fingerprint == FINGERPRINT
    assert read.plan == {"items": 2, "repeat": 1, "cases": 2} and read.raw["schedule"] == {"concurrency": 4}
    assert read.manifest_path == "experiments/e.yaml"
    # carried into a new run (merge, rescore), a header writes the same JSON it was read from
    assert HeaderRecord.carried(read).to_json() == built.to_json()


@pytest.mark.parametrize("execution", [None, _executed(), _executed(
    emulated=True, checkpoint="ck-1", cache="hit", transcript=[{"role": "user", "content": "hi"}],
    turn_outputs=["hello"], turn_figures=[{"latency_ms": 1.0, "input_tokens": 1, "output_tokens": 1, "cost_usd": None}],
    provenance={"request_ids": ["r1"], "served_model": "m-2025", "thread_id": "exp-e-q1-0"})])
def test_a_case_line_reads_back_as_the_case_it_was_built_as(execution: Execution | None) -> None:
    built = _case("q1", execution)
    line = built.to_json()
    read = Case.from_json(json.loads(case_line(line)[1]), "r/cases.jsonl: line 1")
    assert (read.item_id, read.repeat, read.item_sha, read.error, read.latency_ms, read.input_tokens,
            read.output_tokens, read.cost_usd, read.finish_reason, read.score, read.passed, read.started_at) == (
        "q1", 0, "sha-q1", None, 12.5, 3, 1, 0.002, "stop", 0.75, True, "2026-01-01T00:00:01.000Z")
    assert read.scores == SCORES
    assert read.critical == (None if execution is None else True)
    assert read.scoring_cost_usd == (None if execution is None else 0.01)
    assert read.get("attempts") == (None if execution is None else 2)
    if execution is not None and execution.emulated:
        assert read.emulated is True and read["checkpoint"] == "ck-1" and read["served_model"] == "m-2025"
        assert list(line)[list(line).index("attempts") + 1:] == [
            "emulated", "checkpoint", "cache", "transcript", "turn_outputs", "turn_figures", "request_ids",
            "served_model", "thread_id"]


def test_an_imported_case_line_has_the_fields_of_an_import_in_their_order() -> None:
    assert list(_case("q1", None).to_json()) == [
        "item_id", "item_sha", "repeat", "input", "expected", "output", "error", "latency_ms", "input_tokens",
        "output_tokens", "cost_usd", "finish_reason", "scores", "score", "passed", "started_at"]
    assert list(_case("q1", _executed(cache="recorded")).to_json()) == [
        "item_id", "item_sha", "critical", "repeat", "input", "expected", "output", "error", "latency_ms",
        "input_tokens", "output_tokens", "cost_usd", "scoring_cost_usd", "finish_reason", "scores", "score", "passed",
        "started_at", "attempts", "cache"]


def test_totals_and_footer_round_trip_through_end_json(tmp_path: Path) -> None:
    cases = [_case("q1", _executed()).to_json(), {**_case("q2", _executed()).to_json(), "error": "boom",
                                                     "passed": False, "output": None}]
    totals = summarise_run(cases).totals(planned=3, truncated_items=("q2",))
    assert totals.errors == 1 and totals.planned == 3 and totals.evaluators["exact"].n == 2
    assert RunTotals.from_json(json.loads(json.dumps(totals.to_json())), "e") == totals
    assert totals.to_json() == {**summarise_run(cases).to_json(), "planned": 3, "truncated_items": ["q2"]}
    footer = FooterRecord(RunStatus.STOPPED_COST_CEILING, "2026-01-01T00:00:02.000Z", totals,
                          hook_errors=("post step failed",), cost_ceiling={"max_cost_usd": 1.0, "spent_usd": 1.2},
                          source=SourceOutcome("error", "the tool crashed"))
    writer = RunWriter.create(tmp_path, "arm", _header().to_json())
    for case in cases:
        writer.append_case(case)
    writer.finish(footer.to_json())
    read = read_footer(writer.directory)
    assert read is not None
    assert (read.status, read.ended_at, read.totals, read.cost_ceiling) == (
        RunStatus.STOPPED_COST_CEILING, "2026-01-01T00:00:02.000Z", totals, {"max_cost_usd": 1.0, "spent_usd": 1.2})
    assert (read.raw["hook_errors"], read.raw["source_status"], read.raw["source_error"]) == (
        ["post step failed"], "error", "the tool crashed")
    assert "error" not in read.raw and "artifacts" not in read.raw and "merged_from" not in read.raw


def test_an_older_footer_reads_with_the_figures_it_records() -> None:
    totals = Footer.from_json({"status": "completed", "totals": {"cases": 2, "mean_score": 1}}, "r/end.json").totals
    assert (totals.cases, totals.mean_score, totals.errors, totals.evaluators) == (2, 1.0, None, {})
    assert totals.records("cases") and not totals.records("errors")
    assert RunTotals(cases=2).records("errors")  # a record built in code holds every figure


def test_a_decision_about_a_run_names_its_dataset_arm_and_fingerprint(tmp_path: Path) -> None:
    writer = RunWriter.create(tmp_path, "arm", _header().to_json())
    writer.close()
    header = read_header(writer.directory)
    decision = Decision.about(header, kind="promote", reason="best", at="t", by="me")
    assert (decision.run_id, decision.dataset_id, decision.inputs_id, decision.arm_id, decision.fingerprint_hash,
            decision.reference_tier) == (writer.run_id, "d@1", "d@2", "arm", fingerprint_hash(FINGERPRINT), "gold")
    assert Decision.from_json(json.loads(json.dumps(decision.to_json())), "line 1") == decision
    assert "review" not in decision.to_json()
    assert Decision.about(header, kind="exclude", reason="bad", at="t", by=None).reference_tier is None


# ----------------------------------------------------------------------------- what `evalsite run` writes


def _rebuilt_case(line: dict[str, Any]) -> CaseRecord:
    """A written case line rebuilt through the builder from its values alone."""
    core = {"item_id", "item_sha", "critical", "repeat", "input", "expected", "output", "error", "latency_ms",
            "input_tokens", "output_tokens", "cost_usd", "scoring_cost_usd", "finish_reason", "scores", "score",
            "passed", "started_at", "attempts"}
    optional = {"emulated", "checkpoint", "cache", "transcript", "turn_outputs", "turn_figures"}
    execution = Execution(
        critical=line["critical"], scoring_cost_usd=line["scoring_cost_usd"], attempts=line["attempts"],
        emulated=bool(line.get("emulated")), checkpoint=line.get("checkpoint"), cache=line.get("cache"),
        transcript=line.get("transcript"), turn_outputs=line.get("turn_outputs"), turn_figures=line.get("turn_figures"),
        provenance={key: value for key, value in line.items() if key not in core | optional},
    )
    return CaseRecord(
        line["item_id"], line["item_sha"], line["repeat"], line["input"], line["expected"], line["output"],
        line["error"], line["latency_ms"], line["input_tokens"], line["output_tokens"], line["cost_usd"],
        line["finish_reason"], tuple(Score(**score) for score in line["scores"]), line["score"], line["passed"],
        line["started_at"], execution,
    )


def test_a_run_of_the_example_is_exactly_what_the_builders_write(example_project: Path, cli: Any) -> None:
    result = cli("run", "experiments/arithmetic.yaml", "--arm", "careful", "--repeat", "1", "--allow-failures")
    assert result.exit_code == 0, result.output
    (directory,) = run_directories(example_project / "runs")
    run = read_run(directory)
    assert not run.warnings and run.footer is not None and len(run.cases) == 60

    written_header = json.loads((directory / "run.json").read_text())
    rebuilt = HeaderRecord.carried(run.header).to_json()
    assert {"format_version": 1, "run_id": directory.name, **rebuilt} == written_header
    assert {"manifest_path", "submitted_manifest", "schedule"} <= set(rebuilt)

    lines = (directory / "cases.jsonl").read_bytes().splitlines(keepends=True)
    assert [case_line(_rebuilt_case(json.loads(line)).to_json())[1] for line in lines] == lines  # byte for byte

    written_footer = json.loads((directory / "end.json").read_text())
    footer = run.footer
    assert footer.totals == run_totals_of(run.cases) and footer.totals.to_json() == written_footer["totals"]
    again = FooterRecord(footer.status, footer.ended_at, footer.totals).to_json()
    assert {**again, CASES_SHA256: written_footer[CASES_SHA256]} == written_footer


def run_totals_of(cases: list[Case]) -> RunTotals:
    truncated = tuple(sorted({c.item_id for c in cases if c.finish_reason == "length"}))
    return summarise_run(cases).totals(planned=len(cases), truncated_items=truncated)


def test_the_runners_case_line_is_the_records_line() -> None:
    """The runner builds its lines with ``case_json``, without a record: the same dict, key for key
    and in order, as ``CaseRecord(...).to_json()``, executed or not."""
    for execution in (None, _executed(), _executed(emulated=True, cache="hit", transcript=[{"role": "user"}],
                                                   turn_outputs=["a"], provenance={"request_ids": ["r1"]})):
        record = _case("q1", execution)
        line = case_json(**vars(record))
        assert line == record.to_json() and list(line) == list(record.to_json())


def test_an_executed_case_line_is_pinned_byte_for_byte() -> None:
    """An executed case's line, its fields in the documented order (docs/reference/run-format.md),
    as main's builder wrote it before the line became one literal."""
    record = _case("q1", _executed(emulated=True, cache="hit", provenance={"request_ids": ["r1"], "served_model": "m"}))
    scores = ('[{"evaluator":"exact","version":"v1","score":1.0,"passed":true,"label":null,"detail":null,"error":null,'
              '"skipped":false,"turn":null,"spread":null,"cost_usd":null},{"evaluator":"judge","version":"v2",'
              '"score":0.5,"passed":null,"label":null,"detail":null,"error":null,"skipped":false,"turn":null,'
              '"spread":null,"cost_usd":0.01}]')
    assert case_line(record.to_json())[1] == (
        '{"item_id":"q1","item_sha":"sha-q1","critical":true,"repeat":0,"input":"2+2?","expected":"4","output":"4",'
        '"error":null,"latency_ms":12.5,"input_tokens":3,"output_tokens":1,"cost_usd":0.002,"scoring_cost_usd":0.01,'
        f'"finish_reason":"stop","scores":{scores},"score":0.75,"passed":true,"started_at":"2026-01-01T00:00:01.000Z",'
        '"attempts":2,"emulated":true,"cache":"hit","request_ids":["r1"],"served_model":"m"}\n'
    ).encode()


def test_an_imported_score_line_is_the_records_line() -> None:
    """An import writes its scores with ``score_json``, without a ``Score``: the same dict, in order."""
    for score in (Score("exact", "v1", score=1.0, passed=True), Score("len", None, label="x", detail="d", error="e")):
        fields = {k: v for k, v in vars(score).items() if k not in ("skipped", "turn", "spread", "cost_usd")}
        line = score_json(**fields)
        assert line == score.to_json() and list(line) == list(score.to_json())


# ----------------------------------------------------------------------------- bad values


@pytest.mark.parametrize("build, message", [
    (lambda: RunTotals(errors=-1), "RunTotals.errors must be a whole number >= 0, not -1"),
    (lambda: EvaluatorTotals(n=True), "EvaluatorTotals.n must be a whole number >= 0, not True"),
    (lambda: PlanRecord(2, 1, -3), "PlanRecord.cases must be a whole number >= 0, not -3"),
    (lambda: DatasetRecord("d", "d@1", -1), "DatasetRecord.items must be a whole number >= 0, not -1"),
    (lambda: CaseRecord(**{**vars(_case("q1", None)), "repeat": -1}),
     "CaseRecord.repeat must be a whole number >= 0, not -1"),
    (lambda: case_json(**{**vars(_case("q1", None)), "repeat": -1}),
     "CaseRecord.repeat must be a whole number >= 0, not -1"),
    (lambda: case_json(**{**vars(_case("q1", None)), "item_id": 7}), "CaseRecord.item_id must be a string, not 7"),
    (lambda: _executed(attempts=-2), "Execution.attempts must be a whole number >= 0, not -2"),
    (lambda: FooterRecord(RunStatus.RUNNING, None, RunTotals()),
     "FooterRecord.status must be the RunStatus a run stopped with, not <RunStatus.RUNNING: 'running'>"),
    (lambda: _header().with_sections(run_id="x"), "HeaderRecord.sections must not hold run_id: a field of its own"),
])
def test_a_record_refuses_a_value_no_reader_accepts(build: Any, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        build()
    assert str(caught.value) == message


@pytest.mark.parametrize("totals, message", [
    ({"errors": -1}, "r/end.json: totals.errors must be an integer >= 0, not a number -1"),
    ({"critical_failures": "q1"}, "r/end.json: totals.critical_failures must be a list of strings, not a string 'q1'"),
    ({"evaluators": {"exact": {"n": -2}}}, "r/end.json: totals.evaluators.exact.n must be an integer >= 0, not a number -2"),
    ({"mean_score": "high"}, "r/end.json: totals.mean_score must be a number, not a string 'high'"),
])
def test_a_footer_with_a_bad_total_is_refused_naming_the_file_and_field(totals: dict[str, Any], message: str) -> None:
    with pytest.raises(RunLogError) as caught:
        Footer.from_json({"status": "completed", "totals": totals}, "r/end.json")
    assert caught.value.message == message
