"""Does the order of arms found on pilot items hold on fresh holdout items?"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from evalsite.stats._inputs import arm_matrix
from evalsite.stats.ranking import RELATIVE_TOLERANCE
from evalsite.stats.stability import order_best_first, reproduces_order, reproduces_top


@dataclass(frozen=True)
class HoldoutCheck:
    """Outcome of :func:`holdout_check`: does the pilot's order of arms hold on fresh items?"""

    pilot_order: tuple[int, ...]
    holdout_order: tuple[int, ...]
    order_holds: bool
    top_holds: bool
    kendall_tau: float
    kendall_p_value: float
    pilot_means: tuple[float, ...]
    holdout_means: tuple[float, ...]
    kendall_min_p: float
    method: str = "order of arm means; Kendall tau-b between pilot and holdout means"

    def kendall_can_reach(self, alpha: float) -> bool:
        """Whether any agreement of k arms could give p <= alpha: the exact two-sided p of a
        perfect agreement is 2 / k!, so with 4 arms or fewer no holdout can reach 0.05."""
        return self.kendall_min_p <= alpha


def holdout_check(pilot_matrix: ArrayLike, holdout_matrix: ArrayLike) -> HoldoutCheck:
    """Compare the order of arms (by mean) on a pilot set with the order on a holdout set.

    Both matrices are items × arms with the same arms in the same columns; the items differ.
    ``order_holds`` requires every pair of arms to keep its relation (ties included);
    ``top_holds`` requires the same best arm(s). Kendall's tau-b measures partial agreement
    (NaN when either set ties all arms).
    """
    pilot = arm_matrix(pilot_matrix, "pilot_matrix")
    holdout = arm_matrix(holdout_matrix, "holdout_matrix")
    if pilot.shape[1] != holdout.shape[1]:
        raise ValueError(
            "pilot and holdout must hold the same arms: "
            f"{pilot.shape[1]} vs {holdout.shape[1]} columns"
        )
    pilot_means, holdout_means = pilot.mean(axis=0), holdout.mean(axis=0)
    largest = max(1.0, float(np.max(np.abs(pilot))), float(np.max(np.abs(holdout))))
    tolerance = RELATIVE_TOLERANCE * largest
    pilot_order = order_best_first(pilot_means)
    pilot_top = tuple(int(a) for a in np.flatnonzero(pilot_means >= pilot_means.max() - tolerance))
    tau, p_value = _kendall_tau(pilot_means, holdout_means)
    return HoldoutCheck(
        pilot_order=tuple(int(a) for a in pilot_order),
        holdout_order=tuple(int(a) for a in order_best_first(holdout_means)),
        order_holds=bool(reproduces_order(holdout_means, pilot_means, pilot_order, tolerance)),
        top_holds=bool(reproduces_top(holdout_means, pilot_top, tolerance)),
        kendall_tau=tau, kendall_p_value=p_value,
        pilot_means=tuple(pilot_means.tolist()), holdout_means=tuple(holdout_means.tolist()),
        kendall_min_p=min(1.0, 2.0 / math.factorial(pilot.shape[1])),
    )


def _kendall_tau(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return math.nan, math.nan
    from scipy import stats as scipy_stats  # here: only the holdout check needs Kendall's tau

    result = scipy_stats.kendalltau(x, y)
    return float(result.statistic), float(result.pvalue)
