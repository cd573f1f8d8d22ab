"""``evalsite import jsonl`` / ``csv``: per-item files from any other tool."""

from __future__ import annotations

import json

import pytest
from import_support import PLAIN, evaluator_means, pass_rate, read_jsonl, runs_by_arm, write_jsonl


def tool_rows(arms=("model-a", "model-b")) -> list[dict]:
    """Rows as some other tool wrote them (tests/fixtures/plain/scored.jsonl: its answers are the
    fixtures' fake server's, scored by tests/fixtures/plain/score.py)."""
    return [row for row in read_jsonl(PLAIN / "scored.jsonl") if row["arm"] in arms]


def test_jsonl_rows_become_one_run_per_arm(import_project, cli, tmp_path):
    result = cli("import", "jsonl", str(write_jsonl(tmp_path / "scored.jsonl", tool_rows())))
    assert result.exit_code == 0, result.output
    runs = runs_by_arm(import_project)
    assert sorted(runs) == ["model-a", "model-b"]
    for arm, expected in {"model-a": 17 / 24, "model-b": 10 / 24}.items():
        run = runs[arm]
        assert len(run.cases) == 24 and run.status == "completed"
        assert evaluator_means(run)["exact"] == pytest.approx(expected)
        assert pass_rate(run) == pytest.approx(expected)  # `length` is not 0/1, so it sets no verdict
        case = run.cases[0]
        assert case["latency_ms"] == 12.5
        length = next(s for s in case["scores"] if s["evaluator"] == "length")
        assert (length["score"], length["detail"]) == (len(case["output"]) / 100, f"{len(case['output'])} chars")
    assert runs["model-a"].header.evaluators == runs["model-b"].header.evaluators


def test_csv_columns_map_the_same_way(import_project, cli):
    assert cli("import", "csv", str(PLAIN / "scored.csv")).exit_code == 0
    runs = runs_by_arm(import_project)
    assert sorted(runs) == ["model-a", "model-b"]
    lengths = [len(row["output"]) / 100 for row in tool_rows(["model-b"])]
    assert evaluator_means(runs["model-b"]) == pytest.approx({"exact": 10 / 24, "length": sum(lengths) / 24})
    assert pass_rate(runs["model-b"]) == pytest.approx(10 / 24)  # exact is 0/1: it decides
    assert runs["model-a"].cases[0]["latency_ms"] == 12.5


def test_a_csv_passed_column_is_the_case_verdict(import_project, cli, tmp_path):
    path = tmp_path / "verdicts.csv"
    path.write_text("id,input,score.quality,passed\nq1,a,0.9,true\nq2,b,0.2,no\nq3,c,0.5,\n")
    assert cli("import", "csv", str(path)).exit_code == 0
    (run,) = runs_by_arm(import_project).values()
    assert [c["passed"] for c in run.cases] == [True, False, None]


def test_a_bad_value_names_the_line_and_field(import_project, cli, tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("id,input,score.exact\nitem-00,a,1\nitem-01,b,high\n")
    result = cli("import", "csv", str(path))
    assert result.exit_code == 1
    assert result.output.strip() == f"Error: {path}: line 3: field 'score.exact' is 'high', not a number"
    assert not (import_project / "runs").exists()


def test_without_a_scorer_file_two_files_are_not_comparable(import_project, cli, tmp_path):
    a = write_jsonl(tmp_path / "a.jsonl", tool_rows(["model-a"]))
    b = write_jsonl(tmp_path / "b.jsonl", tool_rows(["model-b"]))
    cli("import", "jsonl", str(a), str(b))
    runs = runs_by_arm(import_project)
    assert runs["model-a"].header.evaluators["exact"] != runs["model-b"].header.evaluators["exact"]


def test_the_same_scorer_file_makes_them_comparable_and_another_does_not(import_project, cli, tmp_path):
    a = write_jsonl(tmp_path / "a.jsonl", tool_rows(["model-a"]))
    b = write_jsonl(tmp_path / "b.jsonl", tool_rows(["model-b"]))
    c = write_jsonl(tmp_path / "c.jsonl", [{**row, "arm": "model-c"} for row in tool_rows(["model-a"])])
    scorer, other = tmp_path / "score.py", tmp_path / "score_v2.py"
    scorer.write_text("def score(output, expected):\n    return output == expected\n")
    other.write_text("def score(output, expected):\n    return output.strip() == expected.strip()\n")
    cli("import", "jsonl", str(a), str(b), "--scorer-file", str(scorer))
    cli("import", "jsonl", str(c), "--scorer-file", str(other))
    versions = {arm: run.header.evaluators["exact"]["version"] for arm, run in runs_by_arm(import_project).items()}
    assert versions["model-a"] == versions["model-b"] != versions["model-c"]
    assert runs_by_arm(import_project)["model-a"].header.raw["source"]["scorer_file"]["sha256"]


def test_rows_without_arm_form_one_run_named_after_the_file(import_project, cli, tmp_path):
    rows = [{"id": f"q{i}", "input": f"question {i}", "output": "x", "note": "kept out"} for i in range(3)]
    result = cli("import", "jsonl", str(write_jsonl(tmp_path / "baseline.jsonl", rows)))
    assert result.exit_code == 0
    assert "ignored fields (not in the plain format): note" in result.output
    assert "arm baseline: no score fields; its run is unscored" in result.output
    run = runs_by_arm(import_project)["baseline"]
    assert [c["score"] for c in run.cases] == [None] * 3 and run.header.evaluators == {}


def test_explicit_repeats_and_a_duplicate_repeat(import_project, cli, tmp_path):
    rows = [{"id": "q1", "input": "x", "repeat": r, "score": s} for r, s in [(0, 1), (1, 0), (2, 1)]]
    cli("import", "jsonl", str(write_jsonl(tmp_path / "repeats.jsonl", rows)))
    (run,) = runs_by_arm(import_project).values()
    assert [(c["repeat"], c["passed"]) for c in run.cases] == [(0, True), (1, False), (2, True)]
    duplicate = write_jsonl(tmp_path / "dup.jsonl", rows + [{"id": "q1", "input": "x", "repeat": 1, "score": 1}])
    result = cli("import", "jsonl", str(duplicate))
    assert result.exit_code == 1
    assert "item 'q1' repeat 1 is recorded twice" in result.output


@pytest.mark.parametrize("suffix, text", [("jsonl", '{"id": "q1", "input": "x", "score": 1, "repeat": 9007199254740993}\n'),
                                          ("csv", "id,input,score,repeat\nq1,x,1,9007199254740993\n")])
def test_a_repeat_past_2_to_the_53_is_recorded_exactly(import_project, cli, tmp_path, suffix, text):
    """A repeat read through a float came back one less (2**53 + 1 is no float): silently another case."""
    source = tmp_path / f"big.{suffix}"
    source.write_text(text, encoding="utf-8")
    assert cli("import", suffix, str(source)).exit_code == 0
    (run,) = runs_by_arm(import_project).values()
    assert [case["repeat"] for case in run.cases] == [2**53 + 1]


@pytest.mark.parametrize("repeats", [(None, 0), (0, None), (None, None, 1)], ids=["arrival-then-0", "0-then-arrival",
                                                                                "arrivals-then-1"])
def test_a_repeat_given_and_also_reached_by_arrival_is_refused(import_project, cli, tmp_path, repeats):
    """A row without a repeat takes the next number by arrival for its item; one that lands on a
    number another row of that item gave (either order) is the same (item, repeat) twice, which
    was written as two cases of one repeat."""
    rows = [{"id": "q1", "input": "x", "score": 1, **({} if r is None else {"repeat": r})} for r in repeats]
    path = write_jsonl(tmp_path / "mixed.jsonl", rows)
    result = cli("import", "jsonl", str(path))
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        f"Error: {path}: item 'q1' repeat {repeats[-1] or 0} is recorded twice (once without a repeat, numbered by "
        "arrival: give every case of an item its repeat, or none)"]
    assert not (import_project / "runs").exists() or not list((import_project / "runs").iterdir())


@pytest.mark.parametrize("fields, culprits", [
    ({"score.x": 1, "scores": {"x": 0}}, "evaluator 'x' is scored twice, by 'score.x' and 'scores.x'"),
    ({"score": 1, "score.score": 0}, "evaluator 'score' is scored twice, by 'score' and 'score.score'"),
    ({"score": 1, "scores": {"score": {"score": 0}}}, "evaluator 'score' is scored twice, by 'score' and 'scores.score'"),
])
def test_an_evaluator_scored_twice_in_a_row_is_refused(import_project, cli, tmp_path, fields, culprits):
    """Two fields naming one evaluator were two scores of it in one case, both in its mean."""
    path = write_jsonl(tmp_path / "twice.jsonl", [{"id": "q1", "input": "x", "score.x": 1},
                                                   {"id": "q2", "input": "y", **fields}])
    result = cli("import", "jsonl", str(path))
    assert (result.exit_code, result.output) == (1, f"Error: {path}: line 2: {culprits}\n")
    assert not (import_project / "runs").exists() or not list((import_project / "runs").iterdir())


def test_a_csv_evaluator_scored_twice_is_refused(import_project, cli, tmp_path):
    path = tmp_path / "twice.csv"
    path.write_text("id,input,score,score.score\nq1,x,1,0\n", encoding="utf-8")
    result = cli("import", "csv", str(path))
    assert (result.exit_code, result.output) == (
        1, f"Error: {path}: line 2: evaluator 'score' is scored twice, by 'score' and 'score.score'\n")


@pytest.mark.parametrize("field, value", [("id", True), ("id", {"a": 1}), ("item_id", [1]), ("arm", False),
                                          ("arm", {"name": "m"})])
def test_an_id_or_arm_that_is_not_text_or_a_number_is_refused(import_project, cli, tmp_path, field, value):
    """Its Python spelling (``True``, ``{'a': 1}``) became the item id or the arm, silently."""
    row = {"input": "y", "score": 1, field: value} if field == "item_id" else {"id": "q2", "input": "y", field: value}
    path = write_jsonl(tmp_path / "names.jsonl", [{"id": "q1", "input": "x", "score": 1}, row])
    result = cli("import", "jsonl", str(path))
    assert (result.exit_code, result.output) == (
        1, f"Error: {path}: line 2: field {field!r} is {value!r}, not text or a number\n")


@pytest.mark.parametrize("field", ["repeat", "latency_ms", "input_tokens", "output_tokens", "cost_usd"])
def test_a_boolean_where_a_number_goes_is_refused(import_project, cli, tmp_path, field):
    """``"repeat": true`` was read as repeat 1 (and ``"cost_usd": true`` as $1), silently."""
    path = write_jsonl(tmp_path / "flags.jsonl", [{"id": "q1", "input": "x", "score": 1, field: True}])
    result = cli("import", "jsonl", str(path))
    assert (result.exit_code, result.output) == (1, f"Error: {path}: line 1: field {field!r} is True, not a number\n")


def test_a_row_that_names_no_item_is_refused(import_project, cli, tmp_path):
    path = write_jsonl(tmp_path / "x.jsonl", [{"output": "y", "score": 1}])
    result = cli("import", "jsonl", str(path))
    assert result.exit_code == 1
    assert result.output.strip() == f"Error: {path}: line 1: neither 'id' nor 'input': cannot tell which item this row is"


def test_the_same_id_with_two_inputs_is_refused(import_project, cli, tmp_path):
    path = write_jsonl(tmp_path / "x.jsonl", [{"id": "q1", "input": "a"}, {"id": "q1", "input": "b"}])
    result = cli("import", "jsonl", str(path))
    assert result.exit_code == 1
    assert "item 'q1' is recorded with two different inputs or expected values" in result.output


def test_a_torn_last_line_imports_the_rest_as_interrupted(import_project, cli, tmp_path):
    path = write_jsonl(tmp_path / "torn.jsonl", tool_rows(["model-a"]))
    path.write_text(path.read_text() + '{"arm": "model-a", "id": "item-')
    result = cli("import", "jsonl", str(path))
    assert result.exit_code == 0
    run = runs_by_arm(import_project)["model-a"]
    assert run.status == "interrupted" and len(run.cases) == 24


@pytest.mark.parametrize("row, says", [
    ('{"id": "q1", "input": "a", "output": "x\\ud800y", "score": 1}', "item 'q1' repeat 0 holds a lone surrogate \\ud800"),
    ('{"id": "q\\udc00", "input": "a", "output": "x", "score": 1}', "item 'q\\udc00' repeat 0 holds a lone surrogate \\udc00"),
    ('{"id": "q1", "input": "a\\ud800", "output": "x", "score": 1}',
     'a row holds a lone surrogate \\ud800, near \'{"id":"q1","input":"a\\ud800"}\''),
])
def test_a_lone_surrogate_is_one_line_and_writes_no_run(import_project, cli, tmp_path, row, says):
    """A ``"\\ud800"`` escape decodes to a character no UTF-8 file can hold (it was a UnicodeEncodeError traceback)."""
    path = tmp_path / "x.jsonl"
    path.write_text(row + "\n", encoding="utf-8")
    result = cli("import", "jsonl", str(path))
    assert result.exit_code == 1
    assert result.stderr.strip() == f"Error: {path}: {says} (not valid Unicode text)"
    assert not list((import_project / "runs").glob("*/run.json"))


@pytest.mark.parametrize("first, second", [(1, 1.0), (1, True), (0.0, -0.0), (float("nan"), None), (2**70, 2**70 + 1)])
def test_arms_on_items_equal_in_python_but_not_in_json_get_their_own_dataset_ids(import_project, cli, tmp_path,
                                                                                  first, second):
    """The arms' items are hashed once when they are the same rows; ``1 == 1.0`` in Python, yet
    they are different rows (as two separate imports of the arms say)."""
    rows = {arm: [{"arm": arm, "id": f"q{n}", "input": "a", "expected": [value, n]} for n in range(3)]
            for arm, value in (("a", first), ("b", second), ("c", first))}
    both = write_jsonl(tmp_path / "both.jsonl", rows["a"] + rows["b"] + rows["c"])
    assert cli("import", "jsonl", str(both)).exit_code == 0
    together = {arm: run.header.dataset.dataset_id for arm, run in runs_by_arm(import_project).items()}
    for arm in ("a", "b"):
        alone = tmp_path / arm / "alone.jsonl"
        alone.parent.mkdir()
        write_jsonl(alone, rows[arm])
        result = cli("import", "jsonl", str(alone), "--json")
        assert result.exit_code == 0, result.output
        assert json.loads(result.output[result.output.index("["):])[0]["dataset_id"] == together[arm]
    assert together["a"] != together["b"] and together["a"] == together["c"]


def test_a_csv_field_past_the_csv_modules_limit_is_refused_saying_so(import_project, cli, tmp_path):
    """The message gave the advice for a stray quote ('quote a field that holds a quote…')."""
    path = tmp_path / "long.csv"
    path.write_text("id,input,output,score\nq1,x,y,1\nq2,x," + "y" * 200_000 + ",1\n", encoding="utf-8")
    result = cli("import", "csv", str(path))
    assert (result.exit_code, result.output) == (
        1, f"Error: {path}: invalid CSV in the record starting on line 3: a field is longer than Python's csv module "
           "reads (131,072 characters); write such long values as JSON Lines\n")
    assert not (import_project / "runs").exists()


@pytest.mark.parametrize("value, found", [(True, "a bool"), ({"name": "m"}, "a dict"), (None, "missing")])
def test_arm_from_a_field_that_is_not_text_or_a_number_is_refused(import_project, cli, tmp_path, value, found):
    """``--arm-from meta.model`` on ``true`` made an arm named 'True', silently."""
    path = write_jsonl(tmp_path / "meta.jsonl", [{"id": "q1", "input": "x", "score": 1, "meta": {"model": "m"}},
                                                  {"id": "q2", "input": "y", "score": 1, "meta": {"model": value}}])
    result = cli("import", "jsonl", str(path), "--arm-from", "meta.model")
    assert (result.exit_code, result.output) == (
        1, f"Error: {path}: line 2: --arm-from field 'meta.model' is {found}; it must name a text or number field\n")


@pytest.mark.parametrize("line, kind", [("null", "null"), ("[1]", "a list"), ('"row"', "a string"), ("7", "a number")])
def test_a_line_that_is_not_an_object_is_named_by_its_json_type(import_project, cli, tmp_path, line, kind):
    """The message named Python's type ('a NoneType', 'a str'), not the file's."""
    path = tmp_path / "rows.jsonl"
    path.write_text('{"id": "q1", "input": "x", "score": 1}\n' + line + "\n", encoding="utf-8")
    result = cli("import", "jsonl", str(path))
    assert (result.exit_code, result.output) == (1, f"Error: {path}: line 2: {kind}, expected a JSON object\n")



def test_an_empty_arm_from_is_a_usage_error_not_the_default_arm(import_project, cli, tmp_path):
    source = write_jsonl(tmp_path / "rows.jsonl", [{"id": "q1", "input": "x", "score": 1, "model": "a"}])
    result = cli("import", "jsonl", str(source), "--arm-from", "")
    assert result.exit_code == 2 and "Invalid value for '--arm-from': names no field" in result.output
    assert not (import_project / "runs").exists() or not any((import_project / "runs").iterdir())
