"""Running one pipeline step: its context, its kind (python, command, builtin), its log, its timeout.

A step gets a :class:`StepContext`: its level and ids, the run and level folders, its level's
artifact paths, the paths of its ``in`` artifact in every child instance, the path of its
``out`` artifact, and (for a case) the case record so far. Whatever a step prints or raises is
written to its log file, ``<run_dir>/hooks/<level>-<item>-<repeat>-<phase>-<step>.log`` (the
experiment's under its level folder); a step fails by raising, exiting non-zero or timing out,
and the failure is one line. A python step that times out is reported failed at once, but its
thread cannot be killed and finishes in the background.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict

from evalsite.calls.context import CallContext
from evalsite.errors import EvalsiteError, ManifestError
from evalsite.execute.artifacts import Scope, child_paths, level_artifacts
from evalsite.execute.builtin_steps import STEPS, StepFailed
from evalsite.experiment.manifest_shapes import OutputSchemaSpec
from evalsite.experiment.pipeline import Pipeline, Step
from evalsite.jsonshape import JSONObject, described
from evalsite.project import load_callable

DEFAULT_STEP_TIMEOUT_S = 600.0


class StepExtra(TypedDict, total=False):
    """What the built-in steps read beyond the step's own fields (:attr:`StepContext.extra`):
    the manifest's ``output_schema``, the batch's calls (an ``eval`` step's judges count against
    them), the arm's label and, for a case, its item's dataset row."""

    output_schema: OutputSchemaSpec | None
    calls: CallContext
    config_label: str
    row: JSONObject | None


@dataclass
class StepContext:
    """What a step is told. ``inputs`` holds the ``in`` artifact's path in every child."""

    level: str
    phase: str
    step: str
    ids: dict[str, str | int]
    run_dir: Path | None
    level_dir: Path
    project_root: Path
    artifacts: dict[str, Path]
    log_path: Path
    inputs: list[Path] = field(default_factory=list)
    output: Path | None = None
    config: JSONObject = field(default_factory=dict)
    case: JSONObject | None = None
    checkpoint: JSONObject | None = None
    extra: StepExtra = field(default_factory=lambda: StepExtra())

    def to_json(self) -> JSONObject:
        return {
            "level": self.level, "phase": self.phase, "step": self.step, **self.ids,
            "run_dir": None if self.run_dir is None else str(self.run_dir), "level_dir": str(self.level_dir),
            "artifacts": {k: str(v) for k, v in self.artifacts.items()}, "inputs": [str(p) for p in self.inputs],
            "output": None if self.output is None else str(self.output), "config": self.config,
            "checkpoint": self.checkpoint, "case": self.case,
        }


def step_context(pipeline: Pipeline, step: Step, scope: Scope, project_root: Path, *, case: JSONObject | None = None,
                 checkpoint: JSONObject | None = None, extra: StepExtra | None = None) -> StepContext:
    artifacts = level_artifacts(pipeline, scope)
    ids = "-".join(str(v) for k, v in scope.ids.items() if k in ("item_id", "repeat"))
    log_dir = (scope.run_dir if scope.run_dir is not None else scope.level_dir) / "hooks"
    log_name = "-".join(part for part in (scope.level, ids, step.phase, step.name) if part)
    return StepContext(
        level=scope.level, phase=step.phase, step=step.name, ids=scope.ids, run_dir=scope.run_dir,
        level_dir=scope.level_dir, project_root=project_root, artifacts=artifacts,
        inputs=child_paths(pipeline, scope, step.inputs) if step.inputs else [],
        output=artifacts.get(step.output) if step.output else None, config=step.config,
        log_path=log_dir / f"{_safe(log_name)}.log", case=case, checkpoint=checkpoint, extra=extra or StepExtra(),
    )


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:150]


#: A ``run:`` step's function: called with the step's context; what it returns is ignored.
StepFunction = Callable[[StepContext], object]


def resolve_steps(pipeline: Pipeline, project_root: Path) -> dict[str, StepFunction]:
    """Import every ``run:`` function and check every builtin name, before anything runs."""
    functions: dict[str, StepFunction] = {}
    for steps in pipeline.steps.values():
        for step in steps:
            if step.kind == "run" and step.spec not in functions:
                try:
                    functions[step.spec] = load_callable(step.spec.partition(":")[2], project_root, "step")
                except EvalsiteError as exc:
                    raise ManifestError(f"{step.where}.run: {exc.message}") from None
            if step.kind == "builtin" and STEPS.find(step.spec) is None:
                raise ManifestError(f"{step.where}.builtin: {STEPS.unknown(step.spec)}")
    return functions


async def run_step(step: Step, context: StepContext, functions: dict[str, StepFunction]) -> str | None:
    """Run one step; ``None`` when it succeeded, else the one-line reason it failed."""
    context.log_path.parent.mkdir(parents=True, exist_ok=True)
    context.level_dir.mkdir(parents=True, exist_ok=True)
    if context.output is not None:
        context.output.parent.mkdir(parents=True, exist_ok=True)
    timeout = step.timeout_s or DEFAULT_STEP_TIMEOUT_S
    try:
        async with asyncio.timeout(timeout):
            if step.kind == "command":
                return await _run_command(step, context)
            return await asyncio.to_thread(_run_in_thread, step, context, functions)
    except TimeoutError:
        _log(context, f"timed out after {timeout:g} s\n")
        return f"timed out after {timeout:g} s"


def _run_in_thread(step: Step, context: StepContext, functions: dict[str, StepFunction]) -> str | None:
    """A python or builtin step (in a worker thread; it writes its own output to ``context.log_path``)."""
    output = io.StringIO()
    error = None
    try:
        if step.kind == "builtin":
            message = STEPS.get(step.spec)(context)
            output.write(f"{message}\n" if message else "")
        else:
            functions[step.spec](context)
    except StepFailed as exc:
        error = str(exc)
    except Exception as exc:  # the step's own failure fails the step, never the harness
        error = described(exc)
        output.write(traceback.format_exc())
    _log(context, output.getvalue() + (f"FAILED: {error}\n" if error else ""))
    return error


async def _run_command(step: Step, context: StepContext) -> str | None:
    values = {**context.ids, "level_dir": context.level_dir, "run_dir": context.run_dir or "",
              "output": context.output or "", "inputs": " ".join(map(str, context.inputs))}
    try:
        argv = [str(word).format(**values) for word in step.spec]
    except (KeyError, IndexError, ValueError) as exc:
        return f"command: cannot fill placeholder {exc}"
    env = {**os.environ, "EVALSITE_STEP_CONTEXT": json.dumps(context.to_json(), default=str)}
    with open(context.log_path, "ab") as log:
        try:
            process = await asyncio.create_subprocess_exec(
                *argv, cwd=context.project_root, env=env, stdout=log, stderr=asyncio.subprocess.STDOUT,
                stdin=asyncio.subprocess.DEVNULL,
            )
        except OSError as exc:
            return f"command {argv[0]!r}: {exc.strerror or exc}"
        try:
            code = await process.wait()
        except asyncio.CancelledError:
            process.kill()
            await process.wait()
            raise
    return None if code == 0 else f"command {argv[0]!r} exited with status {code} (see {context.log_path.name})"


def _log(context: StepContext, text: str) -> None:
    if text:
        with open(context.log_path, "a", encoding="utf-8") as log:
            log.write(text)
