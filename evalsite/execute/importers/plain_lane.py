"""Plain JSON Lines rows of the common shape, prepared for the writer in one pass.

Today's path for a row (:func:`evalsite.execute.importers.plain._case`, then
:meth:`~evalsite.execute.importers.writer.CasePreparer.prepared`) makes a
:class:`~evalsite.execute.importers.source_records.SourceCase`, each field through its converter,
checks it as a run may record it and then takes it apart again into what
:meth:`~evalsite.execute.importers.writer.SourceImport.add_prepared` takes. The lane makes that same
list straight from the decoded row when every value the row holds is one it clearly accepts: an
arm or id as text or an integer, text fields as text, a number in its field's range (an integer
where the field counts), a verdict as a boolean, a score as a number, a boolean or an object of
such parts, null anywhere. Anything else (text numbers, ``yes``/``no``, a float where a count
goes, NaN, a number out of range, another type) declines the row, and today's path maps it: the
same errors, with the same lines, and the same case for what it accepts.

The row's keys are judged once per key list (:class:`~evalsite.execute.importers.plain._Rows`
keeps them): every key of the format is one the lane reads, the ``score.<name>`` columns are
listed with their evaluators' names, and the fields the format ignores are not looked at. The
lane is not used with ``--arm-from`` (the arm then comes from a path in the row).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evalsite.execute.importers.source_records import identity_row
from evalsite.execute.importers.writer import CasePreparer, assembled, content_key, spooled_body
from evalsite.jsonshape import JSONObject
from evalsite.runlog.records import CASE_RANGES, SCORE_RANGES

ARM_FIELD = "arm"
SCORE_FIELD = "score"
SCORE_PREFIX = "score."
SCORES_FIELD = "scores"
SCORE_KIND = "plain:score"
#: the largest repeat taken as it is: every whole number up to this is exactly a float, so the
#: format's own reading (through a float) gives it back unchanged
EXACT_INTEGERS = 2**53
_TEXT = (str, type(None))
_FLAG = (bool, type(None))
_LATENCY, _COST, _SCORE = CASE_RANGES["latency_ms"], CASE_RANGES["cost_usd"], SCORE_RANGES["score"]
_IN_TOKENS, _OUT_TOKENS = CASE_RANGES["input_tokens"][1], CASE_RANGES["output_tokens"][1]


class _Declined(Exception):
    """A value the lane does not clearly accept: the row takes today's path."""


@dataclass
class PlainLane:
    """The lane for one file's rows: its default arm (the file's name) and the preparer whose
    tallies' news the prepared cases carry (the same one today's path uses in that process)."""

    default_arm: str
    preparer: CasePreparer

    def prepared(self, row: JSONObject, score_fields: list[tuple[str, str]]) -> list[Any] | None:
        """What ``preparer.prepared(plain._case(row, ...))`` gives, or None to take that path.
        ``score_fields``: the row's ``score.<name>`` keys, each with its evaluator's name."""
        try:
            return self._prepared(row, score_fields)
        except (_Declined, UnicodeEncodeError, RecursionError):  # the last two: today's path words them
            return None

    def _prepared(self, row: JSONObject, score_fields: list[tuple[str, str]]) -> list[Any]:
        get = row.get
        arm = get(ARM_FIELD)
        run = self.default_arm if arm is None else _name(arm)
        item_id = get("id")
        if item_id is None:
            item_id = get("item_id")
        item_input = get("input")
        if item_id is None:
            if item_input is None:
                raise _Declined
        else:
            item_id = _name(item_id)
        item_row = identity_row(item_id, item_input, get("expected"))
        key = content_key(item_row) if item_id is None else item_id
        scores = _scores(row, score_fields)
        error, finish_reason, started_at, passed = get("error"), get("finish_reason"), get("started_at"), get("passed")
        if not (type(error) in _TEXT and type(finish_reason) in _TEXT and type(started_at) in _TEXT
                and type(passed) in _FLAG):
            raise _Declined
        body = spooled_body([
            key, None, get("output"), error, _number(get("latency_ms"), _LATENCY),
            _count(get("input_tokens"), _IN_TOKENS), _count(get("output_tokens"), _OUT_TOKENS),
            _number(get("cost_usd"), _COST), finish_reason, started_at, scores, None, passed,
        ])
        return assembled(run, item_id, key, item_row, None, _count(get("repeat"), EXACT_INTEGERS),
                         self.preparer.news_without_identities(run, SCORE_KIND, scores), body)


def _scores(row: JSONObject, score_fields: list[tuple[str, str]]) -> list[list[Any]]:
    """The row's scores as the spooled line holds them (``[evaluator, value, passed, label, detail,
    error]``), in today's order: ``score``, the ``score.<name>`` columns, the ``scores`` object."""
    value = row.get(SCORE_FIELD)
    scores = [] if value is None else [_score(SCORE_FIELD, value)]
    for key, name in score_fields:
        value = row[key]
        if value is not None:
            scores.append(_score(name, value))
    nested = row.get(SCORES_FIELD)
    if nested is not None:
        if type(nested) is not dict:
            raise _Declined
        scores += [_score(name, value) for name, value in nested.items() if value is not None]
    if len(scores) > 1 and len({score[0] for score in scores}) < len(scores):
        raise _Declined  # an evaluator scored twice: today's path refuses it
    return scores


def _score(name: str, value: Any) -> list[Any]:
    """A score given as a number, a boolean (its verdict, scored 1 or 0) or an object of
    ``score``, ``passed``, ``label``, ``detail`` and ``error``."""
    if type(value) is float and _SCORE[0] <= value <= _SCORE[1]:  # the common case, at once
        return [name, value, None, None, None, None]
    if type(value) is dict:
        raw, passed = value.get("score"), value.get("passed")
        label, detail, error = value.get("label"), value.get("detail"), value.get("error")
        if not (type(passed) in _FLAG and type(label) in _TEXT and type(detail) in _TEXT and type(error) in _TEXT):
            raise _Declined
    else:
        raw, passed, label, detail, error = value, None, None, None, None
    if type(raw) is bool:
        return [name, 1.0 if raw else 0.0, raw if passed is None else passed, label, detail, error]
    return [name, _number(raw, _SCORE), passed, label, detail, error]


def _name(value: Any) -> str:
    """An arm or an item id: text, or an integer written as text."""
    if type(value) is str:
        return value
    if type(value) is int:
        return str(value)
    raise _Declined


def _number(value: Any, bounds: tuple[float, float]) -> float | None:
    """A number (an integer or a float, not a boolean) in ``bounds``, as a float (NaN is in no range)."""
    if value is None:
        return None
    kind = type(value)
    if (kind is float or kind is int) and bounds[0] <= value <= bounds[1]:
        return float(value)
    raise _Declined


def _count(value: Any, high: float) -> int | None:
    """A whole number from 0 to ``high``, given as an integer."""
    if value is None or (type(value) is int and 0 <= value <= high):
        return value
    raise _Declined
