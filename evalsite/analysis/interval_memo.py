"""The process's memo of bootstrap intervals and paired tests, and that memo as data a caller may keep between processes.

``stats.bootstrap_ci`` keeps no state: the analyses hand it :data:`INTERVALS`, which remembers the
mean intervals computed (a pure function of the values and options; an arm's mean and pass rate
often coincide on pass/fail data). :data:`PAIRS` remembers the verdict's paired tests the same way:
a pair's :class:`~evalsite.stats.pairs.PairedDifference` and its inverted intervals, by a digest of
the pair's two columns and the options (they are pure functions of those too). :data:`DRAWS`
remembers rank stability's resample means of each arm (``stats.stability_draws``' ``memo``: where
items are drawn one by one, an arm's means are a pure function of its column and the draws' options),
and :data:`SUMMARIES` the leaderboard's figures of each arm (``analysis.arms.summarise_arms``: a pure
function of the arm's cells and the options). A long-lived caller such as the site build keeps all
four in its cache folder and gives them back to the next process, so a leaderboard a new run joins
bootstraps, tests, resamples and summarises only the arms and pairs whose items changed. The payload names the code that computed it: rows kept by other code are
never recalled. The caller owns the file; this module owns what goes in it.
"""

from __future__ import annotations

import base64
import hashlib
import threading
import types
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, is_dataclass
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

from evalsite.stats.proportions import Interval

if TYPE_CHECKING:  # numpy and the tests load when a pair is first tested or recalled, not with this module
    import numpy as np

    from evalsite.stats.pairs import PairedDifference

V = TypeVar("V")

#: Bumped when the payload's shape changes.
PAYLOAD_VERSION = 4
#: A leaderboard of n arms asks for n + n(n-1)/2 intervals; an entry is a few floats.
MEMO_SIZE = 4096
#: An arm's resample means are 88 KB at the default 1,000 resamples and 10 sizes: the 48 most recent
#: arms (~5 MB of payload) cover a few leaderboards and the runs that replace their arms.
DRAWS_SIZE = 48
#: An arm's figures are a few dozen numbers (~0.6 KB of payload): the arms of a few leaderboards.
SUMMARIES_SIZE = 256


class Lru(Generic[V]):
    """The ``size`` most recently used values by key; safe from several threads (the site build
    computes intervals and tests in two)."""

    def __init__(self, size: int = MEMO_SIZE) -> None:
        self.size = size
        self._entries: OrderedDict[tuple[Any, ...], V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[Any, ...]) -> V | None:
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                return self._entries[key]
        return None

    def put(self, key: tuple[Any, ...], value: V) -> None:
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            if len(self._entries) > self.size:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def items(self) -> list[tuple[tuple[Any, ...], V]]:
        """Every entry, oldest first."""
        with self._lock:
            return list(self._entries.items())


class IntervalLru(Lru[Interval]):
    """The :data:`MEMO_SIZE` most recently used intervals by ``stats.intervals.memo_key``."""

    def rows(self) -> list[list[Any]]:
        """Every interval, oldest first, as a JSON-ready row: array digest, shape, dtype, options,
        then the interval."""
        return [[key[0].hex(), list(key[1]), *key[2:], value.low, value.high, value.confidence, value.method]
                for key, value in self.items() if isinstance(key[0], bytes)]

    def recall(self, rows: Iterable[list[Any]]) -> None:
        """Remember the rows :meth:`rows` gave (a malformed row raises ValueError/TypeError)."""
        for row in rows:
            digest, shape, dtype, *options, low, high, confidence, method = row
            self.put((bytes.fromhex(digest), tuple(shape), str(dtype), *options),
                     Interval(float(low), float(high), float(confidence), str(method)))


class PairMemo(Lru["PairedDifference | Interval"]):
    """The verdict's paired tests by a digest of the pair's two columns (items, in order) and the
    options: a pair's :func:`~evalsite.stats.pairs.paired_difference` and its
    :func:`~evalsite.stats.pairs.inverted_pair_interval` at a level. Only pairs without clusters
    are kept (a digest of arbitrary cluster labels is not worth its risk). The :data:`MEMO_SIZE`
    most recently used entries are kept."""

    def difference(self, pair: tuple[Any, ...], options: tuple[Any, ...],
                   compute: Callable[[], PairedDifference]) -> PairedDifference:
        """The difference of the :func:`pair_key` columns under ``options`` (the arguments besides the columns, but
        the MDE's level, which the caller brings up to date: :meth:`keep_difference`), else ``compute()``, kept."""
        found = self._recall(("difference", *pair, *options), compute)
        assert not isinstance(found, Interval)
        return found

    def keep_difference(self, pair: tuple[Any, ...], options: tuple[Any, ...], value: PairedDifference) -> None:
        """Keep ``value`` as the pair's difference under ``options`` (e.g. one brought to another MDE level)."""
        self.put(("difference", *pair, *options), value)

    def inverted(self, pair: tuple[Any, ...], options: tuple[Any, ...],
                 compute: Callable[[], Interval]) -> Interval:
        """The pair's inverted interval under ``options`` (level, decision, seed …), else ``compute()``, kept."""
        found = self._recall(("inverted", *pair, *options), compute)
        assert isinstance(found, Interval)
        return found

    def _recall(self, key: tuple[Any, ...], compute: Callable[[], PairedDifference | Interval]) -> PairedDifference | Interval:
        found = self.get(key)
        if found is None:
            found = compute()
            self.put(key, found)
        return found

    def rows(self) -> list[list[Any]]:
        """Every entry, oldest first, as a JSON-ready row: kind, digest, shape, dtype, options, then the value's fields."""
        return [[key[0], key[1].hex(), list(key[2]), *key[3:], asdict(value)] for key, value in self.items()]

    def recall(self, rows: Iterable[list[Any]]) -> None:
        """Remember the rows :meth:`rows` gave (a malformed row raises ValueError/TypeError/KeyError)."""
        from evalsite.stats.pairs import PairedDifference

        for row in rows:
            kind, digest, shape, dtype, *options, kept = row
            value: PairedDifference | Interval
            if kind == "difference":
                value = _revived(PairedDifference, kept)
            elif kind == "inverted":
                value = _revived(Interval, kept)
            else:
                raise ValueError(f"unknown kind of pair entry: {kind!r}")
            self.put((kind, bytes.fromhex(digest), tuple(shape), str(dtype), *options), value)


def column_key(column: np.ndarray) -> tuple[Any, ...]:
    """One column of items by ``stats.intervals.memo_key`` (as floats): digested once, however many pairs it is in."""
    import numpy as np

    from evalsite.stats.intervals import memo_key

    return memo_key(np.asarray(column, dtype=float))


def pair_key(a: tuple[Any, ...], b: tuple[Any, ...]) -> tuple[Any, ...]:
    """Two columns by their :func:`column_key`: a digest of the two digests, with the pair's shape (items × 2) and dtype."""
    return (hashlib.blake2b(a[0] + b[0], digest_size=16).digest(), (*a[1], 2), a[2])


class DrawsLru(Lru["np.ndarray"]):
    """Rank stability's resample means of one arm by ``stats.intervals.memo_key`` of its column and
    the draws' options (a tag, seed, resamples, sizes): resamples × (sizes + 1), float64, for items
    drawn one by one ("stability": the full size's means last), resamples × sizes for index draws
    tallied as counts ("tallied"): the :data:`DRAWS_SIZE` most recently used arms."""

    def __init__(self) -> None:
        super().__init__(DRAWS_SIZE)

    def rows(self) -> list[list[Any]]:
        """Every arm, oldest first, as a JSON-ready row: digest, shape, dtype, options, then the means' bytes (base64)."""
        return [[key[0].hex(), list(key[1]), key[2], key[3], key[4], key[5], list(key[6]),
                 base64.b64encode(value.tobytes()).decode("ascii")] for key, value in self.items()]

    def recall(self, rows: Iterable[list[Any]]) -> None:
        """Remember the rows :meth:`rows` gave (a malformed row, or means of another shape than its
        options give, raises ValueError/TypeError)."""
        import numpy as np

        for row in rows:
            digest, shape, dtype, tag, seed, resamples, sizes, means = row
            value = np.frombuffer(base64.b64decode(means, validate=True), dtype=np.float64)
            width = {"stability": len(sizes) + 1, "tallied": len(sizes)}.get(tag)
            if width is None or value.size != int(resamples) * width:
                raise ValueError("resample means of another shape than their options")
            self.put((bytes.fromhex(digest), tuple(shape), str(dtype), tag, int(seed), int(resamples),
                      tuple(int(size) for size in sizes)), value.reshape(int(resamples), width))


class SummaryMemo(Lru[dict[str, Any]]):
    """The leaderboard's figures of one arm — an :class:`~evalsite.analysis.arms.ArmSummary`'s fields
    but its ``arm`` (the run that stands for it, which the caller adds) — by :func:`cells_key` of the
    arm's cells and the options: the :data:`SUMMARIES_SIZE` most recently used arms."""

    def __init__(self) -> None:
        super().__init__(SUMMARIES_SIZE)

    def rows(self) -> list[list[Any]]:
        """Every arm, oldest first, as a JSON-ready row: digest, options, then the figures (dataclasses as their fields)."""
        return [[key[0].hex(), *key[1:], {name: asdict(value) if is_dataclass(value) and not isinstance(value, type) else value
                                          for name, value in figures.items()}] for key, figures in self.items()]

    def recall(self, rows: Iterable[list[Any]]) -> None:
        """Remember the rows :meth:`rows` gave (a malformed row raises ValueError/TypeError)."""
        from evalsite.analysis.arms import ArmSummary

        kinds = get_type_hints(ArmSummary)
        del kinds["arm"]
        for row in rows:
            digest, *options, figures = row
            if not isinstance(figures, dict) or set(figures) != set(kinds):
                raise TypeError("an arm's figures with other fields than ArmSummary's")
            self.put((bytes.fromhex(digest), *options), {name: _revived(kinds[name], value) for name, value in figures.items()})


def _revived(kind: Any, value: Any) -> Any:
    """``value`` (JSON) as the type ``kind`` says: a dataclass from its fields, a tuple from a list, a
    number or text of its own type, one of a ``Literal``'s values, None where ``kind`` allows it;
    anything else raises TypeError."""
    allowed = get_args(kind) if get_origin(kind) in (Union, types.UnionType) else (kind,)
    if value is None:
        if type(None) not in allowed:
            raise TypeError("a figure is missing")
        return None
    kind = next(option for option in allowed if option is not type(None))
    if isinstance(kind, type) and is_dataclass(kind):
        kinds = get_type_hints(kind)
        if not isinstance(value, dict) or set(value) != set(kinds):
            raise TypeError(f"{kind.__name__}: fields {sorted(value) if isinstance(value, dict) else value!r}")
        return kind(**{name: _revived(kinds[name], item) for name, item in value.items()})
    if get_origin(kind) is Literal:
        if value not in get_args(kind) or type(value) is not str:
            raise TypeError(f"{value!r} is not one of {get_args(kind)}")
        return value
    if get_origin(kind) is tuple and isinstance(value, (list, tuple)):  # a list from JSON, a tuple from rows() itself
        return tuple(_revived(get_args(kind)[0], item) for item in value)
    accepted = {float: (int, float), int: (int,), str: (str,), bool: (bool,)}.get(kind, ())
    if isinstance(value, accepted) and (kind is bool or not isinstance(value, bool)):  # a bool is no number here
        return kind(value)
    raise TypeError(f"{value!r} is not a {kind}")


def cells_key(cells: Sequence[np.ndarray], *options: Any) -> tuple[Any, ...]:
    """Some arrays by one digest of their shapes, dtypes and bytes (SHA-256, cut to 16 bytes: ~2.5x
    faster than BLAKE2b where the processor has SHA instructions), then the options."""
    import numpy as np

    digest = hashlib.sha256()
    for array in cells:
        contiguous = np.ascontiguousarray(array)
        digest.update(f"{contiguous.shape}{contiguous.dtype.str};".encode())
        digest.update(contiguous.data)
    return (digest.digest()[:16], *options)


#: The memo every analysis hands to ``stats.bootstrap_ci`` and ``stats.paired_difference``.
INTERVALS = IntervalLru()
#: The verdict's paired tests (:class:`PairMemo`).
PAIRS = PairMemo()
#: Rank stability's resample means per arm (:class:`DrawsLru`).
DRAWS = DrawsLru()
#: The leaderboard's figures per arm (:class:`SummaryMemo`).
SUMMARIES = SummaryMemo()


def kept_intervals(code: str) -> dict[str, Any]:
    """The memos as a JSON-ready payload, stamped with ``code`` (a hash of the code that computed them)."""
    return {"version": PAYLOAD_VERSION, "code": code, "rows": INTERVALS.rows(), "pairs": PAIRS.rows(),
            "draws": DRAWS.rows(), "summaries": SUMMARIES.rows()}


def recall_kept_intervals(payload: Any, code: str) -> bool:
    """Put a payload :func:`kept_intervals` gave back in the memos when it was made by this ``code``;
    False (and nothing recalled) for another code, another version or a malformed payload."""
    if not isinstance(payload, dict) or payload.get("version") != PAYLOAD_VERSION or payload.get("code") != code:
        return False
    try:
        INTERVALS.recall(payload["rows"])
        PAIRS.recall(payload["pairs"])
        DRAWS.recall(payload["draws"])
        SUMMARIES.recall(payload["summaries"])
    except (KeyError, TypeError, ValueError, AttributeError):
        return False
    return True
