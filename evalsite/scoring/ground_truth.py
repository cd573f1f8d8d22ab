"""Re-score a run's stored outputs against another expected value, with the run's own evaluators.

A comparison needs this when an item's expected answer was edited between a baseline and the
current run: the baseline's output is scored again against the current expected value so both
sides are measured against the same ground truth. Re-scoring is honest or it fails with a reason:
the evaluators must rebuild to the very versions the run recorded, the dataset row must be the
one the current run saw (same item hash), and no evaluator may error or skip.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalsite.aio import run_sync
from evalsite.errors import DatasetError, EvaluatorError
from evalsite.experiment.datasets import Item, load_dataset
from evalsite.runlog.records import RunHeader
from evalsite.scoring.case import rescore_case
from evalsite.scoring.evaluators import Evaluator, build_evaluators
from evalsite.scoring.evaluators.base import spec_runs_code


@dataclass(frozen=True)
class Rescored:
    """The re-scored cases of one item, or why they could not be re-scored."""

    cases: list[dict[str, Any]] | None
    reason: str | None = None


def evaluator_specs(header: RunHeader) -> list[dict[str, Any]] | None:
    """The evaluator specs a run recorded in its fingerprint, in order; ``None`` if it recorded none."""
    recorded = header.fingerprint.get("evaluators") or {}
    if not all(isinstance(entry, dict) and "params" in entry for entry in recorded.values()):
        return None
    return [
        {"type": entry["type"], "name": name, "weight": entry["weight"], "threshold": entry["threshold"], "params": entry["params"]}
        for name, entry in recorded.items()
    ]


def rebuild_evaluators(header: RunHeader, project_root: Path, *, run_code: bool = True) -> tuple[list[Evaluator] | None, str | None]:
    """The run's evaluators rebuilt from its fingerprint, or the reason they cannot be. Without
    ``run_code`` (a site build) an evaluator that runs project code or calls a model is a reason."""
    specs = evaluator_specs(header)
    if not specs:
        return None, "the run does not record its evaluators' settings"
    if not run_code and (culprit := next((spec for spec in specs if spec_runs_code(spec)), None)):
        return None, (f"re-scoring needs evaluator {culprit['name']!r} ({culprit['type']}), which runs project code "
                      "or calls a model; a site build never does (`evalsite compare` re-scores)")
    try:
        evaluators = build_evaluators(specs, project_root)
    except EvaluatorError as exc:
        return None, f"its evaluators cannot be rebuilt: {exc.message}"
    recorded = header.fingerprint["evaluators"]
    for evaluator in evaluators:
        if evaluator.version != recorded[evaluator.name]["version"]:
            return None, (
                f"evaluator {evaluator.name!r} changed since the run "
                f"(version {recorded[evaluator.name]['version']}, now {evaluator.version})"
            )
    return evaluators, None


def current_items(project_root: Path, header: RunHeader, cases_by_item: Mapping[str, Sequence[Mapping[str, Any]]]) -> tuple[dict[str, Item], str | None]:
    """The dataset items of the current run, keyed by item id, taken from its dataset file only
    where the row still hashes to what the run recorded."""
    path = header.dataset.path
    if not path:
        return {}, "the current run does not name its dataset file"
    root, resolved = Path(project_root).resolve(), (Path(project_root) / path).resolve()
    if root not in resolved.parents:
        return {}, f"the current run's dataset file {path} is outside the project"
    try:
        items = load_dataset(project_root / path).items
    except DatasetError as exc:
        return {}, f"the dataset file cannot be read: {exc.message}"
    recorded = {item_id: cases[0].get("item_sha") for item_id, cases in cases_by_item.items()}
    return {item.item_id: item for item in items if recorded.get(item.item_id) == item.sha}, None


def rescore_items(
    project_root: Path,
    current_header: RunHeader,
    baseline_cases: Mapping[str, Sequence[Mapping[str, Any]]],
    current_cases: Mapping[str, Sequence[Mapping[str, Any]]],
    item_ids: list[str],
    *,
    run_code: bool = True,
) -> dict[str, Rescored]:
    """Re-score the baseline cases of ``item_ids`` against the current run's expected values."""
    if not item_ids:
        return {}
    evaluators, reason = rebuild_evaluators(current_header, project_root, run_code=run_code)
    items, items_reason = current_items(project_root, current_header, {i: current_cases[i] for i in item_ids})
    reason = reason or items_reason
    if evaluators is None or reason is not None:  # no evaluators always comes with a reason
        return {item_id: Rescored(None, reason) for item_id in item_ids}

    async def all_items() -> list[Rescored]:
        return await asyncio.gather(
            *(_rescore_item(evaluators, items.get(i), baseline_cases[i]) for i in item_ids)
        )

    return dict(zip(item_ids, run_sync(all_items())))


async def _rescore_item(evaluators: list[Evaluator], item: Item | None, cases: Sequence[Mapping[str, Any]]) -> Rescored:
    if item is None:
        return Rescored(None, "the dataset file no longer holds this item as the current run saw it")
    rescored = []
    for case in cases:
        again = await rescore_case(case, item, evaluators)
        failed = next((s for s in again["scores"] if s["error"] or s["skipped"]), None)
        if failed is not None:
            return Rescored(None, f"evaluator {failed['evaluator']!r} could not re-score: {failed['error'] or failed['detail'] or 'skipped'}")
        if again["score"] is None:
            return Rescored(None, "re-scoring gave no score")
        rescored.append({**again, "item_sha": case.get("item_sha")})
    return Rescored(rescored)
