"""The few distributions the statistics need, without ``scipy.stats`` (whose import costs more
than a whole analysis command on a small project: ~1 s and ~100 MB).

Each function is the ``scipy.special`` function that ``scipy.stats`` itself calls for the same
figure (``norm``, ``t``, ``chi2``, ``beta``, ``binom``), or, where ``scipy.stats`` has no cheap
path, a direct computation: the two-sided exact binomial test at p = 1/2 (what
``binomtest(k, n, 0.5)`` returns), average ranks (``rankdata``) and the studentized range at
infinite degrees of freedom (the Nemenyi test's distribution). tests/test_distributions.py
checks every one against ``scipy.stats`` over a grid of inputs.

Each function imports ``scipy.special`` where it calls it, not with this module: that import
(~0.1 s, most of it scipy's array-API layer copying numpy's namespace) is paid by a process that
computes a figure, never by one that only loads the statistics, as a rebuild served from the site's
cache does (docs/benchmarks.md, branch `startup6`). The functions are the same objects either way.
"""

from __future__ import annotations

import math

import numpy as np


def norm_cdf(x: float | np.ndarray) -> float | np.ndarray:
    """P(Z <= x) for a standard normal Z (``scipy.stats.norm.cdf``)."""
    from scipy import special

    cdf: float | np.ndarray = special.ndtr(x)
    return cdf


def norm_sf(x: float) -> float:
    """P(Z > x) (``scipy.stats.norm.sf``)."""
    from scipy import special

    return float(special.ndtr(-x))


def norm_ppf(p: float | np.ndarray) -> float | np.ndarray:
    """The standard normal quantile (``scipy.stats.norm.ppf``)."""
    from scipy import special

    quantile: float | np.ndarray = special.ndtri(p)
    return quantile


def t_ppf(p: float, df: float) -> float:
    """Student's t quantile (``scipy.stats.t.ppf``)."""
    from scipy import special

    return float(special.stdtrit(df, p))


def t_sf(x: float, df: float) -> float:
    """P(T > x) for Student's t (``scipy.stats.t.sf``)."""
    from scipy import special

    return float(special.stdtr(df, -x))


def chi2_sf(x: float, df: float) -> float:
    """P(X > x) for a chi-square X (``scipy.stats.chi2.sf``)."""
    from scipy import special

    return float(special.chdtrc(df, x))


def beta_ppf(p: float, a: float, b: float) -> float:
    """The Beta(a, b) quantile (``scipy.stats.beta.ppf``)."""
    from scipy import special

    return float(special.betaincinv(a, b, p))


def binom_sf(k: int, n: int, p: float) -> float:
    """P(X > k) for X ~ Binomial(n, p) (``scipy.stats.binom.sf``)."""
    from scipy import special

    if k < 0:
        return 1.0
    if k >= n:
        return 0.0
    return float(special.bdtrc(k, n, p))


def binom_sf_array(k: np.ndarray, n: int) -> np.ndarray:
    """P(X > k) for X ~ Binomial(n, 1/2), elementwise over integer ``k`` (1 below 0, 0 from n)."""
    from scipy import special

    inside = (k >= 0) & (k < n)
    return np.where(inside, special.bdtrc(np.clip(k, 0, max(0, n - 1)).astype(float), n, 0.5), np.where(k < 0, 1.0, 0.0))


def binomial_half_pmf(n: int) -> np.ndarray:
    """P(X = j) for j = 0..n, X ~ Binomial(n, 1/2) (``scipy.stats.binom.pmf``), by Loader's
    saddle-point expansion (Loader 2000, R's ``dbinom``): each term small, no cancellation of
    log-factorials, so the relative error stays near 1e-14 at any n."""
    if n < 2:
        return np.full(n + 1, 0.5**n)
    j = np.arange(1, n, dtype=float)
    mean = n / 2
    exponent = (_stirling_error(np.array([float(n)]))[0] - _stirling_error(j) - _stirling_error(n - j)
                - _deviance(j, mean) - _deviance(n - j, mean))
    inner = np.exp(exponent) * np.sqrt(n / (2 * math.pi * j * (n - j)))
    return np.concatenate([[0.5**n], inner, [0.5**n]])


_STIRLING = (1 / 12, 1 / 360, 1 / 1260, 1 / 1680, 1 / 1188)


def _stirling_error(x: np.ndarray) -> np.ndarray:
    """log(x!) - log(sqrt(2 pi x) (x / e)^x): the series above 15, log-gamma below (small there)."""
    from scipy import special

    small = x <= 15
    low = np.where(small, x, 16.0)
    direct = special.gammaln(low + 1) - (low + 0.5) * np.log(low) + low - 0.5 * math.log(2 * math.pi)
    big = np.where(small, 16.0, x)
    squared = big * big
    s0, s1, s2, s3, s4 = _STIRLING
    series = (s0 - (s1 - (s2 - (s3 - s4 / squared) / squared) / squared) / squared) / big
    return np.asarray(np.where(small, direct, series))


def _deviance(x: np.ndarray, mean: float) -> np.ndarray:
    """x log(x / mean) + mean - x, by its series where x is near the mean (no cancellation)."""
    near = np.abs(x - mean) < 0.1 * (x + mean)
    v = (x - mean) / (x + mean)
    total = (x - mean) * v
    term = 2 * x * v
    for power in range(1, 40):
        term = term * v * v
        total = total + term / (2 * power + 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        far = x * np.log(x / mean) + mean - x
    return np.asarray(np.where(near, total, far))


def binom_cdf(k: int, n: int, p: float) -> float:
    """P(X <= k) for X ~ Binomial(n, p) (``scipy.stats.binom.cdf``)."""
    from scipy import special

    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    return float(special.bdtr(k, n, p))


def binom_test_half(k: int, n: int) -> float:
    """The two-sided exact binomial test of k successes in n trials at p = 1/2
    (``scipy.stats.binomtest(k, n, 0.5).pvalue``): the distribution is symmetric, so the outcomes
    at most as likely as k are the two tails beyond min(k, n - k), each of the same mass."""
    if n < 1 or not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n and n >= 1, got k={k}, n={n}")
    if 2 * k == n:
        return 1.0
    return min(1.0, 2.0 * binom_cdf(min(k, n - k), n, 0.5))


def rankdata(values: np.ndarray, method: str = "average") -> np.ndarray:
    """Ranks along the last axis, 1 = smallest (``scipy.stats.rankdata(values, axis=-1)``): tied
    values share their ``average``, ``min`` or ``max`` rank. NaN is not expected (the callers'
    matrices are finite)."""
    array = np.asarray(values, dtype=float)
    order = np.argsort(array, axis=-1, kind="mergesort")
    ordered = np.take_along_axis(array, order, axis=-1)
    size = array.shape[-1]
    if size == 0:
        return np.zeros(array.shape)
    starts = np.concatenate([np.ones(array.shape[:-1] + (1,), dtype=bool), ordered[..., 1:] != ordered[..., :-1]],
                            axis=-1)
    positions = np.broadcast_to(np.arange(1, size + 1, dtype=float), array.shape)
    # first and last position of each element's group of ties, along the sorted axis
    first = np.maximum.accumulate(np.where(starts, positions, 0.0), axis=-1)
    ends = np.concatenate([starts[..., 1:], np.ones(array.shape[:-1] + (1,), dtype=bool)], axis=-1)
    last = np.flip(np.minimum.accumulate(np.flip(np.where(ends, positions, np.inf), axis=-1), axis=-1), axis=-1)
    sorted_ranks = {"average": (first + last) / 2, "min": first, "max": last}[method]
    ranks = np.empty(array.shape)
    np.put_along_axis(ranks, order, sorted_ranks, axis=-1)
    return ranks


#: The grid the studentized range's integral is summed on: z in [-_REACH, _REACH + q] in steps
#: of _STEP. The integrand is analytic and decays like a normal density, so the trapezoid rule
#: converges geometrically: at this step its error is far below double rounding.
_STEP, _REACH = 1 / 64, 9.0


def studentized_range_cdf(q: float, k: int) -> float:
    """P(Q <= q) for Q the range of k standard normals, divided by nothing (infinite degrees of
    freedom): k ∫ φ(z) [Φ(z) − Φ(z − q)]^(k−1) dz (Lund & Lund 1983, the form
    ``scipy.stats.studentized_range`` integrates at df = ∞)."""
    from scipy import special

    if q <= 0:
        return 0.0
    z = np.arange(-_REACH, _REACH + q + _STEP / 2, _STEP)
    density = np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)
    inside = special.ndtr(z) - special.ndtr(z - q)
    return min(1.0, float(k * _STEP * np.sum(density * inside ** (k - 1))))


def studentized_range_sf(q: float, k: int) -> float:
    """P(Q > q) at infinite degrees of freedom: k ∫ φ(z) (Φ(z)^(k−1) − [Φ(z) − Φ(z − q)]^(k−1)) dz,
    summed as such so a small tail keeps its digits (1 − cdf would not)."""
    from scipy import special

    if q <= 0:
        return 1.0
    z = np.arange(-_REACH, _REACH + q + _STEP / 2, _STEP)
    density = np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)
    below = special.ndtr(z)
    # Φ(z)^(k−1) − (Φ(z) − Φ(z − q))^(k−1) = Φ(z)^(k−1) (1 − (1 − Φ(z − q)/Φ(z))^(k−1))
    ratio = special.ndtr(z - q) / np.where(below > 0, below, 1.0)
    with np.errstate(divide="ignore"):  # ratio 1 (far below q): log1p(-1) = -inf, the difference Φ(z)^(k−1)
        difference = below ** (k - 1) * -np.expm1((k - 1) * np.log1p(-np.minimum(ratio, 1.0)))
    return max(0.0, min(1.0, float(k * _STEP * np.sum(density * difference))))


def studentized_range_ppf(p: float, k: int) -> float:
    """The q with P(Q <= q) = p at infinite degrees of freedom (bisection to double precision)."""
    if not 0 < p < 1:
        raise ValueError(f"p must lie strictly between 0 and 1, got {p}")
    low, high = 0.0, 1.0
    while studentized_range_cdf(high, k) < p:
        low, high = high, 2 * high
    for _ in range(200):
        middle = (low + high) / 2
        if middle in (low, high):
            break
        low, high = (middle, high) if studentized_range_cdf(middle, k) < p else (low, middle)
    return (low + high) / 2
