"""``json`` and ``json_schema``: the output is JSON (a whole-reply ```json fence is stripped),
optionally valid against a JSON Schema and agreeing with the expected value on chosen fields.

A schema's ``pattern`` and ``patternProperties`` are user patterns: jsonschema would run them with
Python's ``re``, which no timeout or signal can stop (a catastrophic pattern hung a run, deaf to
SIGTERM). Its keyword code gets :data:`BOUNDED_RE` in place of ``re``, which searches with the
``regex`` package under the evaluator's ``timeout`` and ``max_chars``, like the ``regex`` evaluator.
"""

from __future__ import annotations

import contextvars
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import jsonschema._keywords
import jsonschema._legacy_keywords
import jsonschema._utils

from evalsite.experiment.bounded_yaml import DocumentUnreadable, document_text, parse_document
from evalsite.jsonshape import MISSING, JSONObject, field_at
from evalsite.runlog.hashing import canonical_json
from evalsite.scoring.evaluators.base import CaseView, Evaluator, Outcome, ScoringError, register_evaluator
from evalsite.scoring.evaluators.text import PatternLimits, compile_user_pattern, strip_fence

_LIMITS: contextvars.ContextVar[PatternLimits | None] = contextvars.ContextVar("schema_pattern_limits", default=None)


class _BoundedRe:
    """``re`` as jsonschema's keyword modules see it: ``search`` is bounded while a ``json``
    evaluator validates an output; evalsite's own schemas (the manifest's) keep plain ``re``."""

    def __getattr__(self, name: str) -> Any:
        return getattr(re, name)

    @staticmethod
    def search(pattern: str, string: str, flags: int = 0) -> object:  # a match, or None: all jsonschema asks
        limits = _LIMITS.get()
        if limits is None:
            return re.search(pattern, string, flags)
        try:
            compiled = compile_user_pattern(pattern, key="schema pattern")
        except ValueError as exc:
            raise ScoringError(str(exc)) from None
        return limits.search(compiled, string)


BOUNDED_RE = _BoundedRe()
for _module in (jsonschema._keywords, jsonschema._legacy_keywords, jsonschema._utils):
    vars(_module)["re"] = BOUNDED_RE  # their private `import re`, which the stubs (rightly) do not declare


@register_evaluator("json")
class Json(Evaluator):
    """Params: ``schema`` (a JSON Schema mapping, or the path of a .json/.yaml file holding one,
    relative to the project root), ``fields`` (dotted paths compared with the expected value —
    ``value`` or the row's expected, an object or JSON text), ``value``, and ``timeout`` (seconds,
    default 1) and ``max_chars`` (default 100000) for each schema ``pattern`` search.

    Score 0 for invalid JSON or a schema violation; with ``fields``, the share of fields equal to
    the expected ones (passes when all are); otherwise 1.
    """

    param_names = ("schema", "fields", "value", "timeout", "max_chars")
    helper_modules = ("evalsite.scoring.evaluators.text", "evalsite.jsonshape")
    schema_required = False

    def check(self) -> None:
        fields = self.option("fields", list)
        if fields is not None and (not fields or not all(isinstance(f, str) and f for f in fields)):
            raise ValueError(f"fields: needs a non-empty list of field paths such as 'user.name', got {fields!r}")
        self.fields = fields or []
        self.limits = PatternLimits(self)
        self.schema = self._load_schema(self.params.get("schema"))
        self.validator = None if self.schema is None else jsonschema.validators.validator_for(self.schema)(self.schema)

    def code_identity(self) -> str:
        """The schema's content decides scores too, even when the params only name its file."""
        return super().code_identity() + canonical_json(self.schema)

    def _load_schema(self, schema: Any) -> JSONObject | None:
        if schema is None:
            if self.schema_required:
                raise ValueError("schema: required (a JSON Schema mapping or the path of a file holding one)")
            return None
        if isinstance(schema, str):
            schema = _read_schema_file(self.project_root / schema, schema)
        if not isinstance(schema, dict):
            raise ValueError(f"schema: needs a JSON Schema mapping or a file path, got {schema!r}")
        try:
            jsonschema.validators.validator_for(schema).check_schema(schema)
        except jsonschema.SchemaError as exc:
            raise ValueError(f"schema: not a valid JSON Schema: {exc.message}") from None
        return schema

    def measure(self, case: CaseView) -> Outcome:
        try:
            document = parse_json_output(case.output)
        except ValueError as exc:
            return Outcome.check(False, f"not valid JSON: {exc}")
        if self.validator is not None:
            token = _LIMITS.set(self.limits)
            try:
                errors = list(self.validator.iter_errors(document))
            finally:
                _LIMITS.reset(token)
            error = next(iter(sorted(errors, key=lambda e: list(e.path))), None)
            if error is not None:
                where = "/".join(map(str, error.path)) or "(root)"
                return Outcome.check(False, f"schema: {where}: {error.message}")
        if not self.fields:
            return Outcome.check(True)
        return self._compare_fields(document, self.target(case))

    def _compare_fields(self, document: Any, expected: Any) -> Outcome:
        if expected is None:
            return Outcome.skip("no expected value to compare fields with")
        if isinstance(expected, str):
            try:
                expected = json.loads(expected)
            except json.JSONDecodeError as exc:
                raise ScoringError(f"the expected value is not JSON: {exc}") from None
        differing = []
        for path in self.fields:
            wanted = field_at(expected, path)
            if wanted is MISSING:
                raise ScoringError(f"the expected value has no field {path!r}")
            if field_at(document, path) != wanted:
                differing.append(path)
        detail = None if not differing else "fields differ: " + ", ".join(differing)
        return Outcome(1 - len(differing) / len(self.fields), not differing, detail=detail)


@register_evaluator("json_schema")
class JsonSchema(Json):
    """``json`` with a required ``schema``."""

    schema_required = True


def parse_json_output(output: Any) -> Any:
    """A structured output as is; text parsed as JSON after stripping a whole-reply fence."""
    if not isinstance(output, str):
        return output
    try:
        return json.loads(strip_fence(output))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{exc.msg} at line {exc.lineno} column {exc.colno}") from None


def _read_schema_file(path: Path, named: str) -> Any:
    if not path.is_file():
        raise ValueError(f"schema: file {named!r} not found under {path.parent}")
    try:
        text = document_text(path)
    except DocumentUnreadable as exc:
        raise ValueError(f"schema: {named}: cannot read it: {exc}") from None
    schema, problem = parse_document(text, is_json=path.suffix.lower() == ".json")
    if problem is not None:
        raise ValueError(f"schema: {named}: {problem}")
    return schema
