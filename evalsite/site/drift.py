"""Drift between an experiment's manifest and its runs: which arms were edited since they last ran,
and the experiment's status derived from its runs.

The manifest is planned as ``evalsite run`` would plan it (:func:`evalsite.experiment.plan.build_plan`,
which resolves every arm and sweep combination to a ``config_id``); an arm's latest run whose
``config_id`` is no longer among the manifest's configs for that arm was made from an older version
of the manifest. Nothing here runs anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from evalsite.errors import EvalsiteError
from evalsite.project import Project
from evalsite.runlog.records import RunStatus
from evalsite.runlog.store import Run
from evalsite.site.inputs import ExperimentSource, ProjectInputs
from evalsite.site.safe_text import project_relative

EDITED = "edited since this run"


@dataclass(frozen=True)
class Drift:
    """What the manifest says now against what ran: ``edited`` holds the run ids (each arm's latest
    run) whose config the manifest no longer produces; ``problem`` why the manifest could not be planned."""

    configs: dict[str, frozenset[str]] = field(default_factory=dict)
    edited: frozenset[str] = frozenset()
    not_run: tuple[str, ...] = ()
    problem: str | None = None


def experiment_drift(inputs: ProjectInputs, name: str | None) -> Drift:
    """:func:`manifest_drift` of one experiment, planned once per build (jobs of several families read it)."""
    if not name:
        return Drift()
    key = ("drift", name)
    if key not in inputs.memo:
        members = [run for run in inputs.runs if run.header.experiment == name]
        inputs.memo[key] = manifest_drift(inputs.project, inputs.experiments.get(name), members)
    drift: Drift = inputs.memo[key]
    return drift


def manifest_drift(project: Project, source: ExperimentSource | None, members: list[Run]) -> Drift:
    """Compare each arm's latest run with the manifest's current configs (no manifest, no drift).
    The manifest reader and planner are imported here, for an experiment with a manifest only."""
    if source is None:
        return Drift()
    from evalsite.experiment.manifest import load_manifest
    from evalsite.experiment.plan import build_plan

    try:
        plan = build_plan(project, load_manifest(source.path))
    except EvalsiteError as exc:
        return Drift(problem=project_relative(exc.message.splitlines()[0], project.root))
    configs: dict[str, set[str]] = {}
    for config in plan.configs:
        configs.setdefault(config.arm_id, set()).add(config.config_id)
    latest = latest_per_arm(members)
    edited = frozenset(run.run_id for arm, run in latest.items() if run.header.config_id not in configs.get(arm, set()))
    return Drift({arm: frozenset(ids) for arm, ids in configs.items()}, edited,
                 tuple(sorted(arm for arm in configs if arm not in latest)))


def latest_per_arm(members: list[Run]) -> dict[str, Run]:
    latest: dict[str, Run] = {}
    for run in sorted(members, key=lambda r: r.recency):
        latest[str(run.header.arm_id)] = run
    return latest


def experiment_status(members: list[Run], drift: Drift) -> str:
    """One word for an experiment, from each arm's latest run: ``not run``, ``unfinished`` (no end.json yet), ``failed``
    (some latest run did not complete), ``edited`` (the manifest changed since), else ``completed``."""
    latest = latest_per_arm(members)
    if not latest:
        return "not run"
    statuses = {run.status for run in latest.values()}
    if RunStatus.RUNNING in statuses or RunStatus.INTERRUPTED in statuses:
        return "unfinished"
    if statuses != {RunStatus.COMPLETED}:
        return "failed"
    return "edited" if drift.edited or drift.not_run else "completed"


def drift_variant(drift: Drift) -> str:
    """What a page shows of the drift, for its job's hash (an edit to an arm file changes no input key)."""
    return repr((sorted(drift.edited), drift.not_run, drift.problem))
