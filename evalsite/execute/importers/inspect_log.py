"""Inspect AI: ``.eval`` logs (a ZIP of zstd-compressed JSON members) and ``.json`` logs.

One run per log (one model); one case per sample and epoch; each scorer's value is a score,
letter grades mapped as Inspect's own ``value_to_float`` maps them (C=1, P=0.5, I=0, N=0). The
eval spec and the git revision go into the fingerprint. The field mapping is in
docs/reference/importers/inspect.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from evalsite.errors import SourceError
from evalsite.execute.importers.evalzip import EvalZip
from evalsite.execute.importers.jsonstream import JsonArrayStream
from evalsite.execute.importers.source_records import (
    ImportOptions,
    SourceCase,
    SourceItem,
    SourceRun,
    SourceScore,
    arm_from,
    checked_case,
    elements,
    finite_number,
    item_name,
    optional_int,
    prompt_text,
    redact,
    value_at,
)
from evalsite.execute.importers.writer import SourceImport
from evalsite.jsonshape import JSONObject, mapping
from evalsite.runlog.records import RunStatus

TOOL = "inspect_ai"
LOG_VERSIONS = (2,)
RUN_KEY = "log"
GRADES = {"C": 1.0, "P": 0.5, "I": 0.0, "N": 0.0}  # CORRECT, PARTIAL, INCORRECT, NOANSWER
PASSING_GRADE = "C"
WORDS = {"yes": 1.0, "true": 1.0, "no": 0.0, "false": 0.0}
STATUSES = {"success": RunStatus.COMPLETED, "error": RunStatus.FAILED, "cancelled": RunStatus.CANCELED,
            "started": RunStatus.INTERRUPTED}
SAMPLE_MEMBER = re.compile(r"^samples/(.+)_epoch_(\d+)\.json$")
SUMMARY_MEMBER = re.compile(r"^_journal/summaries/(\d+)\.json$")
SPEC_KEYS = ("task", "task_version", "task_file", "task_registry_name", "task_attribs", "solver", "solver_args",
             "config", "packages", "scorers", "model_roles", "metadata")


def read_inspect(source: SourceImport, options: ImportOptions) -> None:
    suffix = source.path.suffix.lower()
    reader = _EvalFile(source, options.max_member_bytes) if suffix == ".eval" else _JsonFile(source)
    scorers: set[str] = set()
    for where, sample in reader:
        case = _case(sample, reader.positions, where)
        scorers.update(score.evaluator for score in case.scores)
        source.add_case(case)
    _check_version(source, reader.header, required=True)
    if not source.run_keys:
        raise SourceError(f"{source.label}: the log holds no samples (was it written with --no-log-samples?)")
    source.describe(RUN_KEY, _run(source, reader.header, reader.truncated, scorers, options))


class _Positions:
    """Each sample id's position in ``eval.dataset.sample_ids``, read once the header is known."""

    def __init__(self, header_of: Callable[[], JSONObject]):
        self._header_of = header_of
        self._positions: dict[str, int] | None = None

    def get(self, sample_id: str) -> int | None:
        if self._positions is None:
            ids = value_at(self._header_of(), "eval.dataset.sample_ids")
            if not isinstance(ids, list):
                return None
            self._positions = {str(i): n for n, i in enumerate(ids)}
        return self._positions.get(sample_id)


class _JsonFile:
    """A ``.json`` log: one EvalLog object, its ``samples`` streamed one at a time."""

    def __init__(self, source: SourceImport):
        self.source = source
        self._stream = JsonArrayStream(source.path, ("samples",), source.label, skip=("reductions",))
        self.positions = _Positions(lambda: self._stream.rest)

    def __iter__(self) -> Iterator[tuple[str, JSONObject]]:
        for index, sample in enumerate(self._stream):
            if index == 0:
                _check_version(self.source, self._stream.rest, required=False)
            yield f"{self.source.label}: samples[{index}]", sample

    @property
    def header(self) -> JSONObject:
        return self._stream.rest

    @property
    def truncated(self) -> bool:
        return self._stream.truncated


class _EvalFile:
    """An ``.eval`` log. An interrupted one has no ``header.json``: its ``_journal/start.json`` stands in."""

    def __init__(self, source: SourceImport, max_member_bytes: int):
        self.source = source
        self.truncated = False
        self._log = EvalZip(source.path, source.label, max_member_bytes)
        names = set(self._log.names())
        member = next((name for name in ("header.json", "_journal/start.json") if name in names), None)
        if member is None:
            self._log.close()
            raise SourceError(f"{source.label}: no header.json or _journal/start.json: not an Inspect .eval log")
        header = self._log.read_json(member)
        if not isinstance(header, dict):
            self._log.close()
            raise SourceError(f"{source.label}: {member} is not an object")
        self.header: JSONObject = header if member == "header.json" else {**header, "status": "started"}
        self.positions = _Positions(lambda: self.header)

    def __iter__(self) -> Iterator[tuple[str, JSONObject]]:
        with self._log as log:
            _check_version(self.source, self.header, required=True)
            names = log.names()
            samples = sorted((n for n in names if SAMPLE_MEMBER.match(n)), key=self._member_order)
            for name in samples:
                yield f"{self.source.label}: {name}", log.read_json(name)
            if not samples:
                yield from self._summaries(log, names)

    def _member_order(self, name: str) -> tuple[tuple[int, str], float, str]:
        matched = SAMPLE_MEMBER.match(name)  # only sample members are sorted
        sample_id, epoch = matched.groups() if matched else (name, "0")
        position = self.positions.get(sample_id)
        digits = epoch.lstrip("0")  # in numeric order by length then text: int() refuses past 4,300 digits
        return (len(digits), digits), float("inf") if position is None else position, name

    def _summaries(self, log: EvalZip, names: list[str]) -> Iterator[tuple[str, JSONObject]]:
        """Without sample members (``--no-log-samples``) the summaries still hold every score."""
        if "summaries.json" in names:
            members = ["summaries.json"]
        else:
            members = sorted((n for n in names if SUMMARY_MEMBER.match(n)),
                             key=lambda n: int(SUMMARY_MEMBER.sub(r"\1", n)))
        if members:
            self.source.warn("the log has no samples, only summaries: outputs, tokens and latency are missing")
        for name in members:
            summaries = log.read_json(name)
            for index, summary in enumerate(summaries if isinstance(summaries, list) else []):
                yield f"{self.source.label}: {name}[{index}]", summary


def _check_version(source: SourceImport, header: JSONObject, *, required: bool) -> None:
    if "version" not in header:
        if required:
            raise SourceError(f"{source.label}: the log has no 'version' field: not an Inspect log")
        return
    if header["version"] not in LOG_VERSIONS:
        raise SourceError(f"{source.label}: log version is {header['version']!r}; evalsite reads Inspect log "
                          f"version {', '.join(map(str, LOG_VERSIONS))}")


def grade(value: Any) -> tuple[float | None, bool | None, str | None, str | None]:
    """A scorer's value as ``(score, passed, label, error)``; see the module docstring."""
    if isinstance(value, str):
        if value in GRADES:
            return GRADES[value], value == PASSING_GRADE, value, None
        word = value.strip().lower()
        if word in WORDS:
            return WORDS[word], WORDS[word] == 1.0, value, None
        try:
            return float(word), None, value, None
        except ValueError:
            return None, False, value, f"cannot map the score value {value!r} to a number"
    number = finite_number(value)
    if number is None:
        return None, False, None, f"the score value {value!r} is not a number or a grade"
    return number, bool(value) if isinstance(value, bool) else None, None, None


def _scores(sample: JSONObject) -> list[SourceScore]:
    scores = []
    for scorer, result in mapping(sample.get("scores")).items():
        result = result if isinstance(result, dict) else {"value": result}
        value = result.get("value")
        parts = value.items() if isinstance(value, dict) else [(None, value)]
        for key, part in parts:
            number, passed, label, error = grade(part)
            scores.append(SourceScore(
                evaluator=scorer if key is None else f"{scorer}/{key}",
                value=number, passed=passed, label=label, error=error,
                detail=result.get("explanation") or result.get("answer"),
                kind=f"inspect:{scorer}",
            ))
    return scores


def _sent_prompt(messages: Any) -> Any:
    """The messages before the model's last reply; a lone user text becomes that text."""
    if not isinstance(messages, list) or not messages:
        return None
    end = max((i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "assistant"),
              default=len(messages))
    return prompt_text(messages[:end])


def _tokens(sample: JSONObject, output: JSONObject) -> tuple[int | None, int | None]:
    usage = output.get("usage")
    if not isinstance(usage, dict):
        per_model = [u for u in mapping(sample.get("model_usage")).values() if isinstance(u, dict)]
        if not per_model:
            return None, None
        usage = {k: sum(optional_int(u.get(k)) or 0 for u in per_model) for k in ("input_tokens", "output_tokens")}
    return optional_int(usage.get("input_tokens")), optional_int(usage.get("output_tokens"))


def _case(sample: Any, positions: _Positions, where: str) -> SourceCase:
    if not isinstance(sample, dict) or sample.get("id") is None:
        raise SourceError(f"{where}: a sample without an 'id'")
    sample_id = item_name(sample["id"], "id", where)
    output = mapping(sample.get("output"))
    error = sample.get("error")
    epoch = optional_int(sample.get("epoch"))
    seconds = finite_number(output.get("time"))
    input_tokens, output_tokens = _tokens(sample, output)
    return checked_case(SourceCase(
        run=RUN_KEY,
        item=SourceItem(sample_id, sample.get("input"), sample.get("target"), positions.get(sample_id)),
        repeat=None if epoch is None else epoch - 1,
        input=_sent_prompt(sample.get("messages")),
        output=output.get("completion"),
        error=(error.get("message") or "error") if isinstance(error, dict) else (str(error) if error else None),
        latency_ms=None if seconds is None else seconds * 1000,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        finish_reason=value_at(output, "choices.0.stop_reason"),
        started_at=sample.get("started_at"),
        scores=_scores(sample),
    ), where)


def _spec(eval_spec: JSONObject, header: JSONObject) -> JSONObject:
    """The eval spec minus what differs between two identical runs (ids, times, machine paths)."""
    dataset = mapping(eval_spec.get("dataset"))
    return {
        **{key: redact(eval_spec.get(key)) for key in SPEC_KEYS},
        "task_args": _without_location(eval_spec.get("task_args"), dataset.get("location")),
        "dataset": {k: dataset.get(k) for k in ("name", "samples", "shuffled")},
        "plan": header.get("plan"),
    }


def _without_location(arguments: Any, location: Any) -> Any:
    if not isinstance(arguments, dict) or location is None:
        return arguments
    return {k: ("<dataset location>" if v == location else v) for k, v in arguments.items()}


def _text(value: Any) -> str | None:
    """``value`` when it is text, else None: a malformed field reads as absent."""
    return value if isinstance(value, str) else None


def _reported(results: Any) -> JSONObject:
    if not isinstance(results, dict):
        return {}
    scores = {
        entry.get("name"): {m: value_at(metric, "value") for m, metric in mapping(entry.get("metrics")).items()}
        for entry in elements(results.get("scores")) if isinstance(entry, dict) and isinstance(entry.get("name"), str)
    }
    return {"scores": scores, **{k: results.get(k) for k in ("total_samples", "completed_samples", "headline")}}


def _run(source: SourceImport, header: JSONObject, truncated: bool, scorers: set[str], options: ImportOptions) -> SourceRun:
    eval_spec = mapping(header.get("eval"))
    if options.arm_from:
        arm = arm_from(header, options.arm_from, source.label)
    elif eval_spec.get("model"):
        arm = str(eval_spec["model"])
    else:
        raise SourceError(f"{source.label}: eval.model is missing; name the arm with --arm-from")
    raw_status = header.get("status")
    status = STATUSES.get(str(raw_status))  # str: a hostile log's status may be unhashable
    if status is None:
        source.warn(f"unknown log status {raw_status!r}; imported as interrupted")
        status = RunStatus.INTERRUPTED
    if truncated:
        source.warn("the file ends in the middle of its samples; the complete ones were imported as an interrupted run")
        status = RunStatus.INTERRUPTED
    elif status != RunStatus.COMPLETED:
        source.warn(f"the log's status is {raw_status!r}: imported as {status}")
    if header.get("invalidated"):
        source.warn("the log is marked invalidated")
    declared = {s["name"]: s for s in elements(eval_spec.get("scorers"))
                if isinstance(s, dict) and isinstance(s.get("name"), str)}
    revision = mapping(eval_spec.get("revision"))
    packages = mapping(eval_spec.get("packages"))
    error = header.get("error")
    plan = mapping(header.get("plan"))
    return SourceRun(
        arm_id=arm,
        experiment=str(eval_spec.get("task") or source.path.stem),
        tool=TOOL,
        tool_version=packages.get("inspect_ai"),
        config={
            "model": eval_spec.get("model"),
            "model_args": redact(eval_spec.get("model_args")),
            "model_generate_config": redact(eval_spec.get("model_generate_config")),
            "solvers": plan.get("steps"),
        },
        prompt=plan.get("steps"),
        scorers={name: declared.get(name.split("/")[0]) for name in scorers},
        spec=_spec(eval_spec, header),
        code={"commit": revision.get("commit"), "dirty": revision.get("dirty"), "origin": revision.get("origin")},
        environment={"inspect_ai": packages.get("inspect_ai"), "packages": packages},
        status=status,
        source_status=raw_status,
        source_error=(error.get("message") or str(error)) if isinstance(error, dict) else error,
        started_at=value_at(header, "stats.started_at"),
        ended_at=value_at(header, "stats.completed_at"),
        dataset_location=_text(value_at(eval_spec, "dataset.location")),
        reported=_reported(header.get("results")),
        ids={k: eval_spec.get(k) for k in ("eval_id", "run_id", "task_id")},
    )
