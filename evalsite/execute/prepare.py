"""The one validation pass an experiment gets before anything is spent.

``evalsite run`` (with or without ``--dry-run``) and ``evalsite validate`` both call
:func:`prepare_plan`; the runner trusts the plan it returns. The experiment layer checks what it
can alone (schema, rules, dataset, pin, design, limits, prompts); this adds what needs the
execution layer's registries: the target kinds and the evaluators.
"""

from __future__ import annotations

from pathlib import Path

from evalsite.errors import EvalsiteError, PlanError
from evalsite.execute.targets import target_kinds
from evalsite.execute.targets.base import load_plugins
from evalsite.experiment.manifest import did_you_mean, load_manifest
from evalsite.experiment.plan import Plan, build_plan
from evalsite.project import Project
from evalsite.python_refs import check_reference
from evalsite.scoring.evaluators import build_evaluators


def prepare_plan(
    project: Project, manifest_path: Path, *, overrides: tuple[str, ...] = (), arm_ids: tuple[str, ...] = (),
    repeat: int | None = None, run_code: bool = True,
) -> Plan:
    """Load and validate a manifest and build its plan, or raise the first layer's problems.

    ``run_code=False`` (``evalsite validate``) checks ``python:`` targets, evaluators and judges
    in their source without importing them, so no project code runs (docs/security.md)."""
    plan = build_plan(project, load_manifest(manifest_path, overrides), arm_ids=arm_ids, repeat=repeat)
    check_targets(plan)
    if not run_code:
        check_python_targets(plan, project)
    build_evaluators(plan.manifest.evaluators, project.root, run_code=run_code)
    return plan


def check_python_targets(plan: Plan, project: Project) -> None:
    """Each ``python:module:function`` target is defined in the module's source (not imported)."""
    index = {arm.id: position for position, arm in enumerate(plan.manifest.arms)}
    for config in plan.configs:
        kind, _, rest = config.target.partition(":")
        if kind == "python":
            try:
                check_reference(rest, project.root, "target")
            except EvalsiteError as exc:
                raise PlanError(f"{plan.manifest.path}: arms[{index[config.arm_id]}].target: {exc.message}") from None


def check_targets(plan: Plan) -> None:
    if any(config.target.partition(":")[0] not in target_kinds() for config in plan.configs):
        load_plugins()  # installed packages may add kinds; load them only when a kind is unknown
    kinds = target_kinds()
    index = {arm.id: position for position, arm in enumerate(plan.manifest.arms)}
    for config in plan.configs:
        kind = config.target.partition(":")[0]
        if kind not in kinds:
            raise PlanError(
                f"{plan.manifest.path}: arms[{index[config.arm_id]}].target: unknown target kind "
                f"{kind!r}{did_you_mean(kind, kinds)} (known: {', '.join(kinds)})"
            )
