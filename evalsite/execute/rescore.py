"""Re-score a run's recorded outputs with the current evaluators and ground truth, as a new run.

No target is called (an ``llm_judge`` evaluator still calls its judge). The new run keeps the
source run's generation side verbatim — arm, config, prompt, submitted manifest, the code and
environment that produced the outputs — and replaces the scoring side: the dataset as it is
now (so its id and item hashes change when ground truth changed), the manifest's current
evaluators, the scores. Its ``run.json`` records ``derived_from`` (the source run id) and the
manifest the scores came from; its fingerprint adds ``rescored`` (the code and environment
that scored).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from evalsite.aio import run_sync
from evalsite.analysis.summary import summarise_run
from evalsite.errors import ManifestError, RunLogError
from evalsite.execute.outcomes import summary_ok
from evalsite.execute.prepare import require_evaluator_secrets
from evalsite.execute.runner import dataset_record
from evalsite.experiment.datasets import Dataset, Item
from evalsite.experiment.manifest import Manifest, load_manifest
from evalsite.experiment.plan import manifest_dataset, selected_part
from evalsite.project import Project
from evalsite.runlog.builders import FooterRecord, HeaderRecord, PlanRecord
from evalsite.runlog.fingerprint import (
    dataset_identity,
    environment,
    evaluator_identity,
    git_identity,
)
from evalsite.runlog.records import Case, RunStatus
from evalsite.runlog.store import Run, RunWriter, iso, new_run_id, read_run, resolve_run, utc_now
from evalsite.runlog.totals import RunTotals
from evalsite.scoring.case import rescore_case
from evalsite.scoring.evaluators import Evaluator, build_evaluators, describe_evaluators


@dataclass(frozen=True)
class RescoreOutcome:
    run_id: str
    derived_from: str
    status: str
    summary: RunTotals
    left_out: list[str]

    @property
    def ok(self) -> bool:
        """Exit 0 by the rule ``evalsite run`` applies to each of its runs (:func:`summary_ok`)."""
        return summary_ok(self.summary)

    def acceptable(self, allow_failures: bool) -> bool:
        """Exit 0: :attr:`ok`, or with ``allow_failures`` (as ``run --allow-failures``) any run whose
        critical rows all pass, failed pass rules and failed generations included."""
        return self.ok or (allow_failures and not self.summary.critical_failures)


def rescore_run(project: Project, reference: str, *, manifest_path: Path | None = None) -> RescoreOutcome:
    """Re-score run ``reference`` (an id, unique prefix or folder) into a new run.

    Cases whose item is no longer in the dataset are left out (their ids are returned). The new
    run ends with the source run's status (a run stopped at its cost ceiling stays partial)
    unless re-scoring itself fails.
    """
    source = read_run(resolve_run(project.runs_dir, reference))
    if source.footer is None:
        raise RunLogError(
            f"{source.run_id}: interrupted (no end.json); finish it with "
            f"'evalsite run --resume {source.run_id}' before rescoring"
        )
    manifest = load_manifest(_manifest_path(project, source, manifest_path))
    dataset = _current_dataset(project, manifest, source)
    evaluators = build_evaluators(manifest.evaluators, project.root)
    require_evaluator_secrets(evaluators)
    items = {item.item_id: item for item in dataset.items}
    kept = [case for case in source.cases if case.item_id in items]
    left_out = sorted({case.item_id for case in source.cases} - set(items))
    header = _derived_header(project, source, manifest, dataset, evaluators, kept)
    writer = RunWriter.create(project.runs_dir, source.header.arm_id or "rescore", header.to_json())
    cases: list[dict[str, Any]] = []
    status = source.status
    try:
        run_sync(_rescore_cases(writer, cases, kept, items, evaluators, manifest.concurrency))
    except BaseException:
        status = RunStatus.FAILED
        raise
    finally:
        summary = summarise_run(cases).totals()
        writer.finish(FooterRecord(status, iso(utc_now()), summary).to_json())
    return RescoreOutcome(writer.run_id, source.run_id, status, summary, left_out)


def _manifest_path(project: Project, source: Run, given: Path | None) -> Path:
    if given is not None:
        return given
    recorded = source.header.manifest_path
    if not recorded:
        raise ManifestError(f"{source.run_id}: the run records no manifest; pass --manifest PATH")
    return project.root / recorded


def _current_dataset(project: Project, manifest: Manifest, source: Run) -> Dataset:
    """The manifest's dataset, if it holds the run's questions: the same file, or (for an
    imported run, whose recorded path is the other tool's) the same inputs under any name."""
    dataset = manifest_dataset(project, manifest)
    if manifest.rows is not None:
        if not _same_inputs(source, dataset):
            raise ManifestError(
                f"{manifest.path}: its inline rows are not the questions run {source.run_id} was made on; "
                "rescore needs the run's dataset (pass --manifest with a manifest that names it)")
        return selected_part(manifest, dataset)
    named = manifest.dataset["path"]
    path = project.inside(Path(named), "dataset")
    recorded = source.header.dataset.path
    same_file = recorded is None or (project.root / recorded).resolve() == path
    if not same_file and not _same_inputs(source, dataset):
        raise ManifestError(
            f"{manifest.path}: dataset is {named} but run {source.run_id} was made on {recorded} "
            "and their questions differ; rescore needs the run's dataset (pass --manifest with a manifest that names it)"
        )
    return selected_part(manifest, dataset)


def _same_inputs(source: Run, dataset: Dataset) -> bool:
    """Same item ids and inputs: the content part of ``inputs_id`` (after the name) agrees."""
    recorded = source.header.dataset.inputs_id
    current = dataset_identity(None, dataset)["inputs_id"]
    return isinstance(recorded, str) and recorded.rpartition("@")[2] == current.rpartition("@")[2]


def _derived_header(project: Project, source: Run, manifest: Manifest, dataset: Dataset,
                    evaluators: list[Evaluator], cases: list[Case]) -> HeaderRecord:
    """The source run's header with the scoring side replaced (see the module docstring)."""
    stored = source.header
    fingerprint = {
        **stored.fingerprint,
        "dataset": dataset_identity(project.relative(dataset.path), dataset),
        "evaluators": {e.name: evaluator_identity(e) for e in evaluators},
        "rescored": {"code": git_identity(project.root), "environment": environment()},
    }
    header = replace(
        HeaderRecord.carried(stored), batch_id=new_run_id("batch"), dataset=dataset_record(project, dataset),
        evaluators=describe_evaluators(evaluators), started_at=iso(utc_now()),
        plan=PlanRecord(len({c.item_id for c in cases}), stored.plan.get("repeat"), len(cases)),
    )
    return header.with_fingerprint(fingerprint).with_sections(
        derived_from=source.run_id, rescore_manifest={"path": project.relative(manifest.path), "text": manifest.text},
    )


async def _rescore_cases(writer: RunWriter, done: list[dict[str, Any]], cases: list[Case], items: dict[str, Item],
                         evaluators: list[Evaluator], concurrency: int) -> None:
    gate = asyncio.Semaphore(concurrency)

    async def one(case: Case) -> None:
        async with gate:
            rescored = await rescore_case(case, items[case.item_id], evaluators)
        rescored = writer.append_case(rescored)
        done.append(rescored)

    await asyncio.gather(*(one(case) for case in cases))
