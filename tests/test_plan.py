"""The plan: configs × items × repeats, sweeps, design modes, limits, pins, and the dry-run estimate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalsite.errors import EvalsiteError
from evalsite.execute.prepare import prepare_plan
from evalsite.experiment.estimate import estimate_plan
from evalsite.experiment.locks import freeze_dataset
from evalsite.project import Project, find_project
from evalsite.runlog.store import read_run

ROWS = [{"id": f"q{i}", "input": "x" * (4 * i + 4), "expected": "y" * 8,
         "metadata": {"split": "test" if i % 2 else "train"}} for i in range(6)]
MANIFEST = """\
name: demo
dataset: {path: data/qa.jsonl}
arms:
  - {id: a, target: none}
  - {id: b, target: none}
"""


@pytest.fixture
def plan_project(tmp_path, monkeypatch) -> Project:
    """A Project with a six-row dataset (data/qa.jsonl) and the ``plan_arms`` module, as the working folder."""
    (tmp_path / "data").mkdir()
    (tmp_path / "experiments").mkdir()
    (tmp_path / "data/qa.jsonl").write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    (tmp_path / "plan_arms.py").write_text("def answer(input):\n    return input\n")  # the python: arms below
    monkeypatch.chdir(tmp_path)
    return find_project(tmp_path)


def plan_of(project: Project, text: str, *overrides: str, **options):
    path = project.root / "experiments/demo.yaml"
    path.write_text(text)
    return prepare_plan(project, Path("experiments/demo.yaml"), overrides=overrides, **options)


def refusal(project: Project, text: str, *overrides: str, **options) -> str:
    with pytest.raises(EvalsiteError) as caught:
        plan_of(project, text, *overrides, **options)
    return caught.value.message


def keys(plan, config) -> list[tuple[str, int]]:
    return [(item.item_id, repeat) for item, repeat in plan.case_keys(config)]


# ---- expansion -----------------------------------------------------------------------------

def test_every_arm_runs_every_item_and_repeat_by_default(plan_project):
    plan = plan_of(plan_project, MANIFEST + "repeat: 2\n")
    assert [c.arm_id for c in plan.configs] == ["a", "b"]
    assert keys(plan, plan.configs[0])[:3] == [("q0", 0), ("q0", 1), ("q1", 0)]
    assert plan.total_cases == 24
    assert plan.totals(plan.configs[1]) == {"items": 6, "repeat": 2, "cases": 12}
    assert plan.dataset.dataset_id == plan.file_dataset_id


def test_arms_can_be_chosen_and_an_unknown_one_is_named(plan_project):
    plan = plan_of(plan_project, MANIFEST, arm_ids=("b",))
    assert [c.arm_id for c in plan.configs] == ["b"]
    assert refusal(plan_project, MANIFEST, arm_ids=("bb",)) == (
        "experiments/demo.yaml: unknown arm 'bb'; did you mean 'b'? (arms: a, b)"
    )


def test_a_model_sweep_replaces_the_arms_model_and_other_names_are_prompt_variables(plan_project):
    text = """\
name: demo
dataset: {path: data/qa.jsonl}
prompt: "{{ style }}: {{ input }}"
arms:
  - {id: a, target: none, params: {model: m0, temperature: 1}}
  - {id: b, target: python:plan_arms:answer, params: {model: m0}}
sweep:
  variables: {model: [m1, m2], style: [terse, chatty]}
"""
    plan = plan_of(plan_project, text)
    assert [c.label for c in plan.configs] == [
        "a model=m1 style=terse", "a model=m1 style=chatty", "a model=m2 style=terse", "a model=m2 style=chatty",
        "b model=m1 style=terse", "b model=m1 style=chatty", "b model=m2 style=terse", "b model=m2 style=chatty",
    ]
    first = plan.configs[0]
    assert first.params == {"model": "m1", "temperature": 1}
    assert first.prompt_variables == {"style": "terse"}
    assert first.resolved["params"] == first.params and first.resolved["prompt_variables"] == {"style": "terse"}
    assert len({c.config_id for c in plan.configs}) == 8


def test_arms_that_become_the_same_config_under_a_model_sweep_are_refused(plan_project):
    text = MANIFEST.replace("target: none}", "target: none, params: {model: m0}}", 1) + "sweep: {variables: {model: [m1]}}\n"
    assert refusal(plan_project, text) == (
        "experiments/demo.yaml: arms 'a' and 'b' become the same config once the sweep sets model; "
        "drop one of them or that sweep variable"
    )
    assert len(plan_of(plan_project, MANIFEST).configs) == 2  # identical arms without a sweep: an A/A pair


def test_a_random_sweep_is_seeded_and_draws_distinct_combinations(plan_project):
    text = MANIFEST + "sweep: {mode: random, trials: 4, seed: 1, variables: {temperature: [0, 0.5, 1], style: [p, q, r]}}\n"
    first = [c.sweep for c in plan_of(plan_project, text, "arms=[{id: a, target: none}]").configs]
    again = [c.sweep for c in plan_of(plan_project, text, "arms=[{id: a, target: none}]").configs]
    other = [c.sweep for c in plan_of(plan_project, text, "arms=[{id: a, target: none}]", "sweep.seed=3").configs]
    assert first == again and first != other
    assert len({json.dumps(s, sort_keys=True) for s in first}) == 4
    assert refusal(plan_project, text, "sweep.trials=10") == (
        "experiments/demo.yaml: sweep.trials = 10 but the variables make only 9 combinations; use mode: grid"
    )


def test_a_random_sweep_draws_from_a_grid_too_large_to_list(plan_project):
    variables = ", ".join(f"v{i}: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]" for i in range(25))
    text = MANIFEST + f"sweep: {{mode: random, trials: 3, variables: {{{variables}}}}}\n"
    plan = plan_of(plan_project, text, arm_ids=("a",))
    assert len({json.dumps(c.sweep, sort_keys=True) for c in plan.configs}) == 3
    assert all(len(c.prompt_variables) == 25 for c in plan.configs)


def test_the_sweep_is_capped_with_the_count(plan_project):
    text = MANIFEST + "sweep: {variables: {a: [1, 2, 3, 4, 5, 6, 7, 8], b: [1, 2, 3, 4, 5, 6, 7, 8], c: [1, 2, 3, 4, 5, 6, 7, 8]}}\n"
    assert refusal(plan_project, text) == (
        "experiments/demo.yaml: the sweep makes 512 combinations, more than limits.max_combinations = 500; "
        "raise the limit or sweep fewer values"
    )


# ---- limits, selection and pins ------------------------------------------------------------

def test_more_cases_than_the_limit_is_refused_with_the_count(plan_project):
    assert refusal(plan_project, MANIFEST + "repeat: 3\nlimits: {max_cases: 20}\n") == (
        "experiments/demo.yaml: the plan has 36 cases, more than limits.max_cases = 20; "
        "raise the limit or narrow the plan"
    )


def test_the_default_case_limit_is_5000(plan_project):
    assert "more than limits.max_cases = 5000" in refusal(plan_project, MANIFEST + "repeat: 417\n")
    assert plan_of(plan_project, MANIFEST + "repeat: 416\n").total_cases == 4992


def test_an_empty_dataset_is_nothing_to_run(plan_project):
    (plan_project.root / "data/qa.jsonl").write_text("\n")
    assert refusal(plan_project, MANIFEST) == "Nothing to run: the dataset is empty (data/qa.jsonl has no rows)"


def test_split_and_limit_select_the_items_and_name_the_measured_subset(plan_project):
    plan = plan_of(plan_project, MANIFEST.replace("{path: data/qa.jsonl}", "{path: data/qa.jsonl, split: test, limit: 2}"))
    assert keys(plan, plan.configs[0]) == [("q1", 0), ("q3", 0)]
    assert plan.dataset.dataset_id != plan.file_dataset_id
    assert plan.file_dataset_id == plan_of(plan_project, MANIFEST).dataset.dataset_id
    assert refusal(plan_project, MANIFEST, "dataset.split=holdout") == (
        "Nothing to run: no item of data/qa.jsonl has metadata.split 'holdout' (splits found: test, train)"
    )


def test_a_pinned_dataset_id_refuses_a_changed_dataset_naming_the_items(plan_project):
    dataset_id = plan_of(plan_project, MANIFEST).file_dataset_id
    freeze_dataset(plan_project.root / "data/qa.jsonl")
    assert plan_of(plan_project, MANIFEST, f"dataset.dataset_id={dataset_id}").total_cases == 12
    changed = [{**row, "expected": "z"} if row["id"] == "q2" else row for row in ROWS]
    (plan_project.root / "data/qa.jsonl").write_text("".join(json.dumps(row) + "\n" for row in changed))
    now = plan_of(plan_project, MANIFEST, check_lock=False).file_dataset_id  # the lock refusal is tested on its own
    assert refusal(plan_project, MANIFEST, f"dataset.dataset_id={dataset_id}") == (
        f"experiments/demo.yaml: dataset.dataset_id pins {dataset_id} but data/qa.jsonl is now {now} (since its "
        "lock: item 'q2' changed: expected only (the ground truth was edited)); refusing to run on a changed dataset"
    )


def test_a_dataset_outside_the_project_is_refused(plan_project):
    message = refusal(plan_project, MANIFEST, "dataset.path=../elsewhere.jsonl")
    assert message == f"dataset ../elsewhere.jsonl is outside the project {plan_project.root}"


def test_inline_rows_are_a_dataset_named_after_the_experiment(plan_project):
    plan = plan_of(plan_project, MANIFEST.replace("dataset: {path: data/qa.jsonl}", "rows: [{input: a}, {input: b}]"))
    assert plan.dataset.dataset_id.startswith("demo@") and len(plan.dataset.items) == 2
    assert plan.dataset.path == Path("experiments/demo.yaml")


def test_an_unknown_target_kind_is_refused_before_anything_runs(plan_project):
    assert refusal(plan_project, MANIFEST.replace("{id: b, target: none}", "{id: b, target: nnoe}")) == (
        "experiments/demo.yaml: arms[1].target: unknown target kind 'nnoe'; did you mean 'none'? (known: anthropic, command, none, openai, python)"
    )


def test_every_input_must_render_and_a_failure_names_the_item(plan_project):
    assert refusal(plan_project, MANIFEST + "prompt: '{{ question }}'\n") == (
        "experiments/demo.yaml: item 'q0' of data/qa.jsonl: prompt: cannot render: 'question' is undefined"
    )
    (plan_project.root / "data/qa.jsonl").write_text('{"question": "q"}\n')
    assert refusal(plan_project, MANIFEST) == (
        "experiments/demo.yaml: item '0' of data/qa.jsonl: prompt: the row has no 'input' field, "
        "so the manifest needs a 'prompt' template"
    )


# ---- design modes --------------------------------------------------------------------------

def test_coupled_design_runs_the_listed_pairs(plan_project):
    text = MANIFEST + "design: {mode: coupled, couplings: [{arm: a, items: [q0, q1]}, {arm: b, items: [q4]}, {arm: a, items: [q5]}]}\n"
    plan = plan_of(plan_project, text)
    a, b = plan.configs
    assert keys(plan, a) == [("q0", 0), ("q1", 0), ("q5", 0)] and keys(plan, b) == [("q4", 0)]
    assert plan.total_cases == 4 and plan.totals(b) == {"items": 1, "repeat": 1, "cases": 1}


def test_an_arm_the_design_leaves_out_gets_no_config(plan_project):
    plan = plan_of(plan_project, MANIFEST + "design: {mode: coupled, couplings: [{arm: b, items: [q0]}]}\n")
    assert [c.arm_id for c in plan.configs] == ["b"]
    assert refusal(plan_project, MANIFEST + "design: {mode: coupled, couplings: [{arm: b, items: [q0]}]}\n", arm_ids=("a",)) == (
        "Nothing to run: the design gives none of the chosen arms an item (experiments/demo.yaml)"
    )


def test_one_factor_design_varies_one_axis_and_holds_the_other(plan_project):
    items = plan_of(plan_project, MANIFEST + "design: {mode: one_factor, vary: {axis: item, values: [q2, q3]}, pin_arms: [b]}\n")
    assert [c.arm_id for c in items.configs] == ["b"] and keys(items, items.configs[0]) == [("q2", 0), ("q3", 0)]
    arms = plan_of(plan_project, MANIFEST + "design: {mode: one_factor, vary: {axis: arm, values: [a, b]}, pin_items: [q1]}\n")
    assert [keys(arms, c) for c in arms.configs] == [[("q1", 0)], [("q1", 0)]]


def test_a_design_item_must_be_among_the_selected_items(plan_project):
    text = MANIFEST + "design: {mode: coupled, couplings: [{arm: a, items: [q9]}]}\n"
    assert "no item 'q11'; did you mean 'q1'?" in refusal(plan_project, text.replace("q9", "q11"))
    assert refusal(plan_project, text) == (
        "experiments/demo.yaml: design.couplings[0].items: no item 'q9' among the 6 items selected from data/qa.jsonl"
    )


# ---- the estimate --------------------------------------------------------------------------

PRICED = """\
name: demo
dataset: {path: data/qa.jsonl}
arms:
  - id: capped
    target: python:plan_arms:answer
    params: {max_tokens: 10}
    price: {input: 2, output: 4}
  - id: open
    target: python:plan_arms:answer
  - id: recorded
    target: none
repeat: 2
"""


def test_the_estimate_counts_characters_over_four_and_prices_per_million(plan_project):
    report = estimate_plan(plan_of(plan_project, PRICED))
    capped, open_, recorded = report.by_arm()
    input_tokens = 2 * sum(i + 1 for i in range(6))  # row i has 4(i+1) characters, twice
    assert capped == {"arm": "capped", "configs": 1, "cases": 12, "calls": 12, "input_tokens": input_tokens,
                      "output_tokens": 120, "unknown_output_calls": 0,
                      "cost_usd": pytest.approx((input_tokens * 2 + 120 * 4) / 1e6)}
    assert open_["output_tokens"] == 12 * 2 and open_["cost_usd"] is None  # expected is 8 characters
    assert (recorded["calls"], recorded["input_tokens"], recorded["cost_usd"]) == (0, 0, 0.0)
    total = report.total()
    assert total["calls"] == 24 and total["cases"] == 36
    assert total["cost_usd"] == pytest.approx(capped["cost_usd"]) and total["unpriced_arms"] == ["open"]


def test_the_estimate_replays_turns_and_flags_unknown_output(plan_project):
    rows = [{"id": "t", "turns": ["abcd", {"role": "assistant", "content": "given"}, "efgh"], "expected": ["12345678", "1234"]},
            {"id": "u", "input": "abcd"}]
    (plan_project.root / "data/qa.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    report = estimate_plan(plan_of(plan_project, PRICED, "repeat=1", "arms=[{id: open, target: 'python:plan_arms:answer'}]"))
    (only,) = report.by_arm()
    # call 1 sends "abcd" (1 token) and replies 2; call 2 sends 4+5+4 characters (4 tokens) + the 2-token reply
    assert (only["calls"], only["input_tokens"], only["output_tokens"]) == (3, 1 + 6 + 1, 2 + 1 + 0)
    assert only["unknown_output_calls"] == 1


def test_dry_run_prints_the_estimate_and_calls_nothing(plan_project, cli):
    (plan_project.root / "experiments/demo.yaml").write_text(PRICED)
    result = cli("run", "experiments/demo.yaml", "--dry-run")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split() == ["arm", "configs", "cases", "calls", "input_tokens", "output_tokens", "cost_usd"]
    assert lines[1].split()[:4] == ["capped", "1", "12", "12"] and lines[4].split()[:4] == ["total", "3", "36", "24"]
    assert "warning: no price for open: their cost is unknown and not in the total" in lines
    assert not (plan_project.root / "runs").exists()
    data = json.loads(cli("run", "experiments/demo.yaml", "--dry-run", "--json", "--set", "repeat=1").output)
    assert data["total"]["cases"] == 18 and data["method"]["tokens"] == "characters / 4, rounded up"


def test_dry_run_of_the_example_matches_the_cases_a_real_run_makes(example_project, cli):
    dry = json.loads(cli("run", "experiments/arithmetic.yaml", "--dry-run", "--json").output)
    assert cli("run", "experiments/arithmetic.yaml", "--allow-failures").exit_code == 0
    runs = [read_run(d) for d in sorted((example_project / "runs").iterdir())]
    made = {run.header.arm_id: len(run.cases) for run in runs}
    assert made == {arm["arm"]: arm["cases"] for arm in dry["arms"]} == {"careful": 180, "left_to_right": 180, "sampler": 180}
    assert sum(made.values()) == dry["total"]["cases"] == 540
    assert all(run.header.dataset.dataset_id == "arithmetic@854dec43a471" for run in runs)


def test_a_coupled_run_makes_exactly_the_planned_cases(example_project, cli):
    couplings = "[{arm: careful, items: [q000, q001]}, {arm: sampler, items: [q059]}]"
    args = ["run", "experiments/arithmetic.yaml", "--set", "design.mode=coupled", "--set", f"design.couplings={couplings}"]
    dry = json.loads(cli(*args, "--dry-run", "--json").output)
    assert {a["arm"]: a["cases"] for a in dry["arms"]} == {"careful": 6, "sampler": 3}
    assert cli(*args, "--allow-failures").exit_code == 0
    runs = {run.header.arm_id: run for run in map(read_run, (example_project / "runs").iterdir())}
    assert {arm: sorted({c["item_id"] for c in run.cases}) for arm, run in runs.items()} == {
        "careful": ["q000", "q001"], "sampler": ["q059"]}
    assert runs["careful"].header.plan == {"items": 2, "repeat": 3, "cases": 6}
