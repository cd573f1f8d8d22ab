"""Execute a plan: one run per config, cases through an async pool, every case appended as it ends."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from evalsite.datasets import Dataset
from evalsite.evaluators import CaseView, build_evaluators, describe_evaluators, score_case
from evalsite.fingerprint import build_fingerprint, fingerprint_hash, git_identity
from evalsite.plan import Config, Plan
from evalsite.project import Project
from evalsite.prompts import render_input
from evalsite.runlog import RunWriter, iso, new_run_id, utc_now
from evalsite.summary import is_critical, summarise_cases
from evalsite.targets import TargetRequest, make_target


@dataclass(frozen=True)
class RunOutcome:
    run_id: str
    arm_id: str
    status: str
    summary: dict


def execute_plan(project: Project, plan: Plan, *, concurrency: int | None = None) -> list[RunOutcome]:
    """Run every config of ``plan`` in turn; returns one outcome per run."""
    batch_id = new_run_id("batch")
    evaluators = build_evaluators(plan.manifest.evaluators, project.root)
    code = git_identity(project.root)
    outcomes = []
    for config in plan.configs:
        outcomes.append(asyncio.run(_execute_config(project, plan, config, evaluators, code, batch_id, concurrency)))
    return outcomes


def dataset_record(project: Project, dataset: Dataset) -> dict:
    """A dataset as a run header records it (rescore builds its header with this too)."""
    return {"path": project.relative(dataset.path), "dataset_id": dataset.dataset_id, "items": len(dataset.items)}


def _header(project: Project, plan: Plan, config: Config, evaluators, code: dict, batch_id: str) -> dict:
    dataset = dataset_record(project, plan.dataset)
    evaluator_versions = describe_evaluators(evaluators)
    fingerprint = build_fingerprint(
        project=project,
        dataset=plan.dataset,
        config=config,
        prompt=plan.manifest.prompt,
        evaluators=evaluators,
        code=code,
    )
    return {
        "batch_id": batch_id,
        "experiment": plan.manifest.name,
        "manifest_path": project.relative(plan.manifest.path),
        "arm_id": config.arm_id,
        "submitted_manifest": plan.manifest.text,
        "config": config.resolved,
        "config_id": config.config_id,
        "dataset": dataset,
        "evaluators": evaluator_versions,
        "fingerprint": fingerprint,
        "fingerprint_hash": fingerprint_hash(fingerprint),
        "started_at": iso(utc_now()),
        "plan": plan.totals(config),
    }


async def _execute_config(project, plan, config, evaluators, code, batch_id, concurrency) -> RunOutcome:
    target = make_target(config.target, config.settings, project.root)
    writer = RunWriter.create(project.runs_dir, config.arm_id, _header(project, plan, config, evaluators, code, batch_id))
    gate = asyncio.Semaphore(concurrency or plan.manifest.concurrency)
    cases: list[dict] = []

    async def one(item, repeat: int) -> None:
        async with gate:
            case = await _execute_case(plan, config, target, evaluators, item, repeat)
        writer.append_case(case)
        cases.append(case)

    status = "completed"
    try:
        await asyncio.gather(*(one(item, repeat) for item, repeat in plan.case_keys(config)))
    except BaseException:
        status = "failed"
        raise
    finally:
        await target.aclose()
        summary = summarise_cases(cases)
        writer.finish({"status": status, "ended_at": iso(utc_now()), "totals": summary})
    return RunOutcome(writer.run_id, config.arm_id, status, summary)


async def _execute_case(plan: Plan, config: Config, target, evaluators, item, repeat: int) -> dict:
    started_at = utc_now()
    rendered = render_input(plan.manifest.prompt, item.row, config.prompt_variables)
    request = TargetRequest(input=rendered, row=item.row, params=config.params, repeat=repeat, item_id=item.item_id)
    clock = time.perf_counter()
    result = await target.generate(request)
    latency_ms = (time.perf_counter() - clock) * 1000
    cost = result.cost_usd if result.cost_usd is not None else _priced_cost(config.price, result)
    expected = item.row.get("expected")
    view = CaseView(input=rendered, output=result.output, expected=expected, row=item.row,
                    latency_ms=latency_ms, cost_usd=cost)
    scored = await score_case(evaluators, view, result.error)
    return {
        "item_id": item.item_id,
        "item_sha": item.sha,
        "repeat": repeat,
        "input": rendered,
        "expected": expected,
        "output": result.output,
        "error": result.error,
        "latency_ms": round(latency_ms, 3),
        "input_tokens": result.input_tokens,
        "output_tokens": result.output_tokens,
        "cost_usd": cost,
        "finish_reason": result.finish_reason,
        "scores": [s.to_json() for s in scored.scores],
        "score": scored.score,
        "passed": scored.passed,
        "started_at": iso(started_at),
        "critical": is_critical(item.row),
    }


def _priced_cost(price: dict | None, result) -> float | None:
    """Tokens × the arm's price per million; unknown (None) when either is missing."""
    if not price or result.input_tokens is None or result.output_tokens is None:
        return None
    return (result.input_tokens * price.get("input", 0) + result.output_tokens * price.get("output", 0)) / 1e6
