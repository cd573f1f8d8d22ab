"""The few distributions the statistics need, without ``scipy.stats`` (whose import costs more
than a whole analysis command on a small project: ~1 s and ~100 MB).

What ``evalsite leaderboard`` computes needs no scipy at all, so a leaderboard never imports it
(``scipy.special`` alone is ~0.19 s of a 0.7 s command on the example project, most of it scipy's
array-API layer copying numpy's namespace: docs/benchmarks.md, branch ``startup8``):

- the normal CDF and quantile from the standard library: scipy's ``ndtr`` formula over the C
  library's ``erf``/``erfc``, and ``statistics.NormalDist.inv_cdf`` (Wichura's AS241);
- the chi-square tail at integer degrees of freedom in closed form, Student's t quantile at
  integer degrees of freedom from its finite series, or above 10,000 its expansion in 1/df
  (Abramowitz & Stegun 26.4.4-5, 26.7.3-5);
- binomial probabilities by Loader's saddle-point expansion (Loader 2000, R's ``dbinom``), their
  tails summed (an array of a sign test's tails from the top, in extended precision), and the
  Clopper-Pearson decision of a Monte Carlo p-value as binomial tails;
- the two-sided exact binomial test at p = 1/2 (what ``binomtest(k, n, 0.5)`` returns), average
  ranks (``rankdata``) and the studentized range at infinite degrees of freedom (the Nemenyi
  test's distribution).

These agree with scipy to 3e-13 relative or better over tests/test_distributions.py's grids (the
t quantile: 2e-13 at a power analysis's levels, 0.9-0.999; 1e-10 out at p = 1e-6), not always
to the last bit. The rest (Student's t tail at any degrees of freedom, which only the repeats'
noise test needs) is the ``scipy.special`` function ``scipy.stats`` itself calls for the same
figure, imported where it is called, so only a process that computes that figure pays for the import. tests/test_distributions.py checks every
function against ``scipy.stats`` over a grid of inputs.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import cache
from itertools import accumulate
from statistics import NormalDist

import numpy as np

_SQRT_HALF = math.sqrt(0.5)
_STANDARD_NORMAL = NormalDist()


def _ndtr(x: float) -> float:
    """P(Z <= x): scipy's ``ndtr`` formula (erf near 0, erfc in the tails, so a tail keeps its digits)."""
    scaled = x * _SQRT_HALF
    if abs(scaled) < _SQRT_HALF:
        return 0.5 + 0.5 * math.erf(scaled)
    tail = 0.5 * math.erfc(abs(scaled))
    return 1.0 - tail if scaled > 0 else tail


def _ndtri(p: float) -> float:
    """The standard normal quantile, -inf at 0 and inf at 1 (scipy's ``ndtri``), NaN outside [0, 1]."""
    if 0 < p < 1:
        return _STANDARD_NORMAL.inv_cdf(p)
    return -math.inf if p == 0 else math.inf if p == 1 else math.nan


def _ndtr_array(x: np.ndarray) -> np.ndarray:
    """:func:`_ndtr` elementwise, the same operations in the same order (the C library's erf and
    erfc mapped over the values: a few times faster than calling :func:`_ndtr` on each)."""
    scaled = np.asarray(x, dtype=float).ravel() * _SQRT_HALF
    central = np.abs(scaled) < _SQRT_HALF
    cdf = np.empty(scaled.size)
    cdf[central] = 0.5 + 0.5 * np.array(list(map(math.erf, scaled[central].tolist())))
    tail = 0.5 * np.array(list(map(math.erfc, np.abs(scaled[~central]).tolist())))
    cdf[~central] = np.where(scaled[~central] > 0, 1.0 - tail, tail)
    return cdf.reshape(np.shape(x))


_NDTRI = np.frompyfunc(_ndtri, 1, 1)


def norm_cdf(x: float | np.ndarray) -> float | np.ndarray:
    """P(Z <= x) for a standard normal Z (``scipy.stats.norm.cdf``), elementwise over an array."""
    if isinstance(x, np.ndarray):
        return _ndtr_array(x)
    return _ndtr(float(x))


def norm_sf(x: float) -> float:
    """P(Z > x) (``scipy.stats.norm.sf``)."""
    return _ndtr(-x)


def norm_ppf(p: float | np.ndarray) -> float | np.ndarray:
    """The standard normal quantile (``scipy.stats.norm.ppf``), elementwise over an array."""
    if isinstance(p, np.ndarray):
        return np.asarray(_NDTRI(p), dtype=float)
    return _ndtri(float(p))


#: Above this many degrees of freedom the t quantile comes from its expansion in 1/df
#: (:func:`_t_expansion`: within ~1e-14 of scipy's there), not from the series of df/2 terms.
EXPANSION_DF = 10_000


@cache
def t_ppf(p: float, df: int) -> float:
    """Student's t quantile at integer ``df`` (``scipy.stats.t.ppf``): bisection to double
    precision on :func:`_t_central`, its central probability P(|T| <= t), or the expansion above
    :data:`EXPANSION_DF`. Cached: a power analysis asks for the same critical value at every step
    of its search."""
    _whole_degrees(df)
    if not 0 < p < 1:
        return -math.inf if p == 0 else math.inf if p == 1 else math.nan
    if p == 0.5:
        return 0.0
    if df > EXPANSION_DF:
        return _t_expansion(p, df)
    central = abs(2 * p - 1)
    low, high = 0.0, 1.0
    while _t_central(high, df) < central:
        low, high = high, 2 * high
    while low < (middle := (low + high) / 2) < high:
        low, high = (middle, high) if _t_central(middle, df) < central else (low, middle)
    return math.copysign(high, p - 0.5)


def _whole_degrees(df: int) -> None:
    """Refuse degrees of freedom the finite series do not cover (a fraction, or below 1): they
    would give a wrong figure, not an error."""
    if df < 1 or df != int(df):
        raise ValueError(f"degrees of freedom must be a whole number of at least 1, got {df}")


def _t_expansion(p: float, df: int) -> float:
    """The t quantile's Cornish-Fisher expansion about the normal quantile x, to 1/df^4
    (Abramowitz & Stegun 26.7.5)."""
    x = _ndtri(p)
    g1 = (x**3 + x) / 4
    g2 = (5 * x**5 + 16 * x**3 + 3 * x) / 96
    g3 = (3 * x**7 + 19 * x**5 + 17 * x**3 - 15 * x) / 384
    g4 = (79 * x**9 + 776 * x**7 + 1482 * x**5 - 1920 * x**3 - 945 * x) / 92160
    return x + (g1 + (g2 + (g3 + g4 / df) / df) / df) / df


def _t_central(t: float, df: int) -> float:
    """P(|T| <= t), t >= 0, for Student's T with integer ``df``, by its finite series in
    θ = atan(t / √df) (Abramowitz & Stegun 26.7.3-4): sin θ Σ c_k cos^2k θ (even df) or
    (2/π)(θ + sin θ cos θ Σ c_k cos^2k θ) (odd df). Every term is positive; cos^2k θ is taken as
    exp(-k log1p(t²/df)), so its rounding does not compound with k."""
    if df % 2 and df > 1:
        k = np.arange(1, (df - 1) // 2, dtype=float)
        coefficients = np.cumprod(np.concatenate([[1.0], 2 * k / (2 * k + 1)]))
    elif df % 2 == 0:
        k = np.arange(1, df // 2, dtype=float)
        coefficients = np.cumprod(np.concatenate([[1.0], (2 * k - 1) / (2 * k)]))
    else:
        coefficients = np.zeros(0)
    powers = np.exp(-np.arange(coefficients.size) * math.log1p(t * t / df))
    series = float(coefficients @ powers)
    sine, cosine = t / math.sqrt(df + t * t), math.sqrt(df) / math.sqrt(df + t * t)
    if df % 2 == 0:
        return sine * series
    return 2 / math.pi * (math.atan(t / math.sqrt(df)) + sine * cosine * series)


def t_sf(x: float, df: float) -> float:
    """P(T > x) for Student's t (``scipy.stats.t.sf``), any degrees of freedom."""
    from scipy import special

    return float(special.stdtr(df, -x))


def chi2_sf(x: float, df: int) -> float:
    """P(X > x) for a chi-square X with integer ``df`` (``scipy.stats.chi2.sf``): with y = x / 2
    and m = df // 2, the sum of e^-y y^a / Γ(a + 1) over a = 0..m-1 (even df) or a = 1/2..m-1/2
    plus erfc(√y) (odd df) (Abramowitz & Stegun 26.4.4-5): positive terms, each from its logarithm."""
    _whole_degrees(df)
    if x <= 0:
        return 1.0
    half = x / 2
    shift = 0.5 if df % 2 else 0.0
    terms = [math.exp(a * math.log(half) - half - math.lgamma(a + 1)) for a in (i + shift for i in range(df // 2))]
    if df % 2:
        terms.append(math.erfc(math.sqrt(half)))
    return min(1.0, math.fsum(terms))


def binom_sf(k: int, n: int, p: float) -> float:
    """P(X > k) for X ~ Binomial(n, p) (``scipy.stats.binom.sf``): exact at p = 1/2 up to
    :data:`EXACT_HALF_TRIALS` trials, otherwise :func:`binomial_pmf` summed over the terms that
    count (:func:`_tail_terms`), or 1 - P(X <= k) when the tail holds the mean."""
    if k < 0:
        return 1.0
    if k >= n:
        return 0.0
    if p == 0.5 and n <= EXACT_HALF_TRIALS:
        return _exact_half_tail(k + 1, n)
    if k + 1 <= n * p:
        return 1.0 - binom_cdf(k, n, p)
    return float(np.sum(binomial_pmf(n, p, _tail_terms(k + 1, min(n, k + _reach(n, p))))))


def binom_cdf(k: int, n: int, p: float) -> float:
    """P(X <= k) for X ~ Binomial(n, p) (``scipy.stats.binom.cdf``), as :func:`binom_sf` sums it."""
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    if p == 0.5 and n <= EXACT_HALF_TRIALS:
        return _exact_half_tail(n - k, n)  # P(X <= k) = P(X >= n - k) at p = 1/2
    if k >= n * p:
        return 1.0 - binom_sf(k, n, p)
    return float(np.sum(binomial_pmf(n, p, _tail_terms(max(0, k - _reach(n, p)), k))))


#: Up to this many trials, a binomial tail at p = 1/2 (a sign test's) is summed in integers and
#: rounded once: the correctly rounded probability (~0.3 ms at the limit).
EXACT_HALF_TRIALS = 1024


def _exact_half_tail(first: int, n: int) -> float:
    """P(X >= first) for X ~ Binomial(n, 1/2): the sum of C(n, j) over j >= first, over 2^n."""
    return sum(_coefficients_from(first, n)) / (1 << n)


def _coefficients_from(low: int, n: int) -> list[int]:
    """C(n, j) for j = low..n, each from the one before."""
    term, coefficients = math.comb(n, low), []
    for j in range(low, n + 1):
        coefficients.append(term)
        term = term * (n - j) // (j + 1)
    return coefficients


def _reach(n: int, p: float) -> int:
    """How far past its first term a tail's terms still count: 20 standard deviations and 20 more
    (the pmf is log-concave, so the terms beyond are below 1e-17 of the first)."""
    return int(20 * math.sqrt(n * p * (1 - p))) + 20


def _tail_terms(first: int, last: int) -> np.ndarray:
    return np.arange(first, last + 1, dtype=float)


def binom_sf_array(k: np.ndarray, n: int) -> np.ndarray:
    """P(X > k) for X ~ Binomial(n, 1/2), elementwise over integer ``k`` (1 below 0, 0 from n):
    the upper tails from the smallest ``k`` up, each summed from the top of the terms that count
    (:func:`_half_upper_tails`)."""
    first = np.clip(np.asarray(k, dtype=np.int64) + 1, 0, n + 1)  # P(X >= first)
    inside = (first > 0) & (first <= n)
    tails = np.where(first <= 0, 1.0, 0.0)
    if inside.any():
        low = int(first[inside].min())
        high = n if n <= EXACT_HALF_TRIALS else min(n, int(first[inside].max()) + _reach(n, 0.5))
        tails[inside] = _half_upper_tails(n, low, high)[first[inside] - low]
    return tails


def _half_upper_tails(n: int, low: int, high: int) -> np.ndarray:
    """P(X >= j) for X ~ Binomial(n, 1/2) and j = low..high, summing the terms from ``high`` down
    (the ones past it are below 1e-17 of the last: :func:`_reach`). Up to :data:`EXACT_HALF_TRIALS`
    trials (``high`` = n) the sums of C(n, j) in integers, each rounded once; above, the
    :func:`binomial_pmf` terms in extended precision, smallest first, so a small tail keeps the
    terms' relative accuracy (~1e-14)."""
    if n <= EXACT_HALF_TRIALS:
        return np.array([total / (1 << n) for total in accumulate(reversed(_coefficients_from(low, n)))][::-1])
    terms = binomial_pmf(n, 0.5, np.arange(low, high + 1, dtype=float))
    return np.minimum(np.cumsum(terms[::-1].astype(np.longdouble))[::-1], 1).astype(float)


def binomial_pmf(n: int, p: float, j: np.ndarray | None = None) -> np.ndarray:
    """P(X = j) for X ~ Binomial(n, p) (``scipy.stats.binom.pmf``), at the integers ``j`` in 0..n
    (default: all of them), by Loader's saddle-point expansion (Loader 2000, R's ``dbinom``): each
    term small, no cancellation of log-factorials, so the relative error stays near 1e-14 at any n."""
    j = np.arange(n + 1, dtype=float) if j is None else j
    q = 1 - p
    if p in (0.0, 1.0):
        return np.asarray(j == (n if p else 0), dtype=float)
    if n < 2:
        return np.asarray(np.where(j == 0, q**n, p**n))
    inner = np.clip(j, 1, n - 1)
    exponent = (_stirling_error(np.array([float(n)]))[0] - _stirling_error(inner) - _stirling_error(n - inner)
                - _deviance(inner, n * p) - _deviance(n - inner, n * q))
    terms = np.exp(exponent) * np.sqrt(n / (2 * math.pi * inner * (n - inner)))
    return np.asarray(np.where(j == 0, q**n, np.where(j == n, p**n, terms)))


_STIRLING = (1 / 12, 1 / 360, 1 / 1260, 1 / 1680, 1 / 1188)
#: log(x!) for the integers x = 0..15 (each factorial exact in a double).
_LOG_FACTORIALS = np.log(np.array([math.factorial(x) for x in range(16)], dtype=float))


def _stirling_error(x: np.ndarray) -> np.ndarray:
    """log(x!) - log(sqrt(2 pi x) (x / e)^x) for integer x: the series above 15, exact factorials below."""
    small = x <= 15
    low = np.where(small, x, 16.0)
    direct = _LOG_FACTORIALS[(low % 16).astype(np.int64)] - (low + 0.5) * np.log(low) + low - 0.5 * math.log(2 * math.pi)
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
    if q <= 0:
        return 0.0
    z = np.arange(-_REACH, _REACH + q + _STEP / 2, _STEP)
    density = np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)
    inside = norm_cdf(z) - norm_cdf(z - q)
    return min(1.0, float(k * _STEP * np.sum(density * inside ** (k - 1))))


def studentized_range_sf(q: float, k: int) -> float:
    """P(Q > q) at infinite degrees of freedom: k ∫ φ(z) (Φ(z)^(k−1) − [Φ(z) − Φ(z − q)]^(k−1)) dz,
    summed as such so a small tail keeps its digits (1 − cdf would not)."""
    if q <= 0:
        return 1.0
    z = np.arange(-_REACH, _REACH + q + _STEP / 2, _STEP)
    density = np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)
    below = np.asarray(norm_cdf(z))
    # Φ(z)^(k−1) − (Φ(z) − Φ(z − q))^(k−1) = Φ(z)^(k−1) (1 − (1 − Φ(z − q)/Φ(z))^(k−1))
    ratio = norm_cdf(z - q) / np.where(below > 0, below, 1.0)
    with np.errstate(divide="ignore"):  # ratio 1 (far below q): log1p(-1) = -inf, the difference Φ(z)^(k−1)
        difference = below ** (k - 1) * -np.expm1((k - 1) * np.log1p(-np.minimum(ratio, 1.0)))
    return max(0.0, min(1.0, float(k * _STEP * np.sum(density * difference))))


def studentized_range_ppf(p: float, k: int) -> float:
    """The q with P(Q <= q) = p at infinite degrees of freedom: the root bracketed, narrowed by
    regula falsi (Illinois) to ~1e-14, then bisected to adjacent doubles, as a bisection from the
    start would end (in ~15 evaluations of the CDF instead of ~55)."""
    if not 0 < p < 1:
        raise ValueError(f"p must lie strictly between 0 and 1, got {p}")
    low, high = 0.0, 1.0
    while (above := studentized_range_cdf(high, k) - p) < 0:
        low, high = high, 2 * high
    low, high = _illinois(lambda q: studentized_range_cdf(q, k) - p, low, high, studentized_range_cdf(low, k) - p, above)
    while low < (middle := (low + high) / 2) < high:
        low, high = (middle, high) if studentized_range_cdf(middle, k) < p else (low, middle)
    return (low + high) / 2


def _illinois(f: Callable[[float], float], low: float, high: float, below: float, above: float) -> tuple[float, float]:
    """A bracket [low, high] of f's increasing root (f(low) = below < 0 <= above = f(high)) narrowed
    to ~1e-14 of high by the Illinois variant of regula falsi (a stale end's value is halved)."""
    stale = 0
    for _ in range(40):
        middle = (low * above - high * below) / (above - below)
        if high - low <= 1e-14 * high or not low < middle < high:
            break
        value = f(middle)
        if value < 0:
            low, below, stale = middle, value, stale - 1 if stale < 0 else -1
        else:
            high, above, stale = middle, value, stale + 1 if stale > 0 else 1
        if stale <= -2:
            above /= 2
        elif stale >= 2:
            below /= 2
    return low, high
