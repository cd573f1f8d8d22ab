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

import ast
import importlib.util
from pathlib import Path

from evalsite.errors import EvalsiteError, MissingSecretError, PlanError
from evalsite.execute.retry import RetryPolicy
from evalsite.execute.study import load_study
from evalsite.execute.targets import make_target, target_kinds, with_model
from evalsite.execute.targets.base import load_plugins
from evalsite.experiment.manifest import did_you_mean, load_manifest
from evalsite.experiment.plan import Plan, build_plan
from evalsite.project import Project
from evalsite.scoring.evaluators import build_evaluators

CODE_KINDS = ("python",)  # kinds whose construction imports user code: checked by source instead


def prepare_plan(
    project: Project, manifest_path: Path, *, overrides: tuple[str, ...] = (), arm_ids: tuple[str, ...] = (),
    repeat: int | None = None, warnings: list[str] | None = None,
) -> Plan:
    """Load and validate a manifest and build its plan, or raise the first layer's problems.

    An unset environment variable a target needs is not a problem here (a dry run needs no
    key; the runner refuses it); with ``warnings`` given, each is appended to it."""
    plan = build_plan(project, load_manifest(manifest_path, overrides), arm_ids=arm_ids, repeat=repeat)
    check_targets(plan)
    problems, missing = runnable_problems(project, plan)
    problems += [f"{plan.manifest.path}: {p}" for p in reference_problems(project, evaluator_references(plan))]
    if problems:
        raise PlanError("\n".join(dict.fromkeys(problems)))
    evaluators = build_evaluators(plan.manifest.evaluators, project.root)
    if warnings is not None:
        warnings += missing + unset_evaluator_secrets(evaluators)
    load_study(project, plan)  # hooks, artifacts, step files and functions
    return plan


def unset_evaluator_secrets(evaluators: list) -> list[str]:
    """``evaluator <name>: judge.target: …is not set`` for each secret an evaluator's calls lack."""
    return [f"evaluator {e.name!r}: {secret}" for e in evaluators for secret in e.unset_secrets()]


def require_evaluator_secrets(evaluators: list) -> None:
    """What ``run`` and ``rescore`` refuse before the first call: a judge without its key."""
    if unset := unset_evaluator_secrets(evaluators):
        raise MissingSecretError("; ".join(unset))


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


def runnable_problems(project: Project, plan: Plan) -> tuple[list[str], list[str]]:
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
                problems += [f"{arm}: {p}" for p in reference_problems(project, [("target", rest)])]
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


def reference_problems(project: Project, references: list[tuple[str, str]]) -> list[str]:
    """One message per ``module:function`` that cannot be found, read from source, not imported."""
    problems = []
    for what, reference in references:
        module, _, name = reference.partition(":")
        if not module or not name:
            problems.append(f"{what} {reference!r}: expected 'module:function'")
            continue
        source = module_source(project.root, module)
        if source is None:
            problems.append(f"{what} {reference!r}: cannot find module {module!r} in {project.root}")
            continue
        defined = None if source is INSTALLED else defined_names(source)
        if defined is not None and name not in defined:
            problems.append(f"{what} {reference!r}: module {module!r} has no function {name!r}"
                            f"{did_you_mean(name, sorted(defined))}")
    return problems


INSTALLED = Path("<installed>")  # a module found outside the project: its names are not read


def module_source(root: Path, module: str) -> Path | None:
    """The project file ``module`` is imported from, ``INSTALLED`` for a top-level module found
    elsewhere (finding a top-level spec runs nothing), None when it is nowhere."""
    base = root.joinpath(*module.split("."))
    source = next((p for p in (base.with_suffix(".py"), base / "__init__.py") if p.is_file()), None)
    if source is not None:
        return source
    if "." not in module and importlib.util.find_spec(module) is not None:
        return INSTALLED
    return INSTALLED if "." in module and module_source(root, module.partition(".")[0]) is INSTALLED else None


def defined_names(source: Path) -> frozenset[str] | None:
    """Top-level names the module defines (functions, classes, assignments, imports, also under
    top-level ``if``/``try``/``with``), read from its source; None when that cannot be told
    without running it (``import *``, a module ``__getattr__``, a file that does not parse —
    importing it reports that, with the line)."""
    try:
        tree = ast.parse(source.read_text(encoding="utf-8"), str(source))
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return None
    names: set[str] = set()
    statements = list(tree.body)
    while statements:
        node = statements.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            if any(alias.name == "*" for alias in node.names):
                return None
            names.update((alias.asname or alias.name).partition(".")[0] for alias in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            statements += [*node.body, *getattr(node, "orelse", []), *getattr(node, "finalbody", []),
                           *(s for handler in getattr(node, "handlers", []) for s in handler.body)]
    return None if "__getattr__" in names else frozenset(names)
