"""Batched durability: one fsync per batch, every finished case durable before the next batch of
its run is scheduled, and a resume after SIGKILL calls exactly the cases that were not recorded."""

from __future__ import annotations

import asyncio
import math
import os
import signal
import time
from collections import Counter
from pathlib import Path

import pytest
from runner_support import openai_arm, questions, start_run, wait_for_cases, write_experiment

from evalsite.execute import schedule
from evalsite.execute.schedule import CaseQueue
from evalsite.runlog.store import CASES_FILE, END_FILE, read_cases, run_directories


def drain_queue(queue: CaseQueue, events: list[str]) -> None:
    async def take_all() -> None:
        while (entry := await queue.take()) is not None:
            events.append(str(entry))

    asyncio.run(take_all())


def test_the_queue_syncs_before_each_batch_and_ends_with_none():
    events: list[str] = []

    async def sync() -> None:
        events.append("sync")

    queue = CaseQueue(list(range(10)), 4, sync, clock=lambda: 0.0)
    drain_queue(queue, events)
    assert events == ["sync", "0", "1", "2", "3", "sync", "4", "5", "6", "7", "sync", "8", "9"]
    assert queue.batches == 3


def test_a_batch_grows_while_syncing_takes_more_than_its_share_and_shrinks_back():
    now = [0.0]
    sync_seconds = [0.0, 1.0, 1.0, 1.0, 0.0, 0.0]  # a slow disk for three batches, then a fast one
    sizes: list[int] = []

    async def sync() -> None:
        now[0] += sync_seconds.pop(0) if sync_seconds else 0.0
        sizes.append(queue.batch_size)

    async def take_all() -> None:
        while await queue.take() is not None:
            now[0] += 0.1  # each case takes 0.1 s between batches

    queue = CaseQueue(list(range(200)), 4, sync, clock=lambda: now[0])
    asyncio.run(take_all())
    assert sizes[:7] == [4, 4, 8, 16, 32, 16, 8]  # 1 s of sync against 0.4-1.6 s of cases: too much
    assert sizes[-1] == 4  # never below the worker count


@pytest.fixture
def fixed_batches(monkeypatch):
    """Batches of exactly the worker count, however slow this machine's fsync is."""
    monkeypatch.setattr(schedule, "SYNC_SHARE", math.inf)


def durable_lines_log(monkeypatch) -> list[int]:
    """Patch os.fsync to record, for each fsync of a cases.jsonl, how many lines it made durable."""
    synced: list[int] = []
    real_fsync = os.fsync

    def recording_fsync(fd: int) -> None:
        path = os.readlink(f"/proc/self/fd/{fd}")
        real_fsync(fd)
        if path.endswith(CASES_FILE):
            synced.append(Path(path).read_bytes().count(b"\n"))

    monkeypatch.setattr(os, "fsync", recording_fsync)
    return synced


def test_every_finished_case_is_durable_before_the_next_batch_calls(runner_project, monkeypatch, cli, fixed_batches):
    """Concurrency 1: a batch is one case, so every call sees all earlier cases fsynced."""
    synced = durable_lines_log(monkeypatch)
    (runner_project / "dur_target.py").write_text(
        "SYNCED, SEEN = [], []\n\n"
        "def answer(input):\n"
        "    SEEN.append(SYNCED[-1] if SYNCED else 0)  # lines on disk when this call was made\n"
        "    return 'echo: ' + input\n"
    )
    monkeypatch.syspath_prepend(str(runner_project))
    import dur_target

    monkeypatch.setattr(dur_target, "SYNCED", synced)
    manifest = write_experiment(runner_project, questions(6), [{"id": "p", "target": "python:dur_target:answer"}],
                                concurrency=1)
    assert cli("run", manifest).exit_code == 0
    assert dur_target.SEEN == [0, 1, 2, 3, 4, 5]  # the n-th call came after the n cases before it were on disk
    assert synced == [1, 2, 3, 4, 5, 6]  # five batch boundaries and the footer's


def test_one_fsync_per_batch_not_per_case(runner_project, server, monkeypatch, cli, fixed_batches):
    synced = durable_lines_log(monkeypatch)
    manifest = write_experiment(runner_project, questions(40), [openai_arm(server)], concurrency=4)
    assert cli("run", manifest).exit_code == 0
    (directory,) = run_directories(runner_project / "runs")
    assert len(read_cases(directory / CASES_FILE)) == 40
    # ten batches of four: nothing to sync before the first, one fsync before each later one, one at the end
    assert len(synced) == 10 and synced[-1] == 40 and synced == sorted(synced)


def test_resume_after_sigkill_calls_exactly_the_unrecorded_cases(runner_project, server, cli):
    items = 60
    server.delay = 0.05
    manifest = write_experiment(runner_project, questions(items), [openai_arm(server)], concurrency=4)
    process = start_run(runner_project, manifest)
    directory = wait_for_cases(runner_project, 12, process)
    process.send_signal(signal.SIGKILL)
    process.wait()
    wait_until_quiet(server)
    recorded = {case.item_id for case in read_cases(directory / CASES_FILE)}
    assert not (directory / END_FILE).exists() and 12 <= len(recorded) < items
    before = len(server.calls)

    assert cli("run", manifest, "--resume", directory.name).exit_code == 0
    resumed = Counter(call.content for call in server.calls[before:])
    assert resumed == Counter({f"question {i}": 1 for i in range(items) if f"q{i}" not in recorded})
    assert Counter(case.item_id for case in read_cases(directory / CASES_FILE)) == Counter(
        {f"q{i}": 1 for i in range(items)})


def wait_until_quiet(server, quiet_s: float = 0.3) -> None:
    """Until the server has held no request and seen no new one for ``quiet_s`` (the killed
    process's last requests were already read when it died)."""
    deadline = time.monotonic() + 10
    count, since = len(server.calls), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.02)
        if len(server.calls) != count or server.in_flight:
            count, since = len(server.calls), time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            return
    raise AssertionError("the fake server never went quiet")
