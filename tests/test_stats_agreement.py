"""Cohen's κ and raw agreement (evalsite.stats.agreement) against scikit-learn, scipy's bootstrap
and a simulation of the interval's coverage with a fixed seed."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy.stats import bootstrap
from sklearn.metrics import cohen_kappa_score, confusion_matrix

from evalsite.stats.agreement import agreement, cohen_kappa, confusion


@pytest.mark.parametrize("seed", range(8))
def test_kappa_and_confusion_equal_sklearn(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 200))
    judge = rng.random(n) < rng.uniform(0.2, 0.8)
    human = np.where(rng.random(n) < rng.uniform(0.5, 0.95), judge, ~judge)
    assert cohen_kappa(judge, human) == pytest.approx(cohen_kappa_score(judge, human), abs=1e-12)
    counts = confusion(judge, human)
    (tn, fp), (fn, tp) = confusion_matrix(judge, human, labels=[False, True])  # rows: judge, columns: human
    # fn: the judge passes what the human fails; fp: the judge fails what the human passes
    assert (counts.both_pass, counts.first_only, counts.second_only, counts.both_fail) == (tp, fn, fp, tn)


def test_kappa_is_undefined_when_both_raters_give_one_label_to_everything():
    same = [True] * 6
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scikit-learn warns that κ is undefined here
        reference = cohen_kappa_score(same, same)
    assert math.isnan(reference) and math.isnan(cohen_kappa(same, same))
    assert cohen_kappa([True, True, False], [True, True, True]) == pytest.approx(
        cohen_kappa_score([True, True, False], [True, True, True]))


def test_the_raw_agreement_interval_matches_scipys_percentile_bootstrap():
    rng = np.random.default_rng(11)
    judge = rng.random(150) < 0.5
    human = np.where(rng.random(150) < 0.8, judge, ~judge)
    result = agreement(judge, human, seed=3, n_resamples=20_000)
    reference = bootstrap(((judge == human).astype(float),), np.mean, n_resamples=20_000, method="percentile",
                          random_state=np.random.default_rng(5)).confidence_interval
    assert result.raw == pytest.approx(np.mean(judge == human))
    assert result.raw_interval.low == pytest.approx(reference.low, abs=0.01)
    assert result.raw_interval.high == pytest.approx(reference.high, abs=0.01)


def test_the_kappa_interval_covers_the_true_kappa_about_95_percent_of_the_time():
    """judge passes with p = 0.6; the human agrees with probability 0.85: true κ = (0.85 − p_e) / (1 − p_e)."""
    p_judge, p_same = 0.6, 0.85
    p_human = p_judge * p_same + (1 - p_judge) * (1 - p_same)
    chance = p_judge * p_human + (1 - p_judge) * (1 - p_human)
    true_kappa = (p_same - chance) / (1 - chance)
    rng = np.random.default_rng(2024)
    covered, trials = 0, 300
    for trial in range(trials):
        judge = rng.random(200) < p_judge
        human = np.where(rng.random(200) < p_same, judge, ~judge)
        interval = agreement(judge, human, seed=trial, n_resamples=1000).kappa_interval
        covered += interval.low <= true_kappa <= interval.high
    assert 0.91 <= covered / trials <= 0.985, covered / trials


def test_one_case_gives_no_interval_and_a_seed_gives_one_interval():
    single = agreement([True], [False])
    assert single.n == 1 and single.raw == 0 and math.isnan(single.kappa_interval.low)
    judge, human = [True, False, True, True, False, False, True], [True, False, False, True, False, True, True]
    assert agreement(judge, human, seed=4) == agreement(judge, human, seed=4)
    with pytest.raises(ValueError, match="different numbers"):
        agreement([True], [True, False])
