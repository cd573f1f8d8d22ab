"""The process's memo of bootstrap intervals, and that memo as data a caller may keep between processes.

``stats.bootstrap_ci`` keeps no state: the analyses hand it :data:`INTERVALS`, which remembers the
mean intervals computed (a pure function of the values and options; an arm's mean and pass rate
often coincide on pass/fail data). A long-lived caller such as the site build keeps them in its
cache folder and gives them back to the next process, so a leaderboard a new run joins bootstraps
only the arms and pairs whose items changed. The payload names the code that computed it: rows
kept by other code are never recalled. The caller owns the file; this module owns what goes in it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

from evalsite.stats.proportions import Interval

#: Bumped when the payload's shape changes.
PAYLOAD_VERSION = 1
#: A leaderboard of n arms asks for n + n(n-1)/2 intervals; an entry is a few floats.
MEMO_SIZE = 4096


class IntervalLru:
    """The :data:`MEMO_SIZE` most recently used intervals by ``stats.intervals.memo_key``; safe
    from several threads (the site build computes intervals in two)."""

    def __init__(self, size: int = MEMO_SIZE) -> None:
        self.size = size
        self._entries: OrderedDict[tuple[Any, ...], Interval] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[Any, ...]) -> Interval | None:
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                return self._entries[key]
        return None

    def put(self, key: tuple[Any, ...], value: Interval) -> None:
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            if len(self._entries) > self.size:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def rows(self) -> list[list[Any]]:
        """Every interval, oldest first, as a JSON-ready row: array digest, shape, dtype, options,
        then the interval."""
        with self._lock:
            items = list(self._entries.items())
        return [[key[0].hex(), list(key[1]), *key[2:], value.low, value.high, value.confidence, value.method]
                for key, value in items if isinstance(key[0], bytes)]

    def recall(self, rows: Iterable[list[Any]]) -> None:
        """Remember the rows :meth:`rows` gave (a malformed row raises ValueError/TypeError)."""
        for row in rows:
            digest, shape, dtype, *options, low, high, confidence, method = row
            self.put((bytes.fromhex(digest), tuple(shape), str(dtype), *options),
                     Interval(float(low), float(high), float(confidence), str(method)))


#: The memo every analysis hands to ``stats.bootstrap_ci`` and ``stats.paired_difference``.
INTERVALS = IntervalLru()


def kept_intervals(code: str) -> dict[str, Any]:
    """The memo as a JSON-ready payload, stamped with ``code`` (a hash of the code that computed it)."""
    return {"version": PAYLOAD_VERSION, "code": code, "rows": INTERVALS.rows()}


def recall_kept_intervals(payload: Any, code: str) -> bool:
    """Put a payload :func:`kept_intervals` gave back in the memo when it was made by this ``code``;
    False (and nothing recalled) for another code, another version or a malformed payload."""
    if not isinstance(payload, dict) or payload.get("version") != PAYLOAD_VERSION or payload.get("code") != code:
        return False
    try:
        INTERVALS.recall(payload["rows"])
    except (KeyError, TypeError, ValueError, AttributeError):
        return False
    return True
