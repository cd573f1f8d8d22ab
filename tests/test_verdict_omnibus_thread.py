"""A large matrix's Friedman test runs in a thread beside the paired tests: the verdict is the same."""

from __future__ import annotations

import threading

import numpy as np

from evalsite.analysis import background
from evalsite.analysis import verdict as verdict_module
from evalsite.analysis.verdict import verdict_of


def test_the_omnibus_tests_in_a_thread_give_the_verdict_of_the_tests_in_line(monkeypatch):
    rng = np.random.default_rng(5)
    values = rng.integers(0, 3, size=(400, 4)) / 2 + np.array([0.0, 0.05, 0.1, 0.3])
    labels = ["a", "b", "c", "d"]
    monkeypatch.setattr(background, "THREAD_CELLS", values.size + 1)
    in_line = verdict_of(values, labels, seed=3)
    threads = []
    original = verdict_module._omnibus_tests

    def noted(*args):
        threads.append(threading.current_thread().name)
        return original(*args)

    monkeypatch.setattr(background, "THREAD_CELLS", values.size)
    monkeypatch.setattr(verdict_module, "_omnibus_tests", noted)
    threaded = verdict_of(values, labels, seed=3)
    assert threads and threads[0].startswith("evalsite-friedman")
    assert threaded.friedman == in_line.friedman
    assert np.array_equal(threaded.nemenyi.p_values, in_line.nemenyi.p_values)
    assert threaded.headline == in_line.headline and threaded.omnibus == in_line.omnibus
    assert threaded.agreement == in_line.agreement and threaded.pairs == in_line.pairs
