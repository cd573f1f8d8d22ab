"""What an LLM judge spends is recorded per case and counts toward the cost ceiling."""

from __future__ import annotations

from runner_support import only_run, questions, write_experiment


def test_judge_spend_is_recorded_and_stops_the_run_at_the_ceiling(runner_project, cli):
    (runner_project / "jc_arm.py").write_text("def echo(input):\n    return 'echo: ' + input\n")
    (runner_project / "jc_judge.py").write_text(
        "def grade(input):\n    return {'output': '{\"score\": 9, \"reason\": \"ok\"}', 'cost_usd': 0.01}\n"
    )
    arms = [{"id": "free", "target": "python:jc_arm:echo", "price": {"input": 0, "output": 0}}]
    evaluators = [{"type": "llm_judge", "judge": "python:jc_judge:grade"}]
    manifest = write_experiment(runner_project, questions(10), arms, evaluators=evaluators, concurrency=1)

    result = cli("run", manifest, "--max-cost", "0.03")

    assert result.exit_code == 1
    run = only_run(runner_project)
    assert run.footer.status == "stopped_cost_ceiling"
    assert len(run.cases) == 3, "the judge's $0.01 per case reaches the $0.03 ceiling on the third case"
    assert [case["cost_usd"] for case in run.cases] == [None] * 3  # the arm reports no tokens: unknown, not $0
    assert [case["scoring_cost_usd"] for case in run.cases] == [0.01, 0.01, 0.01]
    assert run.footer.totals.scoring_cost_usd == 0.03
    assert all(case["scores"][0]["cost_usd"] == 0.01 for case in run.cases)
