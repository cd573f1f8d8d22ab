"""The plain format's lane (plain_lane) either declines a row or prepares exactly what today's path
(plain._case, then CasePreparer.prepared) prepares, and leaves the preparer as that path leaves it."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalsite.execute.importers import plain, plain_lane
from evalsite.execute.importers.source_records import ImportOptions
from evalsite.execute.importers.writer import CasePreparer

COMMON = {"arm": "model-a", "id": "item-1", "input": "2 + 2?", "expected": "4", "output": "4", "score.exact": 1.0,
          "scores": {"length": {"score": 0.33, "detail": "1 char"}}, "latency_ms": 12.5}

#: numbers at and around every range the lane checks (0, a cost's 1e6, a count's 1e9, a latency's 30 days,
#: a score's 1e12, a float's exact integers, 64 bits), each as an int and a float, and their neighbours
_EDGES = [edge + step for edge in (0, 1, 10**6, 10**9, 2_592_000_000, 10**12, 2**53, 2**63, 2**64)
          for step in (-1, 0, 1)]
_numbers = st.sampled_from([*_EDGES, *(-edge for edge in _EDGES), *(float(edge) for edge in _EDGES),
                            *(-float(edge) for edge in _EDGES), -0.0, 0.5, -0.5, 12.5, 1e6 + 0.5, 1e13, 2**70,
                            math.inf, -math.inf, 1e-300])
_texts = st.one_of(st.sampled_from(["", "a", "model-a", "1", "1.5", "yes", " No ", "true", "0.0", "\ud800", "é"]),
                   st.text(max_size=3))
_scalars = st.one_of(_numbers, _numbers, st.none(), st.booleans(), _texts, st.integers(), st.floats(allow_nan=False))
_values = st.recursive(_scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                         st.dictionaries(_texts, inner, max_size=3)), max_leaves=4)
_counts = st.one_of(_numbers, _numbers, _scalars)  # a number field's: its edges above all
_score_objects = st.fixed_dictionaries({}, optional={"score": _counts, "passed": _scalars, "label": _scalars,
                                                     "detail": _scalars, "error": _scalars, "other": _scalars})
_scores = st.one_of(_counts, _score_objects)
_names = st.sampled_from(["exact", "length", "judge", "score"])
_fields = {
    "arm": st.one_of(st.sampled_from(["model-a", "model-b", None, 7, True, 1.5]), _texts),
    "id": st.one_of(st.sampled_from(["item-1", "item-2", None, 3]), _scalars),
    "item_id": st.one_of(st.sampled_from(["item-1", None]), _scalars),
    "input": st.one_of(st.sampled_from(["2 + 2?", None]), _values),
    "expected": _values, "output": _values,
    "repeat": st.one_of(st.integers(0, 3), _counts),
    "error": st.one_of(st.none(), _scalars, _values),
    "latency_ms": _counts, "cost_usd": _counts, "input_tokens": _counts, "output_tokens": _counts,
    "finish_reason": _scalars, "started_at": _scalars, "passed": _scalars,
    "score": _scores, "score.exact": _scores, "score.judge": _scores, "score.": _scores,
    "scores": st.one_of(st.dictionaries(_names, st.one_of(st.none(), _scores), max_size=3), _scalars),
    "extra": _values,
}
_shaped = st.lists(st.sampled_from(sorted(_fields)), unique=True, max_size=9).flatmap(
    lambda keys: st.permutations(keys)).flatmap(
    lambda keys: st.fixed_dictionaries({key: _fields[key] for key in keys}))
_one_field = st.sampled_from(sorted(_fields)).flatmap(lambda key: _fields[key].map(lambda value: {key: value}))
#: any shape, or a common row with one or two fields of any value (where a range or type slip shows)
_rows = st.one_of(_shaped, _one_field.map(lambda change: {**COMMON, **change}),
                  st.tuples(_one_field, _one_field).map(lambda changes: {**COMMON, **changes[0], **changes[1]}))


def _today(rows: plain._Rows, row: dict[str, Any]) -> list[Any] | None:
    """Today's path: the row prepared, or None when it raises (it raises the import's error)."""
    try:
        return rows.preparer.prepared(rows.case(row, "file: line 1"))
    except Exception:  # (an error, whatever it is, is today's path's to raise)
        return None


def _state(preparer: CasePreparer) -> tuple[object, ...]:
    return (preparer._evaluators, preparer._identities, preparer._not_binary, preparer._signatures)


def _check_same(sequence: list[dict[str, Any]]) -> int:
    """Each row of ``sequence`` through the lane (today's path when it declines) and through today's
    path alone, each side with its own preparer: the same prepared lists, exactly (``repr`` tells 1,
    1.0 and True and 0.0 and -0.0 apart), the lane declining every row today's path refuses, and the
    same preparer state after each row. How many rows the lane took."""
    lane, today = plain._Rows(ImportOptions(), "scored"), plain._Rows(ImportOptions(), "scored")
    taken = 0
    for row in sequence:
        expected = _today(today, row)
        got = lane.prepared(row)
        if expected is None:
            assert got is None, f"the lane took a row today's path refuses: {row!r}"
            _today(lane, row)
        else:
            taken += got is not None
            got = _today(lane, row) if got is None else [*got[:-1], got[-1].decode()]  # (the lane's body: bytes)
            assert repr(got) == repr(expected), row
        assert _state(lane.preparer) == _state(today.preparer), row
    return taken


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_rows, min_size=1, max_size=6))
def test_the_lane_declines_or_prepares_what_today_prepares(sequence: list[dict[str, Any]]):
    _check_same(sequence)


_HOSTILE = [None, True, False, "", "1.5", "yes", " No ", "\ud800", [1], {"a": 1}, {"score": 1}]
_SWEEP = [*_EDGES, *(-edge for edge in _EDGES), *(float(edge) for edge in _EDGES), -0.0, 0.5, -0.5, 1e13, math.inf,
          -math.inf, *_HOSTILE]


def test_every_field_at_every_edge():
    """Each field of a common row (and of its score objects) set to each edge number and hostile
    value in turn, one long sequence (the preparer's state carried along)."""
    changes = [{key: value} for key in sorted(_fields) for value in _SWEEP]
    changes += [{"scores": {"length": {"score": 0.5, part: value}}} for part in ("passed", "label", "detail", "error")
                for value in _SWEEP]
    changes += [{"scores": {"length": {"score": value}}} for value in _SWEEP]
    rows = [{**COMMON, **change} for change in changes]
    assert 0 < _check_same(rows + [{k: v for k, v in row.items() if k != "id"} for row in rows]) < 2 * len(rows)


def test_the_lane_takes_the_common_rows_and_their_variants():
    variants = [COMMON, {**COMMON, "arm": "model-b", "score.exact": 0.0}, {**COMMON, "id": 12, "repeat": 2},
                {k: v for k, v in COMMON.items() if k != "id"}, {**COMMON, "scores": {"judge": True}},
                {**COMMON, "score": {"score": False, "label": "bad"}, "passed": True, "input_tokens": 3,
                 "output_tokens": 0, "cost_usd": 1, "finish_reason": "stop", "started_at": "2024-01-01",
                 "error": "timeout", "extra": [1]},
                {**COMMON, "scores": {"length": 0.5}}, {**COMMON, "scores": {"length": 0.5}}]
    assert _check_same(variants) == len(variants)


@pytest.mark.parametrize("row", [{**COMMON, "latency_ms": 3e9}, {**COMMON, "score.exact": 1e13},
                                 {**COMMON, "input_tokens": 10**9 + 1}, {**COMMON, "repeat": -1}])
def test_a_planted_range_bug_is_caught(monkeypatch: pytest.MonkeyPatch, row: dict[str, Any]):
    """The check above fails when the lane takes a number out of its range (its ranges widened here)."""
    for name in ("_LATENCY", "_SCORE"):
        monkeypatch.setattr(plain_lane, name, (-math.inf, math.inf))
    monkeypatch.setattr(plain_lane, "_IN_TOKENS", math.inf)
    real_count = plain_lane._count
    monkeypatch.setattr(plain_lane, "_count", lambda value, high: value if type(value) is int else real_count(value, high))
    with pytest.raises(AssertionError, match="refuses"):
        _check_same([row])


def test_no_lane_with_arm_from():
    assert plain._Rows(ImportOptions(arm_from="meta.system"), "scored").prepared(COMMON) is None
