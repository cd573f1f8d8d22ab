"""Human review: ``review export`` samples cases by arm and judge verdict, ``review import``
records ratings as ``human`` scores in runs/decisions.jsonl (append-only, deduplicated), and
``judge-agreement`` compares each judge with them (κ checked against scikit-learn)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from review_support import MODULES, human_rating, make_review_project
from sklearn.metrics import cohen_kappa_score


@pytest.fixture
def review_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli) -> Path:
    """The review project, run once (2 arms × 12 items), as the working folder."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    for name in MODULES:
        monkeypatch.delitem(sys.modules, name, raising=False)
    make_review_project(tmp_path)
    result = cli("run", "experiments/review.yaml")
    assert result.exit_code in (0, 1), result.output
    return tmp_path


def cases_of(root: Path) -> dict[tuple[str, str, int], dict]:
    found = {}
    for run in sorted((root / "runs").iterdir()):
        if run.is_dir():
            for line in (run / "cases.jsonl").read_text().splitlines():
                case = json.loads(line)
                found[(run.name, case["item_id"], case["repeat"])] = case
    return found


def judge_passed(case: dict) -> bool:
    return next(s for s in case["scores"] if s["evaluator"] == "brief")["passed"]


def test_export_draws_per_stratum_cases_from_every_arm_and_judge_verdict(review_project, cli):
    result = cli("review", "export", "--per-stratum", "2", "--seed", "3", "--out", "sample.jsonl")
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in Path("sample.jsonl").read_text().splitlines()]
    strata = {}
    for line in lines:
        strata.setdefault(line["stratum"], []).append(line)
    # right: every answer short → the judge passes all; sloppy: 2 long wrong answers (failed), 10 passed
    assert sorted(strata) == ["arm=right, brief=passed", "arm=sloppy, brief=failed", "arm=sloppy, brief=passed"]
    assert all(len(members) == 2 for members in strata.values())
    cases = cases_of(review_project)
    for line in lines:
        case = cases[(line["run_id"], line["item_id"], line["repeat"])]
        assert line["output"] == case["output"] and line["rating"] is None
        assert line["judges"]["brief"]["verdict"] == ("passed" if judge_passed(case) else "failed")
    again = cli("review", "export", "--per-stratum", "2", "--seed", "3")
    assert again.stdout == Path("sample.jsonl").read_text(), "one seed, one sample"


def test_imported_ratings_are_human_scores_and_agreement_matches_sklearn(review_project, cli):
    cases = cases_of(review_project)
    rated = sorted(cases)[1:]  # all but one
    ratings = [{"run_id": r, "item_id": i, "repeat": k, "rating": human_rating(cases[(r, i, k)]), "comment": "checked"}
               for r, i, k in rated]
    ratings[0]["rating"] = "unsure"
    Path("ratings.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ratings))
    first = cli("review", "import", "ratings.jsonl", "--reviewer", "ana", "--json")
    assert first.exit_code == 0, first.output
    assert json.loads(first.stdout)["recorded"] == len(ratings)
    before = Path("runs/decisions.jsonl").read_text()
    again = json.loads(cli("review", "import", "ratings.jsonl", "--reviewer", "ana", "--json").stdout)
    assert again["recorded"] == 0 and again["unchanged"] == len(ratings)
    assert Path("runs/decisions.jsonl").read_text() == before, "a re-import appends nothing"
    lines = [json.loads(line) for line in before.splitlines()]
    assert {line["decision"] for line in lines} == {"review"} and {line["by"] for line in lines} == {"ana"}

    (report,) = cli.json("judge-agreement", "--seed", "7")
    sure = [r for r in ratings if r["rating"] != "unsure"]
    judge = [judge_passed(cases[(r["run_id"], r["item_id"], r["repeat"])]) for r in sure]
    human = [r["rating"] == "pass" for r in sure]
    assert report["evaluator"] == "brief" and report["n"] == len(sure) and report["unsure"] == 1
    assert report["kappa"] == pytest.approx(cohen_kappa_score(judge, human))
    assert report["raw_agreement"] == pytest.approx(sum(j == h for j, h in zip(judge, human)) / len(sure))
    assert report["confusion"]["judge_pass_human_fail"] == sum(j and not h for j, h in zip(judge, human))
    assert len(report["disagreements"]) == sum(j != h for j, h in zip(judge, human)) > 0
    low, high = report["kappa_interval"]["low"], report["kappa_interval"]["high"]
    assert low <= report["kappa"] <= high


def test_a_changed_rating_replaces_the_earlier_one(review_project, cli):
    (key, case), *_ = sorted(cases_of(review_project).items())
    line = {"run_id": key[0], "item_id": key[1], "repeat": key[2], "rating": "pass"}
    Path("one.jsonl").write_text(json.dumps(line) + "\n")
    cli("review", "import", "one.jsonl", "--reviewer", "bo")
    Path("one.jsonl").write_text(json.dumps({**line, "rating": "fail"}) + "\n")
    result = json.loads(cli("review", "import", "one.jsonl", "--reviewer", "bo", "--json").stdout)
    assert result["recorded"] == 1
    (report,) = cli.json("judge-agreement")
    assert report["n"] == 1 and report["confusion"]["judge_pass_human_fail"] + report["confusion"]["judge_fail_human_fail"] == 1


@pytest.mark.parametrize("line, culprit", [
    ({"item_id": "q00", "repeat": 0, "rating": "pass"}, "run_id is missing"),
    ({"run_id": "RUN", "item_id": "q00", "repeat": 0, "rating": "maybe"}, "rating must be pass or fail or unsure"),
    ({"run_id": "RUN", "item_id": "nope", "repeat": 0, "rating": "pass"}, "item_id 'nope' repeat 0: run RUN has no such case"),
    ({"run_id": "RUN", "item_id": "q00", "repeat": -1, "rating": "pass"}, "repeat must be an integer"),
    ({"run_id": "no-such-run", "item_id": "q00", "repeat": 0, "rating": "pass"}, "run_id 'no-such-run' is not a run"),
    ({"run_id": "RUN", "item_id": "q00", "repeat": 0, "rating": "pass", "comment": 3}, "comment must be a string"),
])
def test_a_bad_line_is_one_error_naming_file_line_and_field_and_records_nothing(review_project, cli, line, culprit):
    run_id = sorted(cases_of(review_project))[0][0]
    good = {"run_id": run_id, "item_id": "q01", "repeat": 0, "rating": "pass"}
    bad = json.loads(json.dumps(line).replace("RUN", run_id))
    Path("bad.jsonl").write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    result = cli("review", "import", "bad.jsonl", "--reviewer", "cy")
    assert result.exit_code == 1
    message = result.output.strip()
    assert message.startswith("Error: bad.jsonl:2: ") and culprit.replace("RUN", run_id) in message, message
    assert "\n" not in message and "Traceback" not in message
    assert not Path("runs/decisions.jsonl").exists(), "a bad line records nothing"


def test_a_line_that_is_not_json_names_its_line(review_project, cli):
    Path("bad.jsonl").write_text('{"run_id": \n')
    result = cli("review", "import", "bad.jsonl", "--reviewer", "cy")
    assert result.exit_code == 1 and result.output.startswith("Error: bad.jsonl: invalid JSON on line 1: Expecting value")


@pytest.mark.parametrize("text, culprit", [
    ("[" * 100_000 + "]" * 100_000, "line 2: nested deeper than 100 levels"),
    ('{"run_id": "RUN", "item_id": "q00", "repeat": 0, "rating": "pass", "comment": "half \\ud83d"}',
     "line 2: holds a lone surrogate \\ud83d (not valid Unicode text)"),
    ('{"run_id": "RUN", "item_id": "q00", "repeat": 0, "rating": "pass", "rating": "fail"}',
     "line 2: invalid JSON: duplicate key 'rating' (each key may appear once in an object)"),
])
def test_a_line_json_reads_but_no_rating_may_hold_is_refused_by_line_and_records_nothing(review_project, cli, text, culprit):
    """Nesting that exhausts the decoder's recursion and an escaped half emoji (which no UTF-8 line of
    decisions.jsonl can hold) were tracebacks; a key given twice silently recorded its last value."""
    run_id = sorted(cases_of(review_project))[0][0]
    good = {"run_id": run_id, "item_id": "q01", "repeat": 0, "rating": "pass"}
    Path("bad.jsonl").write_text(json.dumps(good) + "\n" + text.replace("RUN", run_id) + "\n")
    result = cli("review", "import", "bad.jsonl", "--reviewer", "cy")
    assert (result.exit_code, result.output) == (1, f"Error: bad.jsonl: {culprit}\n")
    assert not Path("runs/decisions.jsonl").exists(), "a bad line records nothing"


def rate_everything(root: Path, cli) -> tuple[list[bool], list[bool]]:
    """The tests' reviewer rates every case; the judge's and the reviewer's labels, case by case."""
    cases = cases_of(root)
    lines = [{"run_id": r, "item_id": i, "repeat": k, "rating": human_rating(c)} for (r, i, k), c in sorted(cases.items())]
    Path("all.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert cli("review", "import", "all.jsonl", "--reviewer", "dee").exit_code == 0
    return [judge_passed(c) for _, c in sorted(cases.items())], [human_rating(c) == "pass" for _, c in sorted(cases.items())]


def test_an_agreement_claim_holds_exactly_when_the_kappa_clears_its_bound(review_project, cli):
    judge, human = rate_everything(review_project, cli)
    kappa = cohen_kappa_score(judge, human)
    assert 0.3 < kappa < 0.9, kappa
    (review_project / "reports").mkdir()
    (review_project / "reports" / "judges.md").write_text(
        f"{{{{ claim: judge brief agrees with humans κ ≥ {kappa - 0.01:.3f} }}}}\n"
        f"{{{{ claim: judge brief agrees with humans kappa >= {kappa + 0.01:.3f} }}}}\n"
        "{{ claim: judge brief agrees with humans agreement > 0.5 }}\n"
        f"{{{{ claim: judge brief agrees with humans κ >= {kappa - 0.01:.3f} (lower bound) }}}}\n"
        "{{ claim: judge nobody agrees with humans κ >= 0.6 }}\n"
        "{{ claim: judge brief agrees with humans tau >= 0.6 }}\n")
    result = cli("check-claims", "--json")
    assert result.exit_code == 1
    verdicts = [(c["status"], c["numbers"].get("kappa")) for c in json.loads(result.stdout)]
    assert [v[0] for v in verdicts] == ["holds", "fails", "holds", "fails", "cannot be checked", "cannot be checked"]
    assert verdicts[0][1] == pytest.approx(kappa)
    claims = json.loads(result.stdout)
    assert claims[3]["numbers"]["low"] < kappa, "the lower bound of the interval is below the estimate"
    assert "no rated case was scored by evaluator 'nobody'" in claims[4]["detail"]
    assert "expected κ, kappa or agreement" in claims[5]["detail"]


def test_validate_names_a_rating_of_a_case_its_run_does_not_hold(review_project, cli):
    (run_id, item_id, repeat), _ = sorted(cases_of(review_project).items())[0]
    Path("one.jsonl").write_text(json.dumps({"run_id": run_id, "item_id": item_id, "repeat": repeat, "rating": "pass"}) + "\n")
    assert cli("review", "import", "one.jsonl", "--reviewer", "hal").exit_code == 0
    assert "decisions.jsonl" not in cli("validate").output, "a well-formed rating is no problem"
    line = json.loads(Path("runs/decisions.jsonl").read_text())
    line["review"]["item_id"] = "gone"
    with open("runs/decisions.jsonl", "a") as handle:
        handle.write(json.dumps(line) + "\n")
    result = cli("validate")
    assert result.exit_code == 1
    assert f"runs/decisions.jsonl: line 2: run {run_id} has no case item 'gone' repeat 0 (rated by hal)" in result.output
