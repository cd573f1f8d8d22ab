"""``evalsite merge``: the shard runs of a batch become one ordinary run per config.

Shards run apart (``evalsite run M --shard K/N`` on N machines) and their run folders are
copied into one project. Merging checks, before it writes anything, that for every config of
the batch each shard 1..N is there exactly once, that no (item, repeat) is in two shards and
that every shard measured the same thing (one fingerprint); then it writes one run per config
with every case, its header from the shards' (``merged_from`` lists them) and its totals over
all cases, and moves the shard folders to ``runs/.merged/<batch_id>/`` so every analysis sees
one run per config. Nothing is deleted.
"""

from __future__ import annotations

import shutil
from collections import defaultdict
from dataclasses import dataclass, replace
from pathlib import Path

from evalsite.errors import RunLogError
from evalsite.execute.runner import run_totals
from evalsite.runlog.builders import FooterRecord, HeaderRecord, PlanRecord
from evalsite.runlog.fields import FieldReader
from evalsite.runlog.records import RunStatus, is_folder_name
from evalsite.runlog.store import RUN_FILE, Run, RunWriter, read_run, run_directories

MERGED_DIR = ".merged"


@dataclass(frozen=True)
class MergedRun:
    run_id: str
    batch_id: str
    arm_id: str
    config_id: str
    shards: tuple[str, ...]
    cases: int
    status: str


def merge_batches(runs_dir: Path, batch_ids: list[str]) -> list[MergedRun]:
    """Merge the named batches (every batch with shard runs when none is named)."""
    shards = _shard_runs(runs_dir)
    wanted = batch_ids or sorted({run.header.raw["batch_id"] for run in shards})
    if not wanted:
        raise RunLogError(f"no shard runs under {runs_dir} (runs made with `evalsite run M --shard K/N`)")
    groups = {}
    for batch_id in wanted:
        members = [run for run in shards if run.header.raw["batch_id"] == batch_id]
        if not members:
            raise RunLogError(f"batch {batch_id!r}: no shard runs of it under {runs_dir}")
        groups[batch_id] = _check_batch(batch_id, members)
    return [_write_merged(runs_dir, batch_id, runs) for batch_id, configs in groups.items() for runs in configs]


def _shard_runs(runs_dir: Path) -> list[Run]:
    runs = [read_run(folder) for folder in run_directories(runs_dir)]
    shards = [run for run in runs if run.header.raw.get("shard") and run.header.raw.get("batch_id")]
    for run in shards:
        _check_shard_fields(run)
    return shards


def _check_shard_fields(run: Run) -> None:
    """The fields merging reads of a shard's ``run.json`` (a hand-edited one may hold anything),
    or a RunLogError naming the run and the field: the batch id names a folder under ``.merged/``."""
    fields = FieldReader(run.header.raw, f"{run.run_id}/{RUN_FILE}", "run.json")
    shard = fields.inner("shard")
    count = shard.integer("count", required=True, minimum=1)
    shard.integer("index", required=True, minimum=1, maximum=count)
    batch_id = fields.text("batch_id", required=True) or ""
    if not is_folder_name(batch_id):
        raise fields.bad("batch_id", "a batch id (a folder name)", batch_id)
    for key in ("arm_id", "config_id", "started_at"):
        fields.text(key, required=True)
    plan = fields.inner("plan")
    for key in ("items", "cases"):
        plan.integer(key, minimum=0)


def _check_batch(batch_id: str, runs: list[Run]) -> list[list[Run]]:
    """The batch's shard runs by config, in shard order, or a RunLogError naming what is wrong."""
    by_config: dict[str, list[Run]] = defaultdict(list)
    for run in runs:
        by_config[run.header.raw["config_id"]].append(run)
    ordered = []
    for runs_of_config in by_config.values():
        arm = runs_of_config[0].header.raw["arm_id"]
        where = f"batch {batch_id}, arm {arm!r}"
        counts = {run.header.raw["shard"]["count"] for run in runs_of_config}
        if len(counts) > 1:
            raise RunLogError(f"{where}: shards of different splits ({', '.join(f'/{c}' for c in sorted(counts))})")
        count = counts.pop()
        by_index: dict[int, list[str]] = defaultdict(list)
        for run in runs_of_config:
            by_index[run.header.raw["shard"]["index"]].append(run.run_id)
        twice = {index: ids for index, ids in by_index.items() if len(ids) > 1}
        if twice:
            index, ids = min(twice.items())
            raise RunLogError(f"{where}: shard {index}/{count} appears more than once ({', '.join(ids)})")
        missing = [f"{index}/{count}" for index in range(1, count + 1) if index not in by_index]
        if missing:
            plural = "s" if len(missing) > 1 else ""
            raise RunLogError(f"{where}: shard{plural} {', '.join(missing)} missing (have {len(by_index)} of {count})")
        in_order = sorted(runs_of_config, key=lambda run: run.header.raw["shard"]["index"])
        _check_same_measurement(where, in_order)
        _check_disjoint(where, in_order)
        ordered.append(in_order)
    return ordered


def _check_same_measurement(where: str, runs: list[Run]) -> None:
    hashes = {run.header.raw.get("fingerprint_hash") for run in runs}
    if len(hashes) > 1:
        names = ", ".join(f"{run.run_id} ({run.header.raw.get('fingerprint_hash')})" for run in runs)
        raise RunLogError(f"{where}: the shards measured different things (fingerprints differ: {names})")
    unfinished = [run.run_id for run in runs if not run.status.finished]
    if unfinished:
        raise RunLogError(f"{where}: shard runs still running or interrupted: {', '.join(unfinished)}; resume them first")


def _check_disjoint(where: str, runs: list[Run]) -> None:
    owner: dict[tuple[str, int], str] = {}
    for run in runs:
        for case in run.cases:
            key = case.key
            if key in owner and owner[key] != run.run_id:
                raise RunLogError(
                    f"{where}: item {key[0]!r} repeat {key[1]} is in two shards ({owner[key]}, {run.run_id})"
                )
            owner[key] = run.run_id


def _write_merged(runs_dir: Path, batch_id: str, shards: list[Run]) -> MergedRun:
    first = shards[0].header
    cases = [dict(case.raw) for run in shards for case in run.cases]
    plans = [run.header.plan for run in shards]
    merged_from = tuple(run.run_id for run in shards)
    plan = PlanRecord(sum(p.get("items", 0) for p in plans), first.plan.get("repeat"), sum(p.get("cases", 0) for p in plans))
    header = replace(HeaderRecord.carried(first), started_at=min(run.header.raw["started_at"] for run in shards), plan=plan)
    header = header.with_sections(drop=("shard",), merged_from=list(merged_from))
    statuses = [run.status for run in shards]
    status = next((s for s in statuses if s is not RunStatus.COMPLETED), RunStatus.COMPLETED)
    arm_id, config_id = first.raw["arm_id"], first.raw["config_id"]
    writer = RunWriter.create(runs_dir, arm_id, header.to_json())
    try:
        for case in cases:
            writer.append_case(case)
    finally:
        ended = max((run.footer.ended_at if run.footer else None) or "" for run in shards) or None
        footer = FooterRecord(status, ended, run_totals(cases, plan.cases or 0), merged_from=merged_from)
        writer.finish(footer.to_json())
    parked = runs_dir / MERGED_DIR / batch_id
    parked.mkdir(parents=True, exist_ok=True)
    for run in shards:
        shutil.move(str(run.directory), str(parked / run.run_id))
    return MergedRun(writer.run_id, batch_id, arm_id, config_id, merged_from, len(cases), str(status))
