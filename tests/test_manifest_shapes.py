"""The manifest's typed blocks (experiment/manifest_shapes.py) hold exactly the keys the JSON Schema
allows, required where the schema requires them: a key added to one and not the other fails here."""

from __future__ import annotations

from typing import Any

import pytest

from evalsite.experiment import manifest_shapes as shapes
from evalsite.experiment.manifest import load_manifest
from evalsite.experiment.schema_check import manifest_schema


def _at(pointer: str) -> dict[str, Any]:
    """The schema node at a slash-separated path (``properties/design/properties/vary``)."""
    node: Any = manifest_schema()
    for part in pointer.split("/"):
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


SHAPES = [
    (shapes.LimitsSpec, "properties/limits"),
    (shapes.ScheduleSpec, "properties/schedule"),
    (shapes.SweepSpec, "properties/sweep"),
    (shapes.CurveSpec, "properties/sweep/properties/variables/additionalProperties"),
    (shapes.DesignSpec, "properties/design"),
    (shapes.Coupling, "properties/design/properties/couplings/items"),
    (shapes.Vary, "properties/design/properties/vary"),
    (shapes.EmulationSpec, "properties/emulation"),
    (shapes.InfraSpec, "properties/emulation/properties/infra"),
    (shapes.HooksSpec, "properties/hooks"),
    (shapes.LevelHooks, "properties/hooks/properties/case"),
    (shapes.OutputSchemaSpec, "properties/output_schema"),
    (shapes.CheckpointSpec, "properties/checkpoints/items"),
    (shapes.ArtifactSpec, "$defs/artifact/anyOf/1"),
    (shapes.PriceSpec, "$defs/arm/properties/price"),
    (shapes.MessageSpec, "$defs/message"),
]


@pytest.mark.parametrize(("shape", "pointer"), SHAPES, ids=[shape.__name__ for shape, _ in SHAPES])
def test_a_shape_has_the_schemas_keys_and_required_keys(shape: Any, pointer: str) -> None:
    node = _at(pointer)
    assert set(shape.__annotations__) == set(node["properties"])
    assert shape.__required_keys__ == frozenset(node.get("required", ()))


def test_the_dataset_block_has_the_schemas_keys_none_required_as_inline_rows_leave_it_empty(tmp_path) -> None:
    node = _at("properties/dataset")
    assert set(shapes.DatasetSpec.__annotations__) == set(node["properties"])
    assert node["required"] == ["path"] and shapes.DatasetSpec.__required_keys__ == frozenset()
    (tmp_path / "inline.yaml").write_text("rows: [{input: hi}]\narms: [{id: a, target: none}]\n")
    assert load_manifest(tmp_path / "inline.yaml").dataset == {}


def test_a_prompt_reference_has_the_schemas_keys_and_what_resolving_it_adds() -> None:
    node = _at("properties/prompt/anyOf/2")
    assert set(node["properties"]) == {"name", "version"} <= set(shapes.PromptRef.__annotations__)
    assert shapes.PromptRef.__required_keys__ == frozenset(node["required"])
