"""The Python API: the walkthrough in docs/python-api-walkthrough.md runs as written inside a running
event loop (as a notebook cell does), and its functions are the ones the CLI uses."""

from __future__ import annotations

import ast
import asyncio
import gc
import re
import subprocess
import sys
from unittest.mock import patch

import pytest
from example_support import REPO

import evalsite
from evalsite.execute.prepare import prepare_plan

WALKTHROUGH = REPO / "docs" / "python-api-walkthrough.md"


def code_blocks(path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S)


async def run_like_a_notebook(blocks: list[str]) -> dict:
    """Each block is a cell: compiled with top-level await allowed, run in one namespace."""
    namespace: dict = {}
    for block in blocks:
        code = compile(block, str(WALKTHROUGH), "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        result = eval(code, namespace)
        if asyncio.iscoroutine(result):
            await result
    return namespace


def test_the_walkthrough_runs_inside_a_running_event_loop(example_project):
    blocks = code_blocks(WALKTHROUGH)
    assert len(blocks) >= 5
    namespace = asyncio.run(run_like_a_notebook(blocks))
    assert namespace["batch"].finished
    assert (example_project / "site" / "index.html").exists()


def test_run_experiment_async_returns_the_batch_it_wrote(example_project):
    async def main():
        return await evalsite.run_experiment_async("experiments/arithmetic.yaml", arms=["careful"], repeat=1)

    batch = asyncio.run(main())
    (run,) = batch.runs
    assert (example_project / "runs" / run.run_id / "end.json").exists()
    assert run.summary.cases == 60


@pytest.mark.parametrize("enabled", [True, False])
def test_a_run_leaves_the_garbage_collector_as_it_found_it(example_project, enabled):
    """The collector is off while the run is prepared, what that made frozen until the batch ends:
    after it, the collector is on or off as before and nothing is left frozen."""
    paused = []

    def probe(*args, **kwargs):
        paused.append(not gc.isenabled())
        return prepare_plan(*args, **kwargs)

    (gc.enable if enabled else gc.disable)()
    try:
        with patch("evalsite.execute.prepare.prepare_plan", probe):
            batch = evalsite.run_experiment("experiments/arithmetic.yaml", arms=["careful"], repeat=1)
        assert (batch.finished, paused, gc.isenabled(), gc.get_freeze_count()) == (True, [True], enabled, 0)
    finally:
        gc.enable()


def test_a_run_leaves_its_callers_own_freeze_frozen(example_project):
    """A process that froze its heap before a run (gc.freeze's documented use, before a fork) finds
    it frozen after: the run's own freeze may not end with gc.unfreeze, which unfreezes everything."""
    gc.unfreeze()
    gc.freeze()
    frozen = gc.get_freeze_count()
    try:
        batch = evalsite.run_experiment("experiments/arithmetic.yaml", arms=["careful"], repeat=1)
        assert batch.finished
        assert gc.get_freeze_count() > frozen // 2  # what the run freed of it aside (0: all unfrozen)
    finally:
        gc.unfreeze()


def test_import_evalsite_loads_no_engine():
    probe = "import sys, evalsite; print(sorted(m for m in ('duckdb', 'httpx', 'jinja2', 'scipy') if m in sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"
