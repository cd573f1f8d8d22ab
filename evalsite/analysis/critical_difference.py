"""Demšar's critical-difference picture of a verdict, or why it is not drawn.

The picture shows Friedman's mean ranks on an axis with Nemenyi's critical difference, and a
line under each run of arms whose mean ranks lie within it. It is the omnibus tests' picture,
not the verdict's order: the order and the groups come from the Holm-corrected paired tests
(:mod:`evalsite.analysis.verdict`). Nemenyi is a post-hoc test of a Friedman rejection, so the
picture exists only when Friedman rejects; otherwise :func:`critical_difference_picture` says why
there is none.
"""

from __future__ import annotations

from dataclasses import dataclass

from evalsite.analysis.verdict import Verdict
from evalsite.stats import tied_groups


@dataclass(frozen=True)
class CriticalDifferencePicture:
    """What the diagram draws: each arm's ``label`` and Friedman ``mean_ranks`` (matrix order),
    Nemenyi's ``critical_difference`` at ``alpha``, and ``groups``: the runs of arms (matrix
    indices) whose mean ranks span at most the critical difference."""

    labels: tuple[str, ...]
    mean_ranks: tuple[float, ...]
    critical_difference: float
    alpha: float
    groups: tuple[tuple[int, ...], ...]


@dataclass(frozen=True)
class CriticalDifference:
    """The picture when Friedman rejects (``picture``), else None and ``reason`` says why not."""

    picture: CriticalDifferencePicture | None
    reason: str


def critical_difference_picture(verdict: Verdict) -> CriticalDifference:
    """The critical-difference picture of ``verdict``, drawn only when Friedman rejects at its α."""
    friedman, post_hoc = verdict.friedman, verdict.nemenyi
    if friedman is None or post_hoc is None:
        return CriticalDifference(None, "one arm: no critical-difference diagram")
    if friedman.p_value >= verdict.alpha:
        return CriticalDifference(None, (
            f"No critical-difference diagram: Friedman's omnibus test does not reject at α = {verdict.alpha}, "
            "and Nemenyi's post-hoc comparison of mean ranks is read only after it does."))
    labels = {place.arm: place.label for place in verdict.arms}
    groups = tied_groups(friedman.mean_ranks, post_hoc.critical_difference).groups
    picture = CriticalDifferencePicture(
        tuple(labels[arm] for arm in range(len(labels))), tuple(friedman.mean_ranks), post_hoc.critical_difference,
        post_hoc.alpha, tuple(groups))
    return CriticalDifference(picture, "")
