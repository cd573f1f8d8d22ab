"""The one validation pass an experiment gets before anything is spent.

``evalsite run`` (with or without ``--dry-run``) and ``evalsite validate`` both call
:func:`prepare_plan`; the runner trusts the plan it returns. The experiment layer checks what it
can alone (schema, rules, dataset, pin, design, limits, prompts); this adds what needs the
execution layer's registries: the target kinds, each arm's target settings and schedule, the
evaluators and the study pipeline's steps — so ``validate`` refuses everything ``run`` would,
before anything is called.

``python:`` references (targets, evaluators, judges) are looked up in the module's source with
:mod:`ast`, never by importing it: a missing function is found without running user code.
"""

from __future__ import annotations

from pathlib import Path

from evalsite.calls.retry import RetryPolicy
from evalsite.calls.targets import make_target, with_model
from evalsite.calls.targets.base import TARGETS
from evalsite.errors import EvalsiteError, MissingSecretError, PlanError
from evalsite.execute.emulation import refuse_model_evaluators
from evalsite.execute.study import load_study
from evalsite.experiment.locks import refuse_changed_dataset
from evalsite.experiment.manifest import load_manifest
from evalsite.experiment.plan import Plan, build_plan
from evalsite.project import Project
from evalsite.python_refs import UnreadableSourceError, check_reference
from evalsite.scoring.evaluators import Evaluator, build_evaluators

CODE_KINDS = ("python",)  # kinds whose construction imports user code: checked by source instead


def prepare_plan(
    project: Project, manifest_path: Path, *, overrides: tuple[str, ...] = (), arm_ids: tuple[str, ...] = (),
    repeat: int | None = None, warnings: list[str] | None = None, run_code: bool = True, check_lock: bool = True,
    item_ids: tuple[str, ...] = (),
) -> Plan:
    """Load and validate a manifest and build its plan, or raise the first layer's problems.

    An unset environment variable a target needs is not a problem here (a dry run needs no
    key; the runner refuses it); with ``warnings`` given, each is appended to it.
    ``run_code=False`` (``evalsite validate``) builds the evaluators without importing project
    code: ``python:`` references are checked in their source only (docs/security.md).
    ``check_lock`` refuses a dataset file that no longer matches its lock (``validate`` passes False:
    it verifies every lock itself and goes on checking the manifest)."""
    plan = build_plan(project, load_manifest(manifest_path, overrides), arm_ids=arm_ids, repeat=repeat, item_ids=item_ids)
    if check_lock and plan.manifest.rows is None:
        refuse_changed_dataset(plan.dataset.path)
    check_targets(plan)
    if plan.manifest.stop_when is not None:  # the adaptive walk's module loads numpy: only for its plans
        from evalsite.execute.decided import check_stop_rule

        check_stop_rule(plan)
    refuse_model_evaluators(plan.manifest)
    problems, missing = runnable_problems(project, plan, run_code)
    problems += [f"{plan.manifest.path}: {p}" for p in reference_problems(project, evaluator_references(plan), run_code)]
    if problems:
        raise PlanError("\n".join(dict.fromkeys(problems)))
    evaluators = build_evaluators(plan.manifest.evaluators, project.root, run_code=run_code)
    if warnings is not None:
        warnings += [*plan.warnings, *missing, *unset_evaluator_secrets(evaluators)]
    load_study(project, plan)  # hooks, artifacts, step files and functions
    return plan


def unset_evaluator_secrets(evaluators: list[Evaluator]) -> list[str]:
    """``evaluator <name>: judge.target: …is not set`` for each secret an evaluator's calls lack."""
    return [f"evaluator {e.name!r}: {secret}" for e in evaluators for secret in e.unset_secrets()]


def require_evaluator_secrets(evaluators: list[Evaluator]) -> None:
    """What ``run`` and ``rescore`` refuse before the first call: a judge without its key."""
    if unset := unset_evaluator_secrets(evaluators):
        raise MissingSecretError("; ".join(unset))


def check_targets(plan: Plan) -> None:
    index = {arm.id: position for position, arm in enumerate(plan.manifest.arms)}
    for config in plan.configs:
        kind = config.target.partition(":")[0]
        if TARGETS.find(kind) is None:  # installed packages' kinds are loaded only when a kind is unknown
            raise PlanError(f"{plan.manifest.path}: arms[{index[config.arm_id]}].target: {TARGETS.unknown(kind)}")


def runnable_problems(project: Project, plan: Plan, run_code: bool = True) -> tuple[list[str], list[str]]:
    """What the runner would refuse for each arm — its target (settings; a ``python:`` function
    looked up by source) and its schedule — and, apart, the unset secrets. (``turns`` rows are
    checked with the dataset.)"""
    problems, missing = [], []
    for config in plan.configs:
        arm = f"arm {config.arm_id!r}"
        kind, _, rest = config.target.partition(":")
        try:
            RetryPolicy.from_schedule(plan.manifest.schedule, config.settings)
            if kind in CODE_KINDS:
                problems += [f"{arm}: {p}" for p in reference_problems(project, [("target", rest)], run_code)]
            else:
                make_target(with_model(config.target, config.params.get("model")), config.settings, project.root)
        except MissingSecretError as exc:
            missing.append(f"{arm}: {exc.message}")
        except EvalsiteError as exc:
            problems.append(f"{arm}: {exc.message}")
    return problems, missing


def evaluator_references(plan: Plan) -> list[tuple[str, str]]:
    """``(what, module:function)`` of every ``python:`` evaluator and ``python:`` judge target."""
    found = []
    for index, spec in enumerate(plan.manifest.evaluators):
        if not isinstance(spec, dict):
            continue
        kind, _, reference = str(spec.get("type", "")).partition(":")
        if kind == "python" and reference:
            found.append((f"evaluators[{index}] evaluator function", reference))
        judge = spec.get("judge") or (spec.get("params") or {}).get("judge")
        judge = judge.get("target") if isinstance(judge, dict) else judge
        if isinstance(judge, str) and judge.startswith("python:"):
            found.append((f"evaluators[{index}] judge.target", judge.removeprefix("python:")))
    return found


def reference_problems(project: Project, references: list[tuple[str, str]], run_code: bool = True) -> list[str]:
    """One message per ``module:function`` that cannot be found, read from source, not imported
    (:func:`evalsite.python_refs.check_reference`). A module that does not parse is left to the
    import when code will run (``run``), which names the error and its line; ``validate`` names it."""
    problems = []
    for what, reference in references:
        try:
            check_reference(reference, project.root, what)
        except UnreadableSourceError as exc:
            if not run_code:
                problems.append(exc.message)
        except EvalsiteError as exc:
            problems.append(exc.message)
    return problems
