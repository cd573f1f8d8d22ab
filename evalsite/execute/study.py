"""The study pipeline during a batch: when each level's pre and post steps run, and what they fail.

The runner calls in at four points: :meth:`StudyPipeline.wrap` (a target whose calls first run
the pre steps), :meth:`run_started`, :meth:`case_done` and :meth:`run_done`, and
:meth:`batch_done` at the end. Semantics:

* ``experiment``/``arm``/``item`` ``pre`` run once, before the first case beneath them that
  actually calls its target (a cache hit starts nothing, so it prepares nothing); their result
  is kept, so when one fails every case beneath it fails with that error, without a call.
* ``case`` ``pre`` runs before every attempt (a retry runs it again); a failure fails the case.
* ``post`` steps run when their level finished (``run --depth LEVEL``: only at LEVEL and the levels beneath it) (an item when all its repeats are recorded, an arm
  when its run completed, the experiment when every run completed), in ``depends_on`` order; a
  failure is recorded in the run's ``end.json`` (the experiment's in
  ``results/<experiment>/<batch_id>/end.json``) and fails the exit code. A step whose
  dependency failed is skipped and reported.
"""

from __future__ import annotations

import asyncio
import copy
import json
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path

from evalsite.calls.context import UNBOUNDED, CallContext
from evalsite.calls.targets import TargetRequest, TargetResult
from evalsite.calls.targets.base import Target
from evalsite.errors import ManifestError
from evalsite.execute.artifacts import Scope, level_artifacts, relative_listing
from evalsite.execute.builtin_steps import CASE_STEPS, INTERVAL_STEPS, StepFailed, check_eval, interval_config
from evalsite.execute.hooks import StepContext, StepExtra, StepFunction, resolve_steps, run_step, step_context
from evalsite.experiment.datasets import Item
from evalsite.experiment.pipeline import LEVELS, Pipeline, Step, load_pipeline
from evalsite.experiment.plan import Config, Plan
from evalsite.jsonshape import JSONObject
from evalsite.project import Project

RESULTS_DIR = "results"


def load_study(project: Project, plan: Plan) -> tuple[Pipeline, dict[str, StepFunction]]:
    """The plan's pipeline, checked, with every python step imported (the validation pass calls
    this); a case built-in elsewhere than a case ``post``, an ``eval`` step's evaluators that
    cannot be built and an interval step's bad ``config`` fail now, before anything runs."""
    pipeline = load_pipeline(plan.manifest, project.root)
    functions = resolve_steps(pipeline, project.root)
    for step in (step for steps in pipeline.steps.values() for step in steps if step.kind == "builtin"):
        try:
            if step.spec in CASE_STEPS and (step.level, step.phase) != ("case", "post"):
                raise StepFailed(f"{step.spec} runs as a case post step (hooks.case.post)")
            if step.spec == "eval":
                check_eval(step.config, project.root, run_code=False)  # validate imports nothing
            if step.spec in INTERVAL_STEPS:
                interval_config(step.config, step.spec)
        except StepFailed as exc:
            raise ManifestError(f"{plan.manifest.path}: {step.where}: {exc}") from None
    return pipeline, functions


@dataclass
class StudyPipeline:
    project: Project
    plan: Plan
    batch_id: str
    pipeline: Pipeline
    functions: dict[str, StepFunction]
    runs: dict[str, Scope] = field(default_factory=dict)  # config_id → the arm scope of its run
    gates: dict[tuple[str, ...], asyncio.Task[str | None]] = field(default_factory=dict)  # a level's pre steps, once
    remaining: dict[tuple[str, str], int] = field(default_factory=dict)
    errors: dict[str, list[str]] = field(default_factory=dict)  # config_id → post failures
    items: dict[tuple[str, str], Scope] = field(default_factory=dict)  # (config_id, item_id) → its scope
    calls: CallContext = UNBOUNDED  # the batch's, set by the runner: an eval step's judges count against it

    @property
    def experiment(self) -> Scope:
        name = self.plan.manifest.name
        return Scope("experiment", name, self.batch_id, self.project.root / RESULTS_DIR / name / self.batch_id,
                     children=tuple(self.runs.values()))

    # ----- the runner's calls

    def wrap(self, target: Target, config: Config) -> Target:
        """``target`` itself without pre steps, else a target that runs them before each attempt."""
        if not any(self.pipeline.of(level, "pre") for level in ("experiment", "arm", "item", "case")):
            return target
        return HookedTarget(target, self, config)

    def run_started(self, config: Config, run_dir: Path, keys: list[tuple[Item, int]],
                    pending: list[tuple[Item, int]]) -> None:
        experiment = self.experiment
        base = replace(experiment, level="arm", run_dir=run_dir, arm_id=config.arm_id, config_id=config.config_id,
                       children=())
        self.errors.setdefault(config.config_id, [])
        if self.pipeline.empty:  # no step will run: no item or case scopes to build, none to count
            self.runs[config.config_id] = base
            return
        items: dict[str, list[int]] = {}
        for item, repeat in keys:
            items.setdefault(item.item_id, []).append(repeat)
        children = tuple(
            replace(base, level="item", item_id=item_id,
                    children=tuple(replace(base, level="case", item_id=item_id, repeat=r) for r in repeats))
            for item_id, repeats in items.items()
        )
        self.runs[config.config_id] = replace(base, children=children)
        self.items.update(((config.config_id, item_id), child) for item_id, child in zip(items, children))
        for item, _ in pending:
            self.remaining[(config.config_id, item.item_id)] = self.remaining.get((config.config_id, item.item_id), 0) + 1

    async def before_attempt(self, config: Config, item_id: str, repeat: int) -> str | None:
        """The error that keeps this attempt from calling its target, or ``None``."""
        arm = self.runs[config.config_id]
        item = self.items[(config.config_id, item_id)]
        for key, scope in ((("experiment",), self.experiment), ((config.config_id,), arm),
                           ((config.config_id, item_id), item)):
            if key not in self.gates:
                self.gates[key] = asyncio.ensure_future(self._pre(scope, config))
            error = await asyncio.shield(self.gates[key])
            if error is not None:
                return error
        return await self._pre(self._case(item, repeat), config)

    async def case_done(self, config: Config, case: JSONObject) -> None:
        if self.pipeline.empty:
            return
        item = self.items[(config.config_id, case["item_id"])]
        await self._post(self._case(item, case["repeat"]), config, case=case)
        key = (config.config_id, case["item_id"])
        self.remaining[key] -= 1
        if self.remaining[key] == 0:
            await self._post(item, config)

    async def run_done(self, config: Config, completed: bool) -> list[str]:
        """The arm's post steps (when its run completed); every post failure of this run."""
        arm = self.runs[config.config_id]
        if completed:
            await self._post(arm, config)
        return self.errors[config.config_id]

    async def batch_done(self, completed: bool) -> list[str]:
        """The experiment's post steps (when every run completed), recorded in its end.json."""
        steps = self.pipeline.of("experiment", "post")
        if not steps or not completed or self.plan.depth != "experiment":
            return []
        scope = self.experiment
        errors = await self._run_post(scope, None)
        scope.level_dir.mkdir(parents=True, exist_ok=True)
        record = {"batch_id": self.batch_id, "runs": [s.level_dir.name for s in scope.children],
                  "artifacts": self._typed_listing(scope), "hook_errors": errors}
        (scope.level_dir / "end.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        return errors

    def artifacts_of(self, config: Config) -> dict[str, JSONObject]:
        """The run's own (arm-level) artifacts for its end.json: name → {type, path relative to the run}."""
        return self._typed_listing(self.runs[config.config_id])

    def _typed_listing(self, scope: Scope) -> dict[str, JSONObject]:
        paths = relative_listing(scope.level_dir, level_artifacts(self.pipeline, scope))
        kinds = self.pipeline.artifacts.get(scope.level, {})
        return {name: {"type": kinds[name].type, "path": path} for name, path in paths.items()}

    # ----- the steps

    async def _pre(self, scope: Scope, config: Config | None) -> str | None:
        for step in self.pipeline.of(scope.level, "pre"):
            error = await run_step(step, self._context(step, scope, config), self.functions)
            if error is not None:
                return f"{scope.level} pre step {step.name!r} failed: {error}"
        return None

    async def _post(self, scope: Scope, config: Config, case: JSONObject | None = None) -> None:
        self.errors[config.config_id] += await self._run_post(scope, config, case)

    async def _run_post(self, scope: Scope, config: Config | None, case: JSONObject | None = None) -> list[str]:
        if LEVELS.index(scope.level) < LEVELS.index(self.plan.depth):  # run --depth: not this far out
            return []
        steps = self.pipeline.of(scope.level, "post")
        if not steps:  # the common case, once per case: nothing to format
            return []
        failed: set[str] = set()
        errors: list[str] = []
        where = "".join(f" {k}={v}" for k, v in scope.ids.items() if k in ("arm_id", "item_id", "repeat"))
        for step in steps:
            blocked = [d for d in step.depends_on if d in failed]
            error = (f"skipped: it depends on {blocked[0]!r}, which failed" if blocked
                     else await run_step(step, self._context(step, scope, config, case), self.functions))
            if error is not None:
                failed.add(step.name)
                errors.append(f"{scope.level} post step {step.name!r}{where} failed: {error}")
        return errors

    def _context(self, step: Step, scope: Scope, config: Config | None, case: JSONObject | None = None) -> StepContext:
        extra: StepExtra = {"output_schema": self.pipeline.output_schema, "calls": self.calls}
        if config is not None:
            extra["config_label"] = config.label
        if case is not None:  # copies: a step that changes them changes no record the writer holds, nor the row
            case, extra["row"] = copy.deepcopy(case), copy.deepcopy(self._rows.get(case["item_id"]))
        checkpoint = None if config is None else config.resolved.get("checkpoint")
        return step_context(self.pipeline, step, scope, self.project.root, case=case, checkpoint=checkpoint,
                            extra=extra)

    @cached_property
    def _rows(self) -> dict[str, JSONObject]:
        """Each item's row (what an ``eval`` step's evaluators see as ``row``)."""
        return {item.item_id: item.row for item in self.plan.dataset.items}

    @staticmethod
    def _case(item: Scope, repeat: int) -> Scope:
        return next(child for child in item.children if child.repeat == repeat)


class HookedTarget:
    """A target whose every attempt first passes the pre steps of the levels above it."""

    def __init__(self, inner: Target, study: StudyPipeline, config: Config):
        self.inner, self.study, self.config = inner, study, config
        self.kind = getattr(inner, "kind", "?")
        self.replays_turns = getattr(inner, "replays_turns", True)

    async def generate(self, request: TargetRequest) -> TargetResult:
        error = await self.study.before_attempt(self.config, request.item_id, request.repeat)
        if error is not None:
            return TargetResult(error=error, called=False)  # no call made: no attempt, no cache mark
        return await self.inner.generate(request)

    async def aclose(self) -> None:
        await self.inner.aclose()
