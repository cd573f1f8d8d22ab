"""A site is the same bytes whatever the process's string hashes: two whole builds of one project,
in processes of different ``PYTHONHASHSEED``, write the same files. The project holds what orders by
more than a plain sort: the hostile project's payloads, and runs of one dataset whose items differ
and whose ids tie in natural order (``q1``/``q01``, ``b2``/``b02``), which a sorted set would order
by hash (the experiment matrix and the item index did, before session 33)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from sitekit import case, tree_bytes, write_hostile_project, write_run


def _tied_runs(runs: Path) -> None:
    tied = (["q1", "q2", "q10", "b2", "x", "item-3"], ["q01", "q2", "q010", "b02", "x", "item-03"])
    for n, ids in enumerate([tied[0], tied[1], tied[0][:4] + tied[1][4:]]):
        cases = [case(item_id, score=float((k + n) % 2), passed=(k + n) % 2 == 0, output=f"o{k % 3}", cost_usd=0.001 * (k + 1))
                 for k, item_id in enumerate(ids)]
        write_run(runs, f"20260102T00000{n}Z-t{n}-000{n}", cases, arm=f"t{n}", experiment="ties",
                  dataset_id="ties@000000000000", evaluators={"exact": {"type": "exact", "version": "v1"}})


def test_two_builds_under_other_string_hashes_write_the_same_site(tmp_path):
    project = write_hostile_project(tmp_path / "project")
    _tied_runs(project / "runs")
    sites = []
    for seed in ("1", "2"):
        out = tmp_path / f"site-{seed}"
        subprocess.run([sys.executable, "-m", "evalsite", "build", "--full", "--out", str(out)], cwd=project, check=True,
                       capture_output=True, env={**os.environ, "PYTHONHASHSEED": seed})
        sites.append(tree_bytes(out))
    assert sites[0].keys() == sites[1].keys()
    assert [path for path in sites[0] if sites[0][path] != sites[1][path]] == []
