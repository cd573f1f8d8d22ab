"""An import's writer vouches for a batch of the case records it made (writer._vouched): it checks
only the fields a record takes from its spooled case, gathers the columns while it makes the
records, and the run writer then skips its own check. Generated spooled batches, hostile values
included (NaN, infinities, integers past 64 bits, booleans and text where numbers go, numbers
where text goes): whatever the writer vouches for, checked_fields accepts too, its columns are the
records' own, and the lines, footer hash and summary are those of the batch checked record by record."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from evalsite.analysis.case_columns import batch_columns, case_columns, columns_arrays
from evalsite.execute.importers import writer as import_writer
from evalsite.experiment.datasets import Item
from evalsite.runlog.builders import imported_case_json, score_json
from evalsite.runlog.records import CASE_TYPES, SCORE_TYPES, checked_fields, column_of
from evalsite.runlog.store import CASES_FILE, END_FILE, RunWriter, case_line

ITEMS = {key: Item(f"id-{key}", index, {"id": f"id-{key}", "input": f"in {key}", "expected": key}, f"sha-{key}", "i", "e")
         for index, key in enumerate(("k0", "k1", "k2"))}
VERSIONS = {"a": "va", "b": "vb"}
BINARY = {"a": True, "b": False}
HOSTILE = st.one_of(st.booleans(), st.integers(-2**70, 2**70), st.floats(), st.text(max_size=2), st.just([1]),
                    st.sampled_from([1e13, -1.0, 2**63, float("nan"), float("inf")]))


NUMBER = st.one_of(st.none(), st.floats(0, 1e4), st.integers(0, 10**6))
COUNT = st.one_of(st.none(), st.integers(0, 10**6))
TEXT = st.one_of(st.none(), st.text(max_size=3))
FLAG = st.one_of(st.none(), st.booleans())
SCORE = st.tuples(st.sampled_from(("a", "b")), st.one_of(st.none(), st.floats(-2.0, 2.0), st.sampled_from([0.0, 1.0])),
                  FLAG, TEXT, TEXT, st.one_of(st.none(), st.none(), TEXT)).map(list)
CASE = st.tuples(
    st.integers(0, 3), st.sampled_from(tuple(ITEMS)), TEXT, TEXT, st.one_of(TEXT, st.just(5)), NUMBER, COUNT, COUNT,
    NUMBER, TEXT, TEXT, st.lists(SCORE, max_size=2, unique_by=lambda score: score[0]), st.none() | st.floats(0, 1), FLAG,
).map(list)
#: a spooled case's places a hostile value may take: a case's field, or (11, field) a score's
PLACES = st.one_of(st.sampled_from((0, 4, 5, 6, 7, 8, 9, 10, 12, 13)), st.tuples(st.just(11), st.integers(1, 5)))


@st.composite
def batches(draw: st.DrawFn) -> list[list[Any]]:
    """A few plausible spooled cases, half the time one hostile value in one of them."""
    spooled = draw(st.lists(CASE, min_size=1, max_size=5))
    if draw(st.booleans()):
        case, place, value = draw(st.sampled_from(spooled)), draw(PLACES), draw(HOSTILE)
        if isinstance(place, int):
            case[place] = value
        elif case[11]:
            case[11][0][place[1]] = value
    return spooled


def made(spooled: list[list[Any]]) -> tuple[list[dict[str, Any]], Any]:
    batch = import_writer._Made(import_writer._templates(VERSIONS))
    try:
        records = import_writer._case_records(spooled, ITEMS, VERSIONS, BINARY, batch)
    except (ValueError, TypeError):  # a repeat no case line takes, text to average: refused as on main
        assume(False)
    return records, import_writer._vouched(spooled, records, batch)


def same(found: Any, expected: list[Any]) -> bool:
    return len(found) == len(expected) and all(a is b or (type(a) is type(b) and a == b) for a, b in zip(found, expected))


def written(root: Path, records: list[dict[str, Any]], vouched: Any = None) -> tuple[bytes, dict[str, Any]]:
    """The lines and footer of a run of ``records``: one batch (``vouched``, as the import's writer
    passes it), or one record at a time (``vouched`` none)."""
    writer = RunWriter.create(root, "a", {"arm_id": "a"})
    if vouched is None:
        for record in records:
            writer.append_case(record)
    else:
        writer.append_cases(records, vouched)
    writer.finish({"status": "completed"})
    return (writer.directory / CASES_FILE).read_bytes(), json.loads((writer.directory / END_FILE).read_text())


@settings(max_examples=80, deadline=None)
@given(batches())
def test_a_vouched_batch_is_one_checked_fields_holds_for_with_the_records_own_columns(spooled):
    records, vouched = made(spooled)
    if vouched is None:
        return
    assert checked_fields(records) is not None
    scores = [score for record in records for score in record["scores"]]
    for key in (*CASE_TYPES, "served_model", "input", "expected", "output"):
        assert same(vouched.cases(key), column_of(records, key)), key
    for key in SCORE_TYPES:
        assert same(vouched.scores(key), column_of(scores, key)), key
    assert same(vouched.scores.records, scores)
    by_record = columns_arrays(case_columns(records))
    for key, array in columns_arrays(batch_columns([(records, vouched)])).items():
        assert array.dtype == by_record[key].dtype and array.tobytes() == by_record[key].tobytes(), key


# About half the generated batches hold a value the writer does not vouch for (by design: the
# hostile values): filtered out here, which hypothesis's filter_too_much check took for a mistake
# when a run drew 50 such batches to 9 others (CI, seed 74079731902188432007058488041512390364).
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(batches())
def test_a_vouched_batch_writes_the_lines_and_footer_of_its_records_checked_one_at_a_time(spooled):
    records, vouched = made(spooled)
    assume(vouched is not None)
    with tempfile.TemporaryDirectory() as folder:
        assert written(Path(folder) / "vouched", records, vouched) == written(Path(folder) / "one", records)


def test_the_writer_vouches_for_plausible_batches_and_not_for_hostile_values():
    """Not a vacuous check: a batch of plain cases is vouched for; one hostile value anywhere a
    record takes from its source (NaN, a number out of range, text for a number, a number for
    text, a boolean for a number, an integer past 64 bits) makes the writer check the records."""
    def case(**changes: Any) -> list[Any]:
        spooled = {"repeat": 0, "key": "k0", "input": None, "output": "out", "error": None, "latency_ms": 12.5,
                   "input_tokens": 3, "output_tokens": None, "cost_usd": None, "finish_reason": "stop",
                   "started_at": None, "scores": [["a", 1.0, None, None, None, None], ["b", 0.25, None, "x", "d", None]],
                   "score": None, "passed": None}
        scores = changes.pop("scores", None)
        spooled.update(changes)
        if scores is not None:
            spooled["scores"] = [["a", *scores]]
        return list(spooled.values())

    assert made([case(), case(key="k1", error="boom", scores=[None, None, None, None, None])])[1] is not None
    hostile = [{"latency_ms": float("nan")}, {"cost_usd": 1e7}, {"latency_ms": "5"}, {"finish_reason": 5},
               {"input_tokens": True}, {"output_tokens": 2**64}, {"score": float("inf")}, {"passed": "yes"},
               {"started_at": 3}, {"scores": [1e13, None, None, None, None]}, {"scores": [0.5, "no", None, None, None]},
               {"scores": [0.5, None, 7, None, None]}, {"scores": [float("nan"), None, None, None, None]}]
    for changes in hostile:
        assert made([case(), case(key="k1", **changes)])[1] is None, changes


def reference_line(spooled: list[Any]) -> dict[str, Any]:
    """A spooled case's line by the rule, one case and one score at a time (the writer's single
    loop over a batch must agree): a binary evaluator's unruled value passes at 1; a failed
    generation scores 0 and fails on each evaluator it has no score of; the case's score is the
    source's, else the mean of its values without an error; its verdict false for a failed
    generation, else the source's, else whether every ruled score passes."""
    (repeated, key, case_input, output, error, latency_ms, input_tokens, output_tokens, cost_usd, finish_reason,
     started_at, listed, score, passed) = spooled
    item, scores = ITEMS[key], []
    for name, value, verdict, label, detail, score_error in listed:
        if verdict is None and value is not None and BINARY[name]:
            verdict = value == 1.0
        scores.append(score_json(name, VERSIONS[name], value, verdict, label, detail, score_error))
    if error:
        scores += [score_json(name, VERSIONS[name], 0.0, False, None, f"generation failed: {error}", None)
                   for name in VERSIONS if name not in {s["evaluator"] for s in scores}]
    values = [s["score"] for s in scores if s["score"] is not None and s["error"] is None]
    ruled = [s["passed"] for s in scores if s["passed"] is not None]
    mean = score if score is not None else sum(values) / len(values) if values else None
    verdict = False if error else passed if passed is not None else all(ruled) if ruled else None
    return imported_case_json(item.item_id, item.sha, repeated, item.row["input"] if case_input is None else case_input,
                              item.row["expected"], output, error, latency_ms, input_tokens, output_tokens, cost_usd,
                              finish_reason, scores, mean, verdict, started_at)


@settings(max_examples=60, deadline=None)
@given(batches())
def test_the_writers_lines_are_those_of_each_case_by_the_rule(spooled):
    records, _ = made(spooled)
    assert [case_line(record)[1] for record in records] == [case_line(reference_line(case))[1] for case in spooled]
