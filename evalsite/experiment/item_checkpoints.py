"""An item's own starting state: a row's ``inputs.checkpoint.load``, and the axis that overrides it.

A row may name the checkpoint its cases start from (``{"inputs": {"checkpoint": {"load":
"checkpoints/q1.json"}}}``, a path relative to the project root that must exist). Without a
checkpoint axis the target is given ``{id, path}`` for it (``id`` the path as written) and each
case records it as its ``checkpoint``; with a non-trivial axis (``checkpoints:`` listing more than
``none``) the axis wins, and the plan warns once, naming the items whose own checkpoint is unused.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalsite.errors import PlanError, listed
from evalsite.experiment.checkpoints import FRESH
from evalsite.experiment.manifest_shapes import CheckpointSpec
from evalsite.jsonshape import JSONObject

FIELD = "inputs.checkpoint.load"


def declared_load(row: JSONObject) -> Any:
    """The row's ``inputs.checkpoint.load`` as written, or None."""
    inputs = row.get("inputs")
    checkpoint = inputs.get("checkpoint") if isinstance(inputs, dict) else None
    return checkpoint.get("load") if isinstance(checkpoint, dict) else None


def item_checkpoint(root: Path, row: JSONObject, where: str) -> JSONObject | None:
    """``{id, path}`` (the path absolute) of the row's own checkpoint; ``where`` names the item."""
    load = declared_load(row)
    if load is None:
        return None
    if not isinstance(load, str) or not load:
        raise PlanError(f"{where}: {FIELD}: needs a path relative to the project root, got {load!r}")
    path = (root / load).resolve()
    if not path.exists():
        raise PlanError(f"{where}: {FIELD}: {load} does not exist (relative to the project root {root})")
    return {"id": load, "path": str(path)}


def overridden_warning(items: list[tuple[str, JSONObject]], axis: list[CheckpointSpec] | None) -> str | None:
    """The warning when a non-trivial checkpoint axis overrides items' own checkpoints."""
    if not axis or all(entry["id"] == FRESH for entry in axis):
        return None
    named = [item_id for item_id, row in items if declared_load(row) is not None]
    if not named:
        return None
    shown = listed(named, 5)
    return (f"the checkpoint axis overrides the {FIELD} of {len(named)} item(s) ({shown}): "
            "their cases start from each axis checkpoint instead")
