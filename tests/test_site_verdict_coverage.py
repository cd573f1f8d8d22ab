"""With clusters declared, the arm intervals the site shows are the command's, and they cover.

Issue 26, item 4: with ``[analysis] cluster_key`` set, ``evalsite leaderboard`` resampled whole
clusters but the dataset page, forest plot, scatter, home card and experiment page showed a second
bootstrap over items (``analysis/arms.py``), too narrow when items in a cluster are alike.

The simulation: a family of datasets of 30 clusters × 8 items whose arms draw a pass probability
per cluster from Beta(2, 2) (true mean 0.5, intra-cluster correlation 0.2;
``clustered_support.py``). For every arm of every dataset the interval the dataset page's table
holds (``site.pages.datasets.leaderboard``, the function that fills it in a build, over the
build's own project scan) must equal the one ``evalsite leaderboard`` computes
(``evalsite.analysis.leaderboard``, the function behind the command), so their coverage of the
true mean is one figure, computed here from the site's values. (A full ``evalsite build`` of this
family writes thousands of item pages; tests/test_site_verdict.py checks on a built site that
every page shows these same intervals.) Each arm is an independent draw, so the coverage is a
binomial share of ``DATASETS × ARMS`` = 96 intervals: its Monte-Carlo standard error is
√(0.95 · 0.05 / 96) ≈ 2.2 points, so the 93–97 % band is about ±1 standard error — a check that
the coverage is near 95 %, not a precise measurement of it. With this seed the site's intervals
cover 90 of 96 (93.8 %); the same interval function over 1,000 seeded datasets of this family
covered 95.2 %, where the item-level bootstrap covered 80.5 %. That item-level interval, which the
site used to show, is computed on the same data as the reference of what goes wrong without
clusters (71 of 96 here), and must cover far less.
"""

from __future__ import annotations

import numpy as np
from clustered_support import TRUE_MEAN, write_clustered_project

from evalsite.analysis import comparable_groups, leaderboard
from evalsite.project import find_project
from evalsite.site import paths
from evalsite.site.inputs import scan_project
from evalsite.site.pages import datasets as dataset_page
from evalsite.site.tables import ShownInterval
from evalsite.stats import bootstrap_ci

DATASETS, ARMS, SEED = 16, 6, 26


def test_the_sites_arm_intervals_are_the_commands_and_cover_the_true_mean(tmp_path):
    written = write_clustered_project(tmp_path, np.random.default_rng(SEED), datasets=DATASETS, arms=ARMS)
    project = find_project(tmp_path)
    inputs = scan_project(project)
    covered = covered_by_items = 0
    for dataset in written:
        (group,) = comparable_groups(inputs.database, dataset.dataset_id).groups
        section = dataset_page.leaderboard(1, group, inputs, paths.dataset(dataset.dataset_id))
        shown = {row["arm"].text: row["mean"] for row in section.arms.rows}
        board = leaderboard(project, dataset.dataset_id)
        assert (board.verdict.unit, board.verdict.n_clusters) == ("cluster", 30)
        assert shown == {arm.label: ShownInterval(arm.value, arm.interval.low, arm.interval.high) for arm in board.arms}
        covered += sum(interval.low <= TRUE_MEAN <= interval.high for interval in shown.values())
        for scores in dataset.scores.values():
            reference = bootstrap_ci(scores)  # over items, as the site's second bootstrap was
            covered_by_items += reference.low <= TRUE_MEAN <= reference.high
    trials = DATASETS * ARMS
    assert 0.93 <= covered / trials <= 0.97, f"site coverage {covered}/{trials}"
    assert covered_by_items / trials < 0.88, f"item-level coverage {covered_by_items}/{trials}"
