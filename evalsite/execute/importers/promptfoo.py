"""promptfoo: the file ``promptfoo eval -o results.json`` (or ``-o results.jsonl``) writes.

One run per provider, and per prompt when a provider was given several; one case per result
row; each assertion (``gradingResult.componentResults[]``) is a score. The field mapping is in
docs/reference/importers/promptfoo.md.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

from evalsite.errors import SourceError
from evalsite.execute.importers.jsonstream import JsonArrayStream, JsonLines, RunShare
from evalsite.execute.importers.promptfoo_fields import used_fields
from evalsite.execute.importers.shared_reading import Mapped, shared_reading
from evalsite.execute.importers.source_records import (
    MISSING,
    ImportOptions,
    SourceCase,
    SourceItem,
    SourceRun,
    SourceScore,
    arm_from,
    checked_case,
    field_at,
    finite_number,
    item_name,
    optional_int,
    redact,
    value_at,
)
from evalsite.execute.importers.writer import CasePreparer, SourceImport
from evalsite.jsonshape import JSONObject, mapping
from evalsite.runlog.jsonread import orjson_value
from evalsite.runlog.records import RunStatus
from evalsite.runlog.store import iso

TOOL = "promptfoo"
RESULTS_VERSIONS = (3,)
FAILURE_ERROR = 2  # ResultFailureReason.ERROR: the provider or the grading failed, not an assertion
RUNTIME_OPTIONS = ("repeat", "cache", "delay")  # the ones that change what a result means
IDENTITY_VARS = ("id", "expected")


@dataclass
class _Column:
    """One provider × prompt column, as the result rows name it."""

    provider: str
    provider_id: str | None
    prompt_label: str | None
    prompt_id: str | None


def _stream(path: Path, label: str, options: ImportOptions, share: RunShare | None = None) -> JsonArrayStream:
    """The results, decoded into the fields this reader uses (:mod:`~evalsite.execute.importers.promptfoo_fields`),
    or whole for ``--arm-from``, which may name any field; the inlined tests are stepped over."""
    decode_run = orjson_value if options.arm_from else used_fields
    return JsonArrayStream(path, ("results", "results"), label, skip=("config.tests",), share=share,
                           decode_run=decode_run)


class _Results:
    """The result rows of a ``.json`` (streamed from ``results.results``) or ``.jsonl`` file. A
    large ``.json`` file's results are mostly decoded and mapped by a second process
    (:mod:`~evalsite.execute.importers.shared_reading`): those arrive as :class:`Mapped`."""

    def __init__(self, path: Path, label: str, options: ImportOptions):
        self.jsonl = path.suffix.lower() in (".jsonl", ".ndjson")
        self.share = None if self.jsonl else shared_reading(path, partial(_stream, path, label, options), _Mapping(options))
        self._reader = JsonLines(path, label) if self.jsonl else _stream(path, label, options, self.share)

    def __iter__(self) -> Iterator[tuple[str, JSONObject | Mapped]]:
        if self.jsonl:
            for number, record in self._reader:
                yield f"line {number}", record
        else:
            for index, record in enumerate(self._reader):
                if not isinstance(record, (dict, Mapped)):
                    raise SourceError(f"{self._reader.label}: results.results[{index}] is not an object")
                yield f"results.results[{index}]", record

    def close(self) -> None:
        if self.share is not None:
            self.share.close()

    @property
    def document(self) -> JSONObject:
        """Everything but the result rows (empty for ``.jsonl``, which holds rows only)."""
        return {} if isinstance(self._reader, JsonLines) else self._reader.rest

    @property
    def found(self) -> bool:
        return isinstance(self._reader, JsonLines) or self._reader.found

    @property
    def truncated(self) -> bool:
        return self._reader.truncated


def read_promptfoo(source: SourceImport, options: ImportOptions) -> None:
    results = _Results(source.path, source.label, options)
    try:
        columns = _read_results(source, results, options)
    finally:
        results.close()
    if not results.jsonl:
        if not results.found:
            raise SourceError(f"{source.label}: no results.results array: not a promptfoo results file")
        _check_version(source, results.document, required=not results.truncated)
    if results.truncated:
        source.warn("the file ends in the middle of the results; the complete ones were imported as an interrupted run")
    for key, column in columns.items():
        source.describe(key, _run(results.document, column, _arm(key, column, columns, options),
                                  results.truncated, source))


def _read_results(source: SourceImport, results: _Results, options: ImportOptions) -> dict[str, _Column]:
    """Every result's case to ``source``, in file order; the provider × prompt columns seen."""
    columns: dict[str, _Column] = {}
    for where, result in results:
        if not results.jsonl and not columns:
            _check_version(source, results.document, required=False)  # fail before reading on
        if isinstance(result, Mapped):  # mapped by the second process, as _Mapping does
            fields, prepared = result.value
            if fields is not None:
                columns.setdefault(prepared[0], _Column(*fields))
            source.add_prepared(prepared)
        else:
            where = f"{source.label}: {where}"
            key, column = _column(result, where, options)
            columns.setdefault(key, column)
            source.add_case(_case(result, key, where))
    return columns


class _Mapping:
    """A result as the second process sends it: its column's fields (the first time that process
    sees the column) and its case as :class:`~evalsite.execute.importers.writer.CasePreparer`
    prepares it for the writer. Anything wrong with it raises, and the main process maps it again,
    raising the error with the result's place."""

    def __init__(self, options: ImportOptions):
        self.options = options
        self.preparer = CasePreparer()
        self.columns: set[str] = set()

    def __call__(self, result: Any) -> list[Any]:
        if not isinstance(result, dict):
            raise SourceError("not an object")
        key, column = _column(result, "", self.options)
        prepared = self.preparer.prepared(_case(result, key, ""))
        if key in self.columns:
            return [None, prepared]
        self.columns.add(key)
        return [[column.provider, column.provider_id, column.prompt_label, column.prompt_id], prepared]


def _check_version(source: SourceImport, document: JSONObject, *, required: bool) -> None:
    version = field_at(document, "results.version")
    if version is MISSING:
        if required:
            raise SourceError(f"{source.label}: results.version is missing: not a promptfoo results file "
                              f"evalsite can read (it reads version {RESULTS_VERSIONS[-1]})")
        return
    if version not in RESULTS_VERSIONS:
        raise SourceError(f"{source.label}: results.version is {version!r}; evalsite reads promptfoo results "
                          f"version {', '.join(map(str, RESULTS_VERSIONS))}")


def _column(result: JSONObject, where: str, options: ImportOptions) -> tuple[str, _Column]:
    provider = result.get("provider")
    if isinstance(provider, str):
        provider = {"id": provider}
    if not isinstance(provider, dict) or not (provider.get("label") or provider.get("id")):
        raise SourceError(f"{where}: no provider.id or provider.label: not a promptfoo result")
    prompt = mapping(result.get("prompt"))
    column = _Column(  # positional, in the fields' order (one is made for every result)
        str(provider.get("label") or provider.get("id")), provider.get("id"), prompt.get("label"), result.get("promptId"),
    )
    if options.arm_from:
        return arm_from(result, options.arm_from, where), column
    prompt_key = column.prompt_id or column.prompt_label or result.get("promptIdx")
    return "\x1f".join((column.provider, str(column.provider_id), str(prompt_key))), column


def _arm(key: str, column: _Column, columns: dict[str, _Column], options: ImportOptions) -> str:
    """The provider's name, plus the prompt's label when that provider ran several prompts."""
    if options.arm_from:
        return key
    siblings = sum(1 for c in columns.values() if c.provider == column.provider)
    return column.provider if siblings == 1 else f"{column.provider}/{column.prompt_label or column.prompt_id}"


def _item(result: JSONObject, where: str) -> SourceItem:
    variables = result.get("vars")
    if not isinstance(variables, dict):
        variables = value_at(result, "testCase.vars")
        variables = variables if isinstance(variables, dict) else {}
    if "input" in variables:
        item_input = variables["input"]
    else:
        item_input = {k: v for k, v in variables.items() if k not in IDENTITY_VARS} or None
    item_id = variables.get("id")
    return SourceItem(None if item_id is None else item_name(item_id, "vars.id", where), item_input, variables.get("expected"),
                      finite_number(result.get("testIdx")))


def _error(result: JSONObject, response: JSONObject) -> str | None:
    """promptfoo puts an assertion's failure in ``error`` too; only failureReason 2 is an error."""
    reason = result.get("failureReason")
    if reason is not None:
        return str(result.get("error") or response.get("error") or "error") if reason == FAILURE_ERROR else None
    if response.get("error"):
        return str(response["error"])
    return str(result["error"]) if result.get("error") and not result.get("gradingResult") else None


def _scores(result: JSONObject, where: str) -> list[SourceScore]:
    grading = result.get("gradingResult")
    components = grading.get("componentResults") if isinstance(grading, dict) else None
    if components is None:
        return []
    if not isinstance(components, list):
        raise SourceError(f"{where}: gradingResult.componentResults is not a list")
    scores: list[SourceScore] = []
    seen: dict[str, int] = {}
    for index, component in enumerate(components):
        if not isinstance(component, dict):
            raise SourceError(f"{where}: gradingResult.componentResults[{index}] is not an object")
        assertion = component.get("assertion")
        if type(assertion) is not dict:
            assertion = mapping(assertion)
        kind = assertion.get("type") or "assertion"
        kind = kind if type(kind) is str else str(kind)
        base = assertion.get("metric") or kind
        base = base if type(base) is str else str(base)
        count = seen[base] = seen.get(base, 0) + 1
        passed = component.get("pass")
        scores.append(SourceScore(  # positional, in the fields' order (the keywords cost a third more)
            base if count == 1 else f"{base}#{count}",
            finite_number(component.get("score")),
            passed if isinstance(passed, bool) else None,
            None,
            component.get("reason"),
            None,
            f"promptfoo:{kind}",
            assertion,  # the identity: only its hash is kept
            finite_number(assertion.get("weight", 1)),
        ))
    return scores


def _case(result: JSONObject, key: str, where: str) -> SourceCase:
    response = mapping(result.get("response"))
    usage = mapping(response.get("tokenUsage")) or mapping(result.get("tokenUsage"))
    prompt = result.get("prompt")
    scores = _scores(result, where)
    success = result.get("success")
    return checked_case(SourceCase(  # positional, in the fields' order
        key,
        _item(result, where),
        None,  # repeat: numbered by arrival
        prompt.get("raw") if isinstance(prompt, dict) else None,
        response.get("output"),
        _error(result, response),
        finite_number(result.get("latencyMs", response.get("latencyMs"))),
        optional_int(usage.get("prompt")),
        optional_int(usage.get("completion")),
        finite_number(result.get("cost")) or None,  # promptfoo writes 0 for a model it has no price for
        response.get("finishReason"),
        None,  # started_at: not recorded per result
        scores,
        finite_number(result.get("score")) if scores else None,
        success if scores and isinstance(success, bool) else None,
    ), where)


def _provider_config(document: JSONObject, column: _Column) -> Any:
    providers = value_at(document, "config.providers")
    for entry in providers if isinstance(providers, list) else []:
        if isinstance(entry, dict) and column.provider in (entry.get("label"), entry.get("id")):
            return redact(entry.get("config"))
    return None


def _prompt_template(document: JSONObject, column: _Column) -> Any:
    prompts = value_at(document, "results.prompts")
    for entry in prompts if isinstance(prompts, list) else []:
        if isinstance(entry, dict) and entry.get("id") == column.prompt_id and entry.get("provider") == column.provider:
            return entry
    return None


def _ended(started: Any, duration_ms: Any) -> str | None:
    milliseconds = finite_number(duration_ms)
    if not isinstance(started, str) or milliseconds is None:
        return None
    try:
        return iso(datetime.fromisoformat(started.replace("Z", "+00:00")) + timedelta(milliseconds=milliseconds))
    except (ValueError, OverflowError):  # not a time, or a duration past any date: read as absent
        return None


def _run(document: JSONObject, column: _Column, arm: str, truncated: bool, source: SourceImport) -> SourceRun:
    metadata = mapping(document.get("metadata"))
    version = metadata.get("promptfooVersion")
    entry = _prompt_template(document, column) or {}
    runtime = mapping(document.get("runtimeOptions"))
    started = value_at(document, "results.timestamp") or metadata.get("evaluationCreatedAt")
    return SourceRun(
        arm_id=arm,
        experiment=str(value_at(document, "config.description") or document.get("evalId") or source.path.stem),
        tool=TOOL,
        tool_version=version,
        config={
            "provider": {"id": column.provider_id, "label": column.provider,
                         "config": _provider_config(document, column)},
            "prompt": {"label": column.prompt_label, "id": column.prompt_id, "template": entry.get("raw")},
        },
        prompt=entry.get("raw") if entry.get("raw") is not None else column.prompt_id or column.prompt_label,
        spec={
            "results_version": value_at(document, "results.version"),
            "default_test": redact(value_at(document, "config.defaultTest")),
            "runtime_options": {k: runtime[k] for k in RUNTIME_OPTIONS if k in runtime},
        },
        environment={"promptfoo": version, "node": metadata.get("nodeVersion"),
                     "platform": metadata.get("platform"), "arch": metadata.get("arch")},
        status=RunStatus.INTERRUPTED if truncated else RunStatus.COMPLETED,
        started_at=started,
        ended_at=_ended(started, value_at(document, "results.stats.durationMs")),
        reported=entry.get("metrics") or {},
        ids={"eval_id": document.get("evalId")},
    )
