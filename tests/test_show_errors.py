"""``evalsite show`` lists a run's error messages with their counts, as the run page does."""

from __future__ import annotations

import json

MANIFEST = """\
name: flaky
dataset: {path: data/arithmetic.jsonl}
arms:
  - {id: flaky, target: "python:show_err_arm:answer"}
evaluators:
  - {type: exact}
"""

ARM = '''
def answer(input, row):
    if row["id"].endswith("1"):
        raise ValueError("the model timed out\\nsecond line is not shown")
    if row["id"].endswith("2"):
        raise RuntimeError("rate limited")
    return "0"
'''


def test_show_lists_the_top_error_messages_with_counts(example_project, cli):
    (example_project / "show_err_arm.py").write_text(ARM)
    (example_project / "experiments/flaky.yaml").write_text(MANIFEST)
    ran = cli("run", "experiments/flaky.yaml", "--allow-failures")
    assert "see `evalsite show" in ran.stderr
    (run_id,) = [p.name for p in (example_project / "runs").iterdir() if "-flaky-" in p.name]
    cases = [json.loads(line) for line in (example_project / "runs" / run_id / "cases.jsonl").read_text().splitlines()]
    expected = {}
    for case in cases:
        if case["error"]:
            expected[case["error"].splitlines()[0]] = expected.get(case["error"].splitlines()[0], 0) + 1
    shown = json.loads(cli("show", run_id, "--json").stdout)["top_errors"]
    generation = {e["message"].split(": ", 1)[-1]: e["count"] for e in shown if e["source"] == "generation"}
    assert generation and sum(generation.values()) == sum(expected.values())
    assert sorted(generation.values(), reverse=True) == [e["count"] for e in shown if e["source"] == "generation"]
    text = cli("show", run_id).stdout
    assert "the model timed out" in text and "rate limited" in text and "second line is not shown" not in text
