"""The public surface of evalsite.stats: stable names, frozen results that name their method, no global state."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import evalsite.stats as stats
from evalsite.stats import (
    bootstrap_ci,
    flakiness,
    friedman_test,
    holdout_check,
    mcnemar_exact,
    min_detectable_effect,
    nemenyi,
    paired_bootstrap_ci,
    rank_stability,
    repeat_noise,
    required_n,
    sign_flip_test,
    tied_groups,
    wilson_interval,
)

RNG = np.random.default_rng(0)
MATRIX = RNG.normal(size=(30, 4)) + np.array([0.0, 0.2, 0.4, 0.6])
PASSES = (RNG.random((30, 3)) < 0.6).astype(float)


def all_results():
    nemenyi_result = nemenyi(MATRIX)
    return [
        sign_flip_test(MATRIX[:, 0], MATRIX[:, 1]),
        mcnemar_exact(PASSES[:, 0], PASSES[:, 1]),
        friedman_test(MATRIX, n_resamples=200),
        nemenyi_result,
        tied_groups(nemenyi_result.mean_ranks, nemenyi_result.critical_difference),
        rank_stability(MATRIX, n_resamples=50),
        holdout_check(MATRIX[:15], MATRIX[15:]),
        bootstrap_ci(MATRIX[:, 0], n_resamples=200),
        paired_bootstrap_ci(MATRIX[:, 0], MATRIX[:, 1], n_resamples=200),
        wilson_interval(3, 10),
        repeat_noise(PASSES),
        flakiness(PASSES),
        min_detectable_effect(MATRIX[:, 0] - MATRIX[:, 1]),
        required_n(0.5, 0.1),
    ]


def test_every_public_name_is_exported():
    for name in stats.__all__:
        assert hasattr(stats, name), name
    for stable in ("sign_flip_test", "holm", "friedman_test", "nemenyi", "bootstrap_ci", "rank_stability"):
        assert stable in stats.__all__


def test_every_result_is_a_frozen_dataclass_that_names_its_method():
    for result in all_results():
        assert dataclasses.is_dataclass(result)
        field = dataclasses.fields(result)[0].name
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(result, field, None)
        if not isinstance(result, stats.TiedGroups):  # a display of another result, no method of its own
            assert getattr(result, "method", None) or getattr(result, "kind", None)


def test_results_do_not_touch_numpy_global_random_state():
    np.random.seed(123)
    expected = np.random.random()
    np.random.seed(123)
    all_results()
    assert np.random.random() == expected


def test_results_are_reproducible_from_their_seed():
    first, second = all_results(), all_results()
    for a, b in zip(first, second):
        if isinstance(a, stats.NemenyiResult):
            assert np.array_equal(a.p_values, b.p_values)
        else:
            assert a == b
