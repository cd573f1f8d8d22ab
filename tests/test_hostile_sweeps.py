"""Hostile schedule sweeps: a curve whose values are not finite numbers — written so in a curve
file, or overflowing between a start and an end near the float range's ends — is refused before
anything runs, in one line naming the variable or the file; no run is written (a config's params
holding NaN or Infinity were recorded in run.json as text no JSON reader accepts, and with
``integer: true`` the plan ended in a traceback)."""

from __future__ import annotations

import pytest
import yaml

HEAD = {"name": "sw", "rows": [{"id": "q1", "input": "x", "expected": "x"}],
        "arms": [{"id": "a", "target": "none"}], "evaluators": [{"type": "exact"}]}


def _manifest(root, variable) -> str:
    document = {**HEAD, "sweep": {"mode": "schedule", "trials": 3, "variables": {"temperature": variable}}}
    (root / "experiments" / "sw.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
    return "experiments/sw.yaml"


def _runs(root) -> list:
    return list((root / "runs").iterdir()) if (root / "runs").exists() else []


@pytest.mark.parametrize("integer", [False, True])
@pytest.mark.parametrize("kind", ["linear", "cosine"])
def test_a_curve_overflowing_between_its_ends_is_refused(runner_project, cli, kind, integer):
    manifest = _manifest(runner_project, {"curve": kind, "start": -1.7e308, "end": 1.7e308, "integer": integer})
    for command in (("run", manifest), ("run", "--dry-run", manifest), ("validate",)):
        result = cli(*command)
        assert result.exit_code == 1 and "Traceback" not in result.output, result.output
        assert f"sweep.variables.temperature: a {kind} curve from -1.7e+308 to 1.7e+308 gives " in result.output
    assert not _runs(runner_project)


@pytest.mark.parametrize("value", [".nan", ".inf", "-.inf"])
def test_a_curve_file_listing_a_value_that_is_not_finite_is_refused(runner_project, cli, value):
    (runner_project / "curves").mkdir()
    (runner_project / "curves" / "odd.yaml").write_text(f"values: [0.1, {value}, 0.3]\n")
    manifest = _manifest(runner_project, {"curve": "odd"})
    result = cli("run", manifest)
    assert result.exit_code == 1, result.output
    assert result.output.strip().splitlines() == [
        f"Error: {runner_project}/curves/odd.yaml: cannot read the curve: values[1]: must be a finite number, "
        f"got {float(value.replace('.', '')) !r}"]
    assert not _runs(runner_project)


@pytest.mark.parametrize("name", ["../outside", "../../outside", "OUTSIDE", "sub/../../outside"])
def test_a_curve_name_reaching_out_of_curves_is_refused_and_nothing_outside_is_read(runner_project, cli, name):
    """``{curve: ../outside}`` read ``curves/../outside.yaml``, and an absolute name any file: a
    name becomes a path, so it is a safe name, as an arm id or a prompt name is."""
    outside = runner_project.parent / "outside.yaml"
    outside.write_text("values: [0.1, 0.2, 0.3]\n")
    (runner_project / "outside.yaml").write_text("values: [0.1, 0.2, 0.3]\n")
    name = name.replace("OUTSIDE", str(outside.with_suffix("")))
    manifest = _manifest(runner_project, {"curve": name})
    for command in (("run", manifest), ("run", "--dry-run", manifest)):
        result = cli(*command)
        assert result.exit_code == 1 and len(result.output.strip().splitlines()) == 1, result.output
        assert f"sweep.variables.temperature.curve: {name!r} names neither a built-in curve" in result.output
    assert "sweep.variables.temperature.curve: " in cli("validate").output
    assert not _runs(runner_project)
