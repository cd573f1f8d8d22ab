"""--set KEY=null removes the key (seed review: a pin could not be lifted from the command line)."""

from __future__ import annotations

import json

import pytest
import yaml

from evalsite.errors import ManifestError
from evalsite.experiment.manifest import apply_override


@pytest.mark.parametrize("assignment, expected", [
    ("dataset.dataset_id=null", {"dataset": {"path": "d.jsonl"}, "arms": [{"id": "a", "params": {"t": 0}}]}),
    ("dataset.dataset_id=", {"dataset": {"path": "d.jsonl"}, "arms": [{"id": "a", "params": {"t": 0}}]}),
    ("arms.a.params.t=null", {"dataset": {"path": "d.jsonl", "dataset_id": "d@1"}, "arms": [{"id": "a", "params": {}}]}),
    ("limits.max_cost_usd=null", {"dataset": {"path": "d.jsonl", "dataset_id": "d@1"}, "arms": [{"id": "a", "params": {"t": 0}}]}),
])
def test_null_removes_the_key_and_creates_nothing(assignment, expected):
    data = {"dataset": {"path": "d.jsonl", "dataset_id": "d@1"}, "arms": [{"id": "a", "params": {"t": 0}}]}
    apply_override(data, assignment)
    assert data == expected


def test_a_list_entry_cannot_be_removed_with_null():
    with pytest.raises(ManifestError, match="arms is a list, whose entries cannot be removed"):
        apply_override({"arms": [{"id": "a"}]}, "arms.a=null")


def test_set_dataset_id_null_runs_on_a_changed_dataset(example_project, cli):
    manifest = example_project / "experiments" / "arithmetic.yaml"
    document = yaml.safe_load(manifest.read_text())
    document["dataset"]["dataset_id"] = "arithmetic@000000000000"
    manifest.write_text(yaml.safe_dump(document, sort_keys=False))
    refused = cli("run", "experiments/arithmetic.yaml", "--dry-run")
    assert refused.exit_code == 1 and "refusing to run on a changed dataset" in refused.output
    lifted = cli("run", "experiments/arithmetic.yaml", "--dry-run", "--json", "--set", "dataset.dataset_id=null")
    assert lifted.exit_code == 0, lifted.output
    assert json.loads(lifted.output)["total"]["cases"] > 0
