"""``grounding``: every value an extraction returned is found in the source document of its row.

The output is JSON (an object or list; a whole-reply ```json fence is stripped). Each of its leaf
values — or only those at ``fields`` — is looked up in the row's source document (the row field
``source``, a dotted path): a text value is found when it appears in the document, whitespace
runs and (unless ``ignore_case: false``) case aside; a number when the document holds that number,
written any usual way (``1,299.00`` is 1299). Booleans and nulls say nothing checkable and are
left out. Score = the share of checked values found; it passes when every one is (or the share
reaches ``threshold``). The detail names the values not found.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from typing import Any

from evalsite.jsonshape import MISSING, field_at
from evalsite.scoring.evaluators.base import CaseView, Evaluator, Outcome, ScoringError, register_evaluator
from evalsite.scoring.evaluators.json_output import parse_json_output

#: A number as documents write it: sign, digits with optional thousands commas, decimals.
NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![\w])")
SHOWN = 60  # characters of a value shown in the detail


@register_evaluator("grounding")
class Grounding(Evaluator):
    """Params: ``source`` (the row field holding the document, default ``source``), ``fields``
    (dotted paths into the output to check; default every leaf), ``ignore_case`` (default true)."""

    param_names = ("source", "fields", "ignore_case")
    helper_modules = ("evalsite.scoring.evaluators.json_output", "evalsite.jsonshape")

    def check(self) -> None:
        self.source = self.option("source", str, "source")
        self.fields = self.option("fields", list, None)
        if self.fields is not None and not all(isinstance(f, str) and f for f in self.fields):
            raise ValueError("fields: needs a list of dotted paths such as [vendor, total]")
        self.ignore_case = self.option("ignore_case", bool, True)

    def measure(self, case: CaseView) -> Outcome:
        document = field_at(case.row, self.source)
        if not isinstance(document, str):
            raise ScoringError(f"the row has no source document at {self.source!r} (params.source) to check against")
        try:
            extracted = parse_json_output(case.output)
        except ValueError as exc:
            return Outcome(0.0, False, detail=f"the output is not JSON: {exc}")
        values = self._values(extracted)
        if not values:
            return Outcome.skip("no extracted value to check")
        text, numbers = self._normalised(document), {float(n.replace(",", "")) for n in NUMBER.findall(document)}
        missing = [(path, value) for path, value in values if not self._found(value, text, numbers)]
        detail = None if not missing else "not in the source: " + ", ".join(
            f"{path}={_shown(value)}" for path, value in missing)
        return Outcome((len(values) - len(missing)) / len(values), not missing, detail=detail)

    def _values(self, extracted: Any) -> list[tuple[str, str | float]]:
        if self.fields is None:
            pairs = list(_leaves(extracted, ""))
        else:
            pairs = [(path, value) for path in self.fields
                     for path, value in _leaves(field_at(extracted, path), path) if value is not MISSING]
        return [(path, value) for path, value in pairs if _checkable(value)]

    def _normalised(self, text: str) -> str:
        collapsed = " ".join(text.split())
        return collapsed.casefold() if self.ignore_case else collapsed

    def _found(self, value: str | float, text: str, numbers: set[float]) -> bool:
        if isinstance(value, str):
            return self._normalised(value) in text
        return any(math.isclose(value, number, rel_tol=1e-9, abs_tol=1e-9) for number in numbers)


def _leaves(value: Any, path: str) -> Iterator[tuple[str, Any]]:
    """``(dotted path, leaf)`` of every leaf under ``value``."""
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _leaves(child, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _leaves(child, f"{path}.{index}" if path else str(index))
    else:
        yield path, value


def _checkable(value: Any) -> bool:
    """Text with something in it, or a finite number (a boolean or null names nothing in a document)."""
    if isinstance(value, str):
        return bool(value.strip())
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _shown(value: str | float) -> str:
    text = repr(value)
    return text if len(text) <= SHOWN else text[: SHOWN - 1] + "…"
