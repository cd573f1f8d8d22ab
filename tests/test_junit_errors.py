"""JUnit per item reads the typed case: an error recorded as a ``{type, message}`` object (an imported
run's form) is reported by its message, as a string attribute ElementTree can write."""

from __future__ import annotations

import json
from xml.etree import ElementTree

from evalsite.analysis.ci_files import write_junit
from evalsite.analysis.markdown import run_junit_outcomes
from evalsite.execute.outcomes import BatchOutcome, RunOutcome
from evalsite.project import find_project
from evalsite.runlog.records import RunStatus
from evalsite.runlog.totals import RunTotals


def test_a_case_error_recorded_as_an_object_becomes_the_junit_error_message(example_project, cli, tmp_path):
    cli("run", "experiments/arithmetic.yaml", "--repeat", "1", "--arm", "careful")
    (folder,) = (example_project / "runs").iterdir()
    cases = (folder / "cases.jsonl").read_text().splitlines()
    first = json.loads(cases[0])
    cases[0] = json.dumps({**first, "error": {"type": "TimeoutError", "message": "timed out after 5 s"}})
    (folder / "cases.jsonl").write_text("\n".join(cases) + "\n")
    batch = BatchOutcome([RunOutcome(folder.name, "careful", RunStatus.COMPLETED, RunTotals())], [], None, None, 0.0)

    outcomes = run_junit_outcomes(find_project(example_project), batch)
    write_junit(tmp_path / "run.xml", "suite", outcomes)

    suite = ElementTree.parse(tmp_path / "run.xml").getroot().find("testsuite")
    errors = {case.get("name"): case.find("error").get("message") for case in suite.iter("testcase")
              if case.find("error") is not None}
    assert errors == {first["item_id"]: "timed out after 5 s"}
