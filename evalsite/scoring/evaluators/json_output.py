"""``json`` and ``json_schema``: the output is JSON (a whole-reply ```json fence is stripped),
optionally valid against a JSON Schema and agreeing with the expected value on chosen fields."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from evalsite.runlog.hashing import canonical_json
from evalsite.scoring.evaluators.base import CaseView, Evaluator, Outcome, ScoringError, register_evaluator
from evalsite.scoring.evaluators.text import strip_fence

_MISSING = object()


@register_evaluator("json")
class Json(Evaluator):
    """Params: ``schema`` (a JSON Schema mapping, or the path of a .json/.yaml file holding one,
    relative to the project root), ``fields`` (dotted paths compared with the expected value —
    ``value`` or the row's expected, an object or JSON text), ``value``.

    Score 0 for invalid JSON or a schema violation; with ``fields``, the share of fields equal to
    the expected ones (passes when all are); otherwise 1.
    """

    param_names = ("schema", "fields", "value")
    helper_modules = ("evalsite.scoring.evaluators.text",)
    schema_required = False

    def check(self) -> None:
        fields = self.option("fields", list)
        if fields is not None and (not fields or not all(isinstance(f, str) and f for f in fields)):
            raise ValueError(f"fields: needs a non-empty list of field paths such as 'user.name', got {fields!r}")
        self.fields = fields or []
        self.schema = self._load_schema(self.params.get("schema"))
        self.validator = None if self.schema is None else jsonschema.validators.validator_for(self.schema)(self.schema)

    def code_identity(self) -> str:
        """The schema's content decides scores too, even when the params only name its file."""
        return super().code_identity() + canonical_json(self.schema)

    def _load_schema(self, schema: Any) -> dict | None:
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
            error = next(iter(sorted(self.validator.iter_errors(document), key=lambda e: list(e.path))), None)
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
            if wanted is _MISSING:
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


def field_at(document: Any, path: str) -> Any:
    """``a.b.0.c`` inside nested objects and lists, or ``_MISSING``."""
    value = document
    for part in path.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return _MISSING
    return value


def _read_schema_file(path: Path, named: str) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        raise ValueError(f"schema: file {named!r} not found under {path.parent}") from None
    try:
        return json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise ValueError(f"schema: {named} is not valid JSON or YAML: {exc}") from None
