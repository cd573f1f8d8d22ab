"""Model slots: ``models: {main, judge, …}`` at the manifest root fill the arms and judges that
name no model (or say ``model: any``); a model an arm or judge names itself always wins.

Where a slot's model goes: for ``openai`` and ``anthropic`` targets given bare (no
``openai:<model>``), into ``settings.model``, where those targets read it; for every other
target, into ``params.model``. Either way the resolved config pins it (and an arm that took a
slot records ``model_slot: main``), so changing ``models.main`` changes those arms' configs.
Judges (an evaluator's ``judge``) take ``models.judge``, else ``models.main``.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import TYPE_CHECKING

from evalsite.jsonshape import JSONObject

if TYPE_CHECKING:
    from evalsite.experiment.manifest import ArmSpec

ANY = "any"
SPEC_MODEL_KINDS = ("openai", "anthropic")  # kinds that read the model from 'kind:<model>' or settings.model


def own_model(target: str, params: JSONObject, settings: JSONObject) -> str | None:
    """The model a target spec names itself, or ``None`` (``any`` counts as none)."""
    kind, _, rest = target.partition(":")
    named = params.get("model") or settings.get("model") or (rest if kind in SPEC_MODEL_KINDS else "")
    return None if named in ("", ANY) else named


def with_model(target: str, params: JSONObject, settings: JSONObject, model: str) -> tuple[JSONObject, JSONObject]:
    """``params`` and ``settings`` with ``model`` where the target reads it."""
    params = {k: v for k, v in params.items() if not (k == "model" and v == ANY)}
    settings = {k: v for k, v in settings.items() if not (k == "model" and v == ANY)}
    if target.partition(":")[0] in SPEC_MODEL_KINDS:
        return params, {**settings, "model": model}
    return {**params, "model": model}, settings


def fill_arms(arms: list[ArmSpec], models: JSONObject) -> list[ArmSpec]:
    """Arms without a model of their own take ``models.main``."""
    main = models.get("main")
    if not main or main == ANY:
        return arms
    filled = []
    for arm in arms:
        if arm.target is None or own_model(arm.target, arm.params, arm.settings) is not None:
            filled.append(arm)
            continue
        params, settings = with_model(arm.target, arm.params, arm.settings, main)
        filled.append(replace(arm, params=params, settings=settings, model_slot="main"))
    return filled


def fill_judges(evaluators: list[JSONObject], models: JSONObject) -> list[JSONObject]:
    """Judges without a model of their own take ``models.judge``, else ``models.main``."""
    slot = next((models.get(n) for n in ("judge", "main") if models.get(n) and models.get(n) != ANY), None)
    if slot is None:
        return evaluators
    filled = []
    for spec in evaluators:
        judge = spec.get("judge")
        judge = {"target": judge} if isinstance(judge, str) else judge
        if not isinstance(judge, dict) or not isinstance(judge.get("target"), str):
            filled.append(spec)
            continue
        params, settings = dict(judge.get("params") or {}), dict(judge.get("settings") or {})
        if own_model(judge["target"], params, settings) is None:
            params, settings = with_model(judge["target"], params, settings, slot)
            judge = {**copy.deepcopy(judge), "params": params, **({"settings": settings} if settings else {})}
        filled.append({**spec, "judge": judge})
    return filled


def slot_problems(data: JSONObject) -> list[str]:
    """An arm or judge saying ``model: any`` needs a slot to take it from."""
    models = data.get("models") or {}
    problems = []
    if not models.get("main") or models.get("main") == ANY:
        for index, arm in enumerate(data.get("arms") or []):
            if ANY in ((arm.get("params") or {}).get("model"), (arm.get("settings") or {}).get("model")):
                problems.append(f"arms[{index}].params.model: 'any' takes models.main, which is not set")
    return problems
