"""The ``python:module:function`` target: sync and async functions, results, failures, threads."""

from __future__ import annotations

import textwrap

from runner_support import all_runs, only_run, questions, write_experiment


def module(project, name: str, body: str) -> None:
    """A module in the project root; every test uses its own name (imports are cached per process)."""
    (project / f"{name}.py").write_text(textwrap.dedent(body))


def test_sync_and_async_functions_and_dict_results(runner_project, cli):
    module(runner_project, "pt_both", """
        import asyncio

        def plain(input):
            return "echo: " + input

        async def awaited(input, repeat):
            await asyncio.sleep(0)
            return {"output": "echo: " + input, "input_tokens": 3, "output_tokens": 1, "finish_reason": "stop"}
    """)
    arms = [{"id": "plain", "target": "python:pt_both:plain"},
            {"id": "awaited", "target": "python:pt_both:awaited", "price": {"input": 2.0, "output": 4.0}}]
    assert cli("run", write_experiment(runner_project, questions(3), arms)).exit_code == 0
    runs = {run.header.arm_id: run for run in all_runs(runner_project)}
    plain, awaited = runs["plain"], runs["awaited"]
    assert all(c["passed"] and c["cost_usd"] is None for c in plain.cases)
    assert all(c["passed"] and c["cost_usd"] == (3 * 2.0 + 1 * 4.0) / 1e6 for c in awaited.cases)


def test_bad_results_and_exceptions_are_case_errors(runner_project, cli):
    module(runner_project, "pt_bad", """
        def answer(input, row):
            kind = row["id"]
            if kind == "q0":
                raise ValueError("no idea")
            if kind == "q1":
                return {"output": "x", "input_tokens": -1}
            if kind == "q2":
                return {"output": "x", "tokens": 3}
            if kind == "q3":
                return {"input_tokens": 3}
            if kind == "q5":
                return {"output": "x", 1: "a", "tokens": 2}  # a key that is not text (sorting it with text was a TypeError)
            return None
    """)
    result = cli("run", write_experiment(runner_project, questions(6), [{"id": "bad", "target": "python:pt_bad:answer"}]))
    assert result.exit_code == 1
    errors = {c["item_id"]: c["error"] for c in only_run(runner_project).cases}
    assert errors == {
        "q0": "ValueError: no idea",
        "q1": "target returned input_tokens=-1; expected a whole number from 0 to 1000000000 or null",
        "q2": "target returned unknown keys: tokens",
        "q3": "target returned a dict without 'output'",
        "q4": "target returned None instead of an output",
        "q5": "target returned unknown keys: 1, tokens",
    }


def test_a_transient_error_is_retried(runner_project, cli):
    module(runner_project, "pt_flaky", """
        from evalsite.calls.targets import TransientTargetError
        seen = set()

        def answer(input):
            if input not in seen:
                seen.add(input)
                raise TransientTargetError("rate limited", retry_after=0.01)
            return "echo: " + input
    """)
    assert cli("run", write_experiment(runner_project, questions(2), [{"id": "f", "target": "python:pt_flaky:answer"}])).exit_code == 0
    assert [c["attempts"] for c in only_run(runner_project).cases] == [2, 2]


def test_sync_functions_run_in_as_many_threads_as_the_concurrency(runner_project, cli):
    # every call waits until ten calls are inside the function at once: with fewer threads it breaks
    module(runner_project, "pt_barrier", """
        import threading
        together = threading.Barrier(10, timeout=10)

        def answer(input):
            together.wait()
            return "echo: " + input
    """)
    manifest = write_experiment(runner_project, questions(10), [{"id": "b", "target": "python:pt_barrier:answer"}])
    assert cli("run", manifest, "--concurrency", "10").exit_code == 0
    assert all(c["passed"] for c in only_run(runner_project).cases)


def test_construction_problems_are_one_line_errors(runner_project, cli):
    module(runner_project, "pt_broken", "def answer(input:\n")
    module(runner_project, "pt_needs", "def answer(input, context):\n    return input\n")
    for target, message in [
        ("python:pt_broken:answer", "importing 'pt_broken' failed: SyntaxError"),
        ("python:pt_needs:answer", "parameter 'context' has no default and is not one of input, row, params, repeat"),
        ("python:pt_needs:missing", "module 'pt_needs' has no function 'missing'"),
        ("python:pt_needs", "expected 'module:function'"),
    ]:
        result = cli("run", write_experiment(runner_project, questions(1), [{"id": "a", "target": target}]))
        assert result.exit_code == 1 and message in result.output, result.output
        assert len(result.output.strip().splitlines()) == 1
