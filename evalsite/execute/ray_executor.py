"""``evalsite run M --executor ray``: the shards of a batch as Ray tasks, merged when all end.

Each task runs one shard (``--shard K/N``, see evalsite.experiment.shards) exactly as
``evalsite run`` would, in the project folder, so the project must be on storage every Ray
worker sees (one machine, NFS, a shared volume). The cluster is the one ``RAY_ADDRESS`` names,
else a local Ray started for the call. When every task has returned, the shards are merged
(evalsite.execute.merge) into one run per config, the same runs a local ``evalsite run`` makes.
``--max-cost`` applies to each shard on its own. Ray is the optional extra ``evalsite[ray]``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from evalsite.errors import EvalsiteError
from evalsite.execute.merge import MergedRun, merge_batches
from evalsite.experiment.plan import Plan
from evalsite.experiment.shards import Shard, plan_batch_id


@dataclass(frozen=True)
class ShardRequest:
    """What one Ray task needs to rebuild the plan and run its shard (plain data, picklable)."""

    root: str
    manifest: str
    overrides: tuple[str, ...]
    arm_ids: tuple[str, ...]
    repeat: int | None
    concurrency: int | None
    max_cost_usd: float | None
    batch_name: str | None
    shard: Shard
    item_ids: tuple[str, ...] = ()
    depth: str = "experiment"


def run_shard(request: ShardRequest) -> list[str]:
    """Run one shard in this process (a Ray worker); the ids of its runs."""
    from evalsite.execute.prepare import prepare_plan
    from evalsite.execute.runner import execute_plan
    from evalsite.project import find_project

    os.chdir(request.root)
    project = find_project(Path(request.root))
    plan = prepare_plan(project, Path(request.manifest), overrides=request.overrides, arm_ids=request.arm_ids,
                        repeat=request.repeat, item_ids=request.item_ids)
    plan = replace(plan, shard=request.shard, depth=request.depth)
    batch = execute_plan(project, plan, concurrency=request.concurrency, max_cost_usd=request.max_cost_usd,
                         batch_id=plan_batch_id(plan, request.batch_name))
    return [run.run_id for run in batch.runs]


def shard_requests(root: Path, manifest: Path, plan: Plan, shards: int, *, overrides: tuple[str, ...],
                   arm_ids: tuple[str, ...], repeat: int | None, concurrency: int | None, max_cost_usd: float | None,
                   batch_name: str | None, item_ids: tuple[str, ...] = (),
                   depth: str = "experiment") -> tuple[list[ShardRequest], str]:
    """One request per shard of ``plan`` (the other fields as :class:`ShardRequest`'s) and the batch id they will share."""
    requests = [ShardRequest(str(root), str(manifest), overrides=overrides, arm_ids=arm_ids, repeat=repeat,
                             concurrency=concurrency, max_cost_usd=max_cost_usd, batch_name=batch_name,
                             shard=Shard(k, shards), item_ids=item_ids, depth=depth) for k in range(1, shards + 1)]
    return requests, plan_batch_id(replace(plan, shard=requests[0].shard), batch_name)


def run_on_ray(requests: list[ShardRequest], runs_dir: Path, batch_id: str) -> list[MergedRun]:
    """Run every shard as a Ray task, then merge the batch."""
    try:
        import ray
    except ImportError:
        raise EvalsiteError("--executor ray needs the optional extra: pip install 'evalsite[ray]'") from None
    if not ray.is_initialized():
        ray.init(address=os.environ.get("RAY_ADDRESS") or None, include_dashboard=False, log_to_driver=False)
    task = ray.remote(run_shard)
    try:
        ray.get([task.remote(request) for request in requests])
    except ray.exceptions.RayTaskError as exc:
        cause = exc.cause if isinstance(getattr(exc, "cause", None), EvalsiteError) else None
        raise EvalsiteError(f"a shard failed on Ray: {cause.message if cause else str(exc).splitlines()[0]}") from None
    return merge_batches(runs_dir, [batch_id])
