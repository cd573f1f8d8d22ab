"""Two arms on the same items: the paired sign-flip test, exact McNemar, and Holm's correction.

The sign-flip test is the "is B really better than A?" test of the product. Under the null
hypothesis that the two arms are exchangeable on every item, each per-item difference
d_i = a_i - b_i is as likely to carry either sign, so the observed total T = sum(d) is compared
with the 2^n totals obtained by flipping signs. Items whose difference is zero contribute
nothing under any sign, so only the m non-zero differences are enumerated: every pattern of
the zeros repeats each total 2^(n-m) times, which leaves the p-value unchanged.

Three engines compute the same p-value:

* grid distribution (exact, any m): when every difference is an integer multiple of a common
  unit (pass/fail scores, ordinal scores, means over a fixed number of repeats), the
  distribution of the sum is built over the integers size by size (the c differences of one
  size u add u × a Binomial(c, 1/2)). Cost: about m × (sum of the differences in units) at
  worst, which ``GRID_BUDGET`` bounds; far less when few sizes repeat. When every difference
  has the same size (pass/fail scores, one repeat) the sum is that size times a
  Binomial(m, 1/2), whose tail is summed directly (exactly up to m = 1,024, then from ~10√m saddle-point terms) at any m.
* meet-in-the-middle enumeration (exact, m <= ``exact_limit``): the differences are split in
  two halves, all 2^h subset sums of each half are listed, one half is sorted and the other
  half's sums are located in it with a binary search, so 2^m totals are counted in about
  2^(m/2) log 2^(m/2) steps.
* seeded Monte Carlo otherwise: ``n_resamples`` random sign patterns, p = (count + 1) /
  (n_resamples + 1), with its standard error. One random byte decides 8 signs; the kept
  differences are added by table lookup, or, on a grid of a power-of-two unit, by counting the
  kept bits of each distinct difference (the same sums, several times faster).

Totals are compared with a tolerance of ``RELATIVE_TOLERANCE`` × sum(|d|), so a total that
equals the observed one mathematically but differs in the last floating-point bits is counted.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from evalsite.stats._inputs import paired_per_item, per_item_values
from evalsite.stats.distributions import binom_sf, binom_sf_array, binom_test_half, binomial_pmf

Alternative = Literal["two-sided", "greater", "less"]

#: Largest number of non-zero, off-grid differences enumerated exactly: about 0.3 s and 100 MB
#: on a 2-core Xeon; 46 measured 0.6-1.1 s and 200 MB, each further 2 doubles both.
EXACT_LIMIT = 44
#: Refused above this: 50 differences already need about 1.5 GB and several seconds.
MAX_EXACT_LIMIT = 50
#: Largest m × (sum of |differences| in grid units) the exact grid distribution may cost: its
#: worst case (every size distinct), about 0.2 s; few repeated sizes cost far less.
GRID_BUDGET = 150_000_000
#: Largest denominator of the common unit recognised as a grid (e.g. 1/60 for 1..5 repeats).
MAX_GRID_DENOMINATOR = 10_000
#: Sums within this fraction of sum(|d|) of the observed total count as equal to it.
RELATIVE_TOLERANCE = 1e-12

_QUERY_CHUNK = 1 << 20
_MONTE_CARLO_CELLS = 1 << 22
_BITS_PER_BYTE = 8


@dataclass(frozen=True)
class SignFlipResult:
    """Outcome of :func:`sign_flip_test`.

    ``kind`` is ``'exact'`` or ``'monte-carlo'``; ``method`` names the engine that produced the
    p-value. ``std_error`` is the Monte Carlo standard error of ``p_value`` (0 when exact).
    """

    p_value: float
    kind: Literal["exact", "monte-carlo"]
    method: str
    alternative: Alternative
    n: int
    n_nonzero: int
    mean_diff: float
    std_error: float
    n_resamples: int
    seed: int


def sign_flip_test(
    a: ArrayLike,
    b: ArrayLike,
    *,
    seed: int = 0,
    n_resamples: int = 100_000,
    alternative: Alternative = "two-sided",
    exact_limit: int = EXACT_LIMIT,
) -> SignFlipResult:
    """Paired randomisation (sign-flip) test of mean(a - b) = 0 over items.

    ``a`` and ``b`` hold one value per item (1-D) or items × repeats (2-D, averaged over the
    finite repeats of each item first). ``alternative='greater'`` tests whether a scores
    higher than b. The test is exact when the differences lie on a grid within
    ``GRID_BUDGET`` or when at most ``exact_limit`` differences are non-zero; otherwise it
    is a Monte Carlo estimate seeded with ``seed``.
    """
    if alternative not in ("two-sided", "greater", "less"):
        raise ValueError(
            f"alternative must be 'two-sided', 'greater' or 'less', not {alternative!r}"
        )
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be at least 1, got {n_resamples}")
    if exact_limit > MAX_EXACT_LIMIT:
        raise ValueError(
            f"exact_limit {exact_limit} is above {MAX_EXACT_LIMIT}: enumeration time and memory "
            "double with every 2 differences; use more Monte Carlo resamples instead"
        )
    a_items, b_items = paired_per_item(a, b)
    if a_items.size == 0:
        raise ValueError("a and b hold no items")
    diffs = _differences(a_items, b_items)
    nonzero = diffs[diffs != 0]

    def result(
        p_value: float, kind: Literal["exact", "monte-carlo"], method: str, std_error: float = 0.0, draws: int = 0
    ) -> SignFlipResult:
        return SignFlipResult(
            p_value=float(p_value), kind=kind, method=method, alternative=alternative,
            n=int(diffs.size), n_nonzero=int(nonzero.size), mean_diff=float(diffs.mean()),
            std_error=float(std_error), n_resamples=draws, seed=seed,
        )

    if nonzero.size == 0:
        return result(1.0, "exact", "all differences zero")
    grid = _grid_integers(nonzero)
    if grid is not None and (_one_magnitude(grid) or grid.size * int(np.abs(grid).sum()) <= GRID_BUDGET):
        return result(_grid_p_value(grid, alternative), "exact", "grid distribution")
    by_size = None if grid is None else _binomials_p_value(grid, alternative)
    if by_size is not None:
        return result(by_size, "exact", "grid distribution as binomials by size")
    if nonzero.size <= exact_limit:
        p_value = _enumerated_p_value(nonzero, alternative)
        return result(p_value, "exact", "meet-in-the-middle enumeration")
    p_value = _monte_carlo_p_value(nonzero, alternative, n_resamples, np.random.default_rng(seed), grid)
    std_error = math.sqrt(p_value * (1.0 - p_value) / n_resamples)
    return result(p_value, "monte-carlo", "monte carlo", std_error, n_resamples)


def _differences(a_items: np.ndarray, b_items: np.ndarray) -> np.ndarray:
    """a - b per item, with differences that are rounding noise of the scores set to zero.

    Means of the same repeats summed in another order can differ in the last bit; such a
    difference is not evidence, and left in it would count as a win or a loss.
    """
    diffs = a_items - b_items
    rounding = RELATIVE_TOLERANCE * np.maximum(np.abs(a_items), np.abs(b_items))
    return np.where(np.abs(diffs) <= rounding, 0.0, diffs)


def _p_from_upper_tail(
    upper_tail: Callable[[float], float], observed: float, total: float, tolerance: float,
    alternative: Alternative,
) -> float:
    """P-value from P(S >= x), S the sum of the |d_i| given a positive sign.

    A sign pattern's total is T = 2S - total, and S is symmetric about total / 2, so every
    alternative reduces to one upper tail of S.
    """
    if alternative == "greater":
        return upper_tail((total + observed - tolerance) / 2)
    if alternative == "less":
        return upper_tail((total - observed - tolerance) / 2)
    extreme = abs(observed) - tolerance
    if extreme <= 0:
        return 1.0
    return min(1.0, 2.0 * upper_tail((total + extreme) / 2))


def _grid_integers(values: np.ndarray) -> np.ndarray | None:
    """Signed integers k with values == k × unit for one common unit, or None if there is none."""
    largest = float(np.max(np.abs(values)))
    if largest > GRID_BUDGET:  # the distribution alone would exceed the budget
        return None
    tolerance = RELATIVE_TOLERANCE * largest
    common_denominator = 1
    for magnitude in np.unique(np.abs(values)):
        fraction = Fraction(float(magnitude)).limit_denominator(MAX_GRID_DENOMINATOR)
        if abs(float(fraction) - magnitude) > tolerance:
            return None
        common_denominator = math.lcm(common_denominator, fraction.denominator)
        if common_denominator > MAX_GRID_DENOMINATOR or largest * common_denominator > GRID_BUDGET:
            return None
    integers: np.ndarray = np.rint(values * common_denominator)
    if np.any(np.abs(integers / common_denominator - values) > tolerance):
        return None
    return integers.astype(np.int64)


def _one_magnitude(integers: np.ndarray) -> bool:
    magnitudes = np.abs(integers)
    return bool(np.all(magnitudes == magnitudes[0]))


def _grid_p_value(integers: np.ndarray, alternative: Alternative) -> float:
    magnitudes = np.abs(integers)
    total = int(magnitudes.sum())
    if _one_magnitude(integers):  # S = unit × Binomial(m, 1/2): its tail summed directly, O(√m)
        unit, m = int(magnitudes[0]), int(magnitudes.size)

        def binomial_tail(threshold: float) -> float:
            start = max(0, math.ceil(threshold))
            return float(binom_sf(math.ceil(start / unit) - 1, m, 0.5)) if start <= total else 0.0

        return _p_from_upper_tail(binomial_tail, int(integers.sum()), total, 0, alternative)
    distribution = _subset_sum_distribution(magnitudes)
    tail_sums = np.cumsum(distribution[::-1])[::-1]

    def upper_tail(threshold: float) -> float:
        start = max(0, math.ceil(threshold))
        return float(tail_sums[start]) if start <= total else 0.0

    return _p_from_upper_tail(upper_tail, int(integers.sum()), total, 0, alternative)


def _subset_sum_distribution(magnitudes: np.ndarray) -> np.ndarray:
    """P(S = s) for s = 0..total, S the sum of a random half-probability subset of magnitudes.

    The c magnitudes of one size u add u × Binomial(c, 1/2) to S, so S is built size by size
    (:func:`_add_multiples` of :func:`_half_binomial`), not item by item: 10,000 items of
    sizes 1 and 2 cost ~4 milliseconds where the item-by-item sum cost ~23."""
    sizes, counts = np.unique(magnitudes, return_counts=True)
    distribution = np.ones(1)
    for size, count in zip(sizes.tolist(), counts.tolist()):
        distribution = _add_multiples(distribution, size, _half_binomial(count))
    return distribution


def _half_binomial(count: int) -> np.ndarray:
    """P(B = j) for j = 0..count, B ~ Binomial(count, 1/2), by doubling (B of 2k coins is the sum
    of two independent Bs of k): sums of positive terms only, so every probability keeps ~1e-15 of
    relative error however far in the tail (:func:`binomial_pmf`'s closed form: ~1e-13 there),
    for about count² / 3 multiply-adds."""
    if count == 0:
        return np.ones(1)
    half = _half_binomial(count // 2)
    both = np.convolve(half, half)
    return np.convolve(both, _COIN) if count % 2 else both


_COIN = np.array([0.5, 0.5])


def _add_multiples(distribution: np.ndarray, size: int, weights: np.ndarray) -> np.ndarray:
    """The distribution of S + size × J, where P(S = s) = distribution[s] and J, independent of S,
    has P(J = j) = weights[j]: one convolution per residue of s modulo ``size``, or one shifted add
    per j when there are fewer js than residues. A size of 0 (a difference that is rounding noise on
    the grid, e.g. a cluster's total of items that cancel) moves nothing."""
    if size == 0:
        return distribution
    result = np.zeros(distribution.size + size * (weights.size - 1))
    if size <= weights.size:
        for residue in range(min(size, distribution.size)):
            result[residue::size] = np.convolve(distribution[residue::size], weights)
    else:
        for j, weight in enumerate(weights.tolist()):
            result[j * size : j * size + distribution.size] += weight * distribution
    return result


def _binomials_p_value(integers: np.ndarray, alternative: Alternative) -> float | None:
    """The grid p-value when the differences take few sizes, or None when that costs more than
    ``GRID_BUDGET``.

    With c_k differences of size u_k, S = sum over sizes of u_k × Binomial(c_k, 1/2), the sizes
    independent. The distribution of every size but the most frequent one is built by
    convolution (each a Binomial(c_k, 1/2) spread over multiples of u_k), and the most frequent
    size's tail comes in closed form for each of its sums: P(S >= x) = sum_s P(R = s) ×
    P(u × B >= x - s). 100,000 pass/fail-or-half items (sizes 1 and 2 in half units) cost a few
    milliseconds where the item-by-item grid would cost 10^10 steps.
    """
    magnitudes = np.abs(integers)
    sizes, counts = np.unique(magnitudes[magnitudes != 0], return_counts=True)  # 0 units: noise, moves nothing
    by_count = np.argsort(counts, kind="stable")
    rest = np.ones(1)
    cost = 0
    for index in by_count[:-1].tolist():
        size, count = int(sizes[index]), int(counts[index])
        cost += rest.size * (size * count + 1)
        if cost > GRID_BUDGET:
            return None
        rest = _add_multiples(rest, size, binomial_pmf(count, 0.5))
    unit, trials = int(sizes[by_count[-1]]), int(counts[by_count[-1]])
    sums = np.flatnonzero(rest)
    weights = rest[sums]

    def upper_tail(threshold: float) -> float:
        start = max(0, math.ceil(threshold))
        needed = -((sums - start) // unit)  # B >= needed: ceil((start - s) / unit)
        return float(weights @ binom_sf_array(needed - 1, trials))

    return _p_from_upper_tail(upper_tail, int(integers.sum()), int(magnitudes.sum()), 0, alternative)


def _enumerated_p_value(nonzero: np.ndarray, alternative: Alternative) -> float:
    magnitudes = np.abs(nonzero)
    total = float(magnitudes.sum())
    patterns = float(2**magnitudes.size)

    def upper_tail(threshold: float) -> float:
        return _count_subset_sums_at_least(magnitudes, threshold) / patterns

    return _p_from_upper_tail(
        upper_tail, float(nonzero.sum()), total, RELATIVE_TOLERANCE * total, alternative
    )


def _count_subset_sums_at_least(magnitudes: np.ndarray, threshold: float) -> int:
    """Number of the 2^m subsets whose sum is >= threshold, by meet in the middle.

    The searched half is made four times larger than the query half: sorting is cheaper per
    element than a binary search, so this balance is the fastest measured (bench/stats.py).
    """
    split = max(0, magnitudes.size // 2 - 1)
    table = _all_subset_sums(magnitudes[split:])
    table.sort()
    queries = _all_subset_sums(magnitudes[:split])
    queries[::-1].sort()  # descending, so threshold - queries ascends and the search stays local
    count = 0
    for start in range(0, queries.size, _QUERY_CHUNK):
        chunk = queries[start : start + _QUERY_CHUNK]
        below = np.searchsorted(table, threshold - chunk, side="left")
        count += table.size * chunk.size - int(below.sum())
    return count


def _all_subset_sums(magnitudes: np.ndarray) -> np.ndarray:
    sums = np.empty(1 << magnitudes.size)
    sums[0] = 0.0
    filled = 1
    for magnitude in magnitudes:
        np.add(sums[:filled], magnitude, out=sums[filled : 2 * filled])
        filled *= 2
    return sums


def _monte_carlo_p_value(
    nonzero: np.ndarray, alternative: Alternative, n_resamples: int, rng: np.random.Generator,
    grid: np.ndarray | None = None,
) -> float:
    """(count + 1) / (n_resamples + 1) over random sign patterns, one random byte deciding 8
    signs. ``grid``: the differences as integers of a common unit (:func:`_grid_integers`), which
    lets :func:`_kept_sums_by_popcount` add the kept differences with the same result."""
    observed = float(nonzero.sum())
    tolerance = RELATIVE_TOLERANCE * float(np.abs(nonzero).sum())
    kept_sums_of = _kept_sums_by_popcount(nonzero, grid)
    if kept_sums_of is None:
        tables = _byte_sum_tables(nonzero)
        groups = np.arange(tables.shape[0])

        def kept_sums_of(kept_bits: np.ndarray) -> np.ndarray:
            sums: np.ndarray = tables[groups, kept_bits].sum(axis=1)
            return sums

    draw = _byte_draws(rng)
    width = -(-nonzero.size // _BITS_PER_BYTE)
    rows_per_chunk = max(1, _MONTE_CARLO_CELLS // width)
    count = 0
    for start in range(0, n_resamples, rows_per_chunk):
        rows = min(rows_per_chunk, n_resamples - start)
        kept_bits = draw(rows * width).reshape(rows, width)
        totals = 2.0 * kept_sums_of(kept_bits) - observed  # kept signs minus flipped signs
        if alternative == "greater":
            count += int(np.count_nonzero(totals >= observed - tolerance))
        elif alternative == "less":
            count += int(np.count_nonzero(totals <= observed + tolerance))
        else:
            count += int(np.count_nonzero(np.abs(totals) >= abs(observed) - tolerance))
    return (count + 1) / (n_resamples + 1)


def _byte_draws(rng: np.random.Generator) -> Callable[[int], np.ndarray]:
    """A function of n giving the n random bytes ``rng.integers(0, 256, size=n, dtype=np.uint8)``
    would: :func:`_raw_byte_draws` where it gives numpy's bytes (3-4x faster), else that call."""
    if _raw_bytes_are_numpys(type(rng.bit_generator)):
        return _raw_byte_draws(rng)
    return lambda n: rng.integers(0, 256, size=n, dtype=np.uint8)


def _raw_byte_draws(rng: np.random.Generator) -> Callable[[int], np.ndarray]:
    """The bytes straight from the bit generator's raw 64-bit draws, as numpy makes a call's
    bytes: from 32-bit words, low byte first, a word the low then the high half of a 64-bit draw,
    a half left over being the next call's first word."""
    bit_generator = rng.bit_generator
    state = bit_generator.state
    carry = [np.array([state["uinteger"]], dtype="<u4").view(np.uint8)] if state.get("has_uint32") else []

    def draw(n: int) -> np.ndarray:
        words = -(-n // 4)
        head = carry.pop() if carry and words else None
        words -= head is not None
        raw = bit_generator.random_raw(-(-words // 2)).astype("<u8", copy=False).view(np.uint8)
        if words % 2:
            carry.append(raw[-4:].copy())
            raw = raw[:-4]
        drawn: np.ndarray = (raw if head is None else np.concatenate([head, raw]))[:n]
        return drawn

    return draw


@functools.cache
def _raw_bytes_are_numpys(kind: type) -> bool:
    """Whether :func:`_raw_byte_draws` gives ``rng.integers``'s bytes for this bit generator (numpy's
    default, PCG64), checked once per process on calls of several lengths from a few seeds."""
    if kind is not np.random.PCG64:
        return False
    for seed in range(3):
        draw, numpys = _raw_byte_draws(np.random.default_rng(seed)), np.random.default_rng(seed)
        for n in (1, 5, 8, 3, 12, 7, 4, 29, 16, 4_099):
            if not np.array_equal(draw(n), numpys.integers(0, 256, size=n, dtype=np.uint8)):
                return False
    return True


#: The most distinct differences :func:`_kept_sums_by_popcount` counts apart (one pass each).
_POPCOUNT_VALUES = 8


def _kept_sums_by_popcount(nonzero: np.ndarray, grid: np.ndarray | None) -> Callable[[np.ndarray], np.ndarray] | None:
    """The kept sums of random bytes (each byte's bit j keeps difference 8g + j of its group g) as
    Σ over the distinct differences v of v × the number kept, counted 64 signs at a time with
    ``np.bitwise_count``: 5-10x faster than summing the byte tables, and the same floats. Only
    where that is exact: every difference an integer k times a power of two u (scores of 0, ½,
    ¼ or 1; sums below 2^53 u), so every partial sum of the tables is a float without rounding and
    k × u, summed in integers, is bit for bit the tables' sum. None otherwise (e.g. thirds)."""
    if grid is None or not hasattr(np, "bitwise_count"):
        return None
    unit = float(nonzero[0]) / float(grid[0])
    if unit <= 0 or math.frexp(unit)[0] != 0.5 or not np.array_equal(grid * unit, nonzero):
        return None
    values = np.unique(grid)
    if values.size > _POPCOUNT_VALUES or int(np.abs(grid).sum()) >= 1 << 53:
        return None
    width = -(-grid.size // _BITS_PER_BYTE)
    padded = np.zeros(width * _BITS_PER_BYTE, dtype=np.int64)
    padded[: grid.size] = grid
    words = width // _BITS_PER_BYTE  # whole 8-byte words of a row; the last width % 8 bytes one by one
    masks = []
    for value in values.tolist():
        mask = np.packbits((padded == value).reshape(width, _BITS_PER_BYTE), axis=1, bitorder="little").ravel()
        masks.append((value, mask[: words * _BITS_PER_BYTE].view(np.uint64), mask[words * _BITS_PER_BYTE :]))

    def kept_sums(kept_bits: np.ndarray) -> np.ndarray:
        whole = np.ascontiguousarray(kept_bits[:, : words * _BITS_PER_BYTE]).view(np.uint64)
        rest = kept_bits[:, words * _BITS_PER_BYTE :]
        sums = np.zeros(kept_bits.shape[0], dtype=np.int64)
        for value, word_mask, byte_mask in masks:
            kept = np.bitwise_count(whole & word_mask).sum(axis=1, dtype=np.int64)
            kept += np.bitwise_count(rest & byte_mask).sum(axis=1, dtype=np.int64)
            sums += value * kept
        result: np.ndarray = sums * unit
        return result

    return kept_sums


def _byte_sum_tables(nonzero: np.ndarray) -> np.ndarray:
    """For each run of 8 differences, the sum of those kept by each of the 256 byte values.

    One random byte then decides 8 signs, and a table lookup replaces 8 multiply-adds.
    """
    padding = -nonzero.size % _BITS_PER_BYTE
    groups = np.concatenate([nonzero, np.zeros(padding)]).reshape(-1, _BITS_PER_BYTE)
    bits = (np.arange(256)[:, None] >> np.arange(_BITS_PER_BYTE)) & 1
    return np.asarray(groups @ bits.T.astype(float))


@dataclass(frozen=True)
class McNemarResult:
    """Outcome of :func:`mcnemar_exact`: ``b`` items only a passed, ``c`` items only b passed."""

    p_value: float
    b: int
    c: int
    n_discordant: int
    n: int
    method: str = "exact two-sided binomial test on discordant pairs"


def mcnemar_exact(a_pass: ArrayLike, b_pass: ArrayLike) -> McNemarResult:
    """Exact McNemar test for two arms' pass/fail outcomes on the same items.

    2-D inputs (items × repeats) are reduced to one outcome per item first: an item passes
    when it passed in every recorded repeat (the one definition of an item passing, shared with
    ``compare``'s newly failing rows; see docs/reference/statistics.md).
    """
    a_items = _pass_per_item(a_pass, "a_pass")
    b_items = _pass_per_item(b_pass, "b_pass")
    if a_items.shape != b_items.shape:
        raise ValueError(
            f"a_pass and b_pass must hold the same items: {a_items.size} vs {b_items.size}"
        )
    only_a = int(np.count_nonzero(a_items & ~b_items))
    only_b = int(np.count_nonzero(~a_items & b_items))
    discordant = only_a + only_b
    p_value = 1.0 if discordant == 0 else binom_test_half(only_a, discordant)
    return McNemarResult(
        p_value=float(p_value), b=only_a, c=only_b, n_discordant=discordant, n=int(a_items.size)
    )


def _pass_per_item(outcomes: ArrayLike, name: str) -> np.ndarray:
    array = np.asarray(outcomes, dtype=float)
    recorded = array[np.isfinite(array)]
    if np.any((recorded != 0) & (recorded != 1)):
        raise ValueError(f"{name}: pass/fail outcomes must be booleans or 0/1")
    return np.asarray(per_item_values(array, name) == 1.0)  # the mean of 0/1 outcomes is 1 only when all passed


def holm(p_values: ArrayLike) -> list[float]:
    """Holm step-down adjusted p-values, in the order given, each capped at 1.

    The i-th smallest p is multiplied by (m - i + 1), and a running maximum keeps the adjusted
    values in the same order as the raw ones.
    """
    raw = np.asarray(p_values, dtype=float).ravel()
    if np.any(~np.isfinite(raw)) or np.any((raw < 0) | (raw > 1)):
        raise ValueError("p-values must be finite numbers between 0 and 1")
    order = np.argsort(raw, kind="stable")
    multipliers = raw.size - np.arange(raw.size)
    stepped = np.minimum(1.0, np.maximum.accumulate(raw[order] * multipliers))
    adjusted = np.empty_like(raw)
    adjusted[order] = stepped
    return [float(value) for value in adjusted]
