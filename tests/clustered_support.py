"""Clustered projects for the site-verdict tests: datasets whose items come in clusters with
strong cluster effects (``metadata.group``), and arms whose runs are written straight to ``runs/``.

Each arm of each dataset draws its own pass probability per cluster from Beta(2, 2), then every
item of the cluster passes with that probability: the arm's true mean is 0.5, its items are
correlated within a cluster (intra-cluster correlation 0.2), so an interval that resamples items
instead of clusters is too narrow.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from sitekit import case, write_run

from evalsite.experiment.datasets import load_dataset

TRUE_MEAN = 0.5
BETA = (2.0, 2.0)


@dataclass(frozen=True)
class ClusteredDataset:
    """A written dataset: its id, file, and each arm's run id and item scores (dataset order)."""

    dataset_id: str
    path: str
    run_ids: dict[str, str]
    scores: dict[str, np.ndarray]


def write_clustered_project(
    root: Path, rng: np.random.Generator, *, datasets: int, arms: int, clusters: int = 30, size: int = 8,
) -> list[ClusteredDataset]:
    """``datasets`` dataset files × ``arms`` completed runs (one repeat, scores 0/1 without a pass
    rule, cost known, a numeric ``temperature`` param that differs between arms), items clustered
    by ``metadata.group``."""
    (root / "data").mkdir(parents=True, exist_ok=True)
    written = []
    for number in range(datasets):
        path = f"data/clustered-{number:03d}.jsonl"
        rows = [{"id": f"q{cluster:02d}-{item}", "input": f"question {cluster} {item}", "expected": "yes",
                 "metadata": {"group": f"c{cluster:02d}"}} for cluster in range(clusters) for item in range(size)]
        (root / path).write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
        dataset = load_dataset(root / path)
        run_ids, scores = {}, {}
        for arm in range(arms):
            chance = rng.beta(*BETA, clusters)
            passed = rng.random(clusters * size) < np.repeat(chance, size)
            cases = [dict(case(item.item_id, score=float(ok), passed=None, output="yes" if ok else "no",
                               expected="yes", cost_usd=0.001 * (arm + 1)), item_sha=item.sha)
                     for item, ok in zip(dataset.items, passed)]
            serial = number * arms + arm
            run_id = f"20260101T{serial // 3600:02d}{serial // 60 % 60:02d}{serial % 60:02d}Z-arm{arm}-{serial:04x}"
            write_run(root / "runs", run_id, cases, arm=f"arm{arm}", experiment="clustered",
                      dataset_id=dataset.dataset_id, dataset_path=path,
                      config={"arm_id": f"arm{arm}", "params": {"temperature": arm / 10}})
            run_ids[f"arm{arm}"], scores[f"arm{arm}"] = run_id, passed.astype(float)
        written.append(ClusteredDataset(dataset.dataset_id, path, run_ids, scores))
    (root / "evalsite.toml").write_text('[analysis]\ncluster_key = "group"\n', encoding="utf-8")
    return written
