"""The built-in steps: ``write_trace``, ``eval``, ``trace_stats``, ``gather``, ``bootstrap_ci``,
``plot`` and ``validate_outputs``.

Each is registered with :func:`register_step` in :data:`STEPS` (where an installed package's
``evalsite.steps`` entry point adds its own), takes a step context (``evalsite.execute.hooks.StepContext``), writes what it says, returns
a line for the step's log, and raises :class:`StepFailed` with one line naming the culprit.

* ``write_trace`` (a case ``post``): the case as one JSON line (ids, config, checkpoint, output,
  error, score, passed, latency, cost, cache mark, ``score.<evaluator>`` per evaluator) into ``out``.
* ``eval`` (a case post): the case scored again by ``config.evaluators`` (specs as the manifest's
  ``evaluators``; a judge's calls count against the batch's cost ceiling), as one metrics object
  into ``out`` (default ``<level_dir>/eval.json``); the case's own scores are untouched.
* ``trace_stats`` (a case post): the case's conversation counted (messages, user turns, assistant
  messages, tool calls and results) beside its tokens, latency, cost and attempts, one row into
  ``out`` (default ``<level_dir>/trace_stats.csv``).
* ``gather``: every child instance of ``in`` (JSONL lines, a JSON object, CSV or Parquet rows) into
  one dataframe ``out`` (CSV, or Parquet when its path ends in ``.parquet``).
* ``bootstrap_ci``: from the dataframes of ``in``, per ``arm`` and metric (``config.metrics``,
  default ``score``), the mean of item means and its bootstrap interval (items and repeats
  resampled, :func:`evalsite.stats.bootstrap_ci`) into ``out`` or ``<level_dir>/ci_summary.csv``.
* ``plot``: ``bootstrap_ci``'s estimate of one metric (``config.metric``, default ``score``) per
  arm drawn as an SVG interval chart (:mod:`evalsite.execute.svg_plot`) into ``out``.
* ``validate_outputs``: the manifest's ``output_schema`` (or ``config.schema``) checked against
  the level folder: every required file exists, every required column is in its file.
"""

from __future__ import annotations

import asyncio
import csv
import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from evalsite.errors import EvaluatorError, ManifestError
from evalsite.execute.svg_plot import Estimate, interval_chart
from evalsite.jsonshape import JSONObject, JSONValue, as_unicode
from evalsite.registry import Registry

if TYPE_CHECKING:
    import numpy as np

    from evalsite.execute.hooks import StepContext  # hooks runs the steps: it imports this module
    from evalsite.scoring.evaluators import Evaluator


class StepFailed(Exception):
    """A built-in step's one-line failure."""


Step = Callable[["StepContext"], "str | None"]  # (context) -> a line for the step's log, or None
STEPS: Registry[Step] = Registry("builtin step", "evalsite.steps", ManifestError, unknown_as="builtin")


def register_step(name: str, *, replace: bool = False) -> Callable[[Step], Step]:
    """Register ``step(context)`` as the builtin ``name`` (a manifest's ``builtin: name``), the
    built-ins' way too; a taken name is refused unless ``replace``."""

    def decorate(step: Step) -> Step:
        return STEPS.register(name, step, replace=replace)

    return decorate


@register_step("write_trace")
def write_trace(context: StepContext) -> str:
    case = context.case
    if case is None or context.output is None:
        raise StepFailed("write_trace runs as a case post step with an 'out' artifact")
    record = {
        **_case_ids(context),
        "checkpoint": (context.checkpoint or {}).get("id"),
        "output": case.get("output"), "error": case.get("error"), "score": case.get("score"),
        "passed": case.get("passed"), "latency_ms": case.get("latency_ms"), "cost_usd": case.get("cost_usd"),
        "cache": case.get("cache"), **score_columns(case.get("scores") or []),
    }
    with open(context.output, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(as_unicode(record), ensure_ascii=False, default=str) + "\n")
    return f"wrote 1 trace line to {context.output}"


def _case_ids(context: StepContext) -> JSONObject:
    return {**context.ids, "arm": context.extra.get("config_label", context.ids.get("arm_id"))}


def score_columns(scores: Sequence[object]) -> JSONObject:
    """``score.<evaluator>``: each evaluator's score, as a column (a dataframe's metric)."""
    return {f"score.{s['evaluator']}": s.get("score") for s in scores if isinstance(s, dict) and "evaluator" in s}


#: The built-ins that read the recorded case: only a case ``post`` step has one.
CASE_STEPS = ("write_trace", "eval", "trace_stats")


def _case_of(context: StepContext, step: str) -> JSONObject:
    if context.case is None:
        raise StepFailed(f"{step} runs as a case post step (hooks.case.post)")
    return context.case


def check_eval(config: JSONObject, project_root: Path, *, run_code: bool = True) -> list[Evaluator]:
    """``config.evaluators`` built, what an ``eval`` step scores with; ``run_code`` false: their
    ``python:`` code checked in its source, not imported (the check before anything runs)."""
    specs = config.get("evaluators")
    if not isinstance(specs, list) or not specs:
        raise StepFailed("eval: config.evaluators needs a list of evaluators, as the manifest's 'evaluators'")
    from evalsite.scoring.evaluators import build_evaluators

    try:
        return build_evaluators(specs, project_root, run_code=run_code)
    except EvaluatorError as exc:
        raise StepFailed(f"eval: config.{exc.message}") from None


@register_step("eval")
def eval_step(context: StepContext) -> str:
    case = _case_of(context, "eval")
    evaluators = check_eval(context.config, context.project_root)
    from evalsite.calls.context import UNBOUNDED
    from evalsite.scoring.case import score_case, scoring_cost
    from evalsite.scoring.evaluators import CaseView

    view = CaseView(
        input=case.get("input"), output=case.get("output"), expected=case.get("expected"),
        row=context.extra.get("row") or {}, latency_ms=case.get("latency_ms"), cost_usd=case.get("cost_usd"),
        turn_outputs=case.get("turn_outputs"), transcript=case.get("transcript"),
        calls=context.extra.get("calls") or UNBOUNDED,
    )
    scored = asyncio.run(score_case(evaluators, view, case.get("error")))  # the step's own thread and loop
    scores = [score.to_json() for score in scored.scores]
    record = {**_case_ids(context), "score": scored.score, "passed": scored.passed,
              "scoring_cost_usd": scoring_cost(scored.scores), **score_columns(scores), "scores": scores}
    output = context.output or context.level_dir / "eval.json"
    output.write_text(json.dumps(as_unicode(record), ensure_ascii=False, indent=2, default=str) + "\n", encoding="utf-8")
    return f"scored the case with {len(evaluators)} evaluators into {output}"


@register_step("trace_stats")
def trace_stats(context: StepContext) -> str:
    case = _case_of(context, "trace_stats")
    messages = [m for m in _conversation(case) if isinstance(m, dict)]
    roles = [m.get("role") for m in messages]
    calls = sum(len(tool_calls) for tool_calls in (m.get("tool_calls") for m in messages) if isinstance(tool_calls, list))
    row = {
        **_case_ids(context), "messages": len(messages), "user_turns": roles.count("user"),
        "assistant_messages": roles.count("assistant"), "tool_calls": calls, "tool_results": roles.count("tool"),
        **{key: case.get(key) for key in ("input_tokens", "output_tokens", "latency_ms", "cost_usd", "attempts")},
        "output_chars": len(case["output"]) if isinstance(case.get("output"), str) else None,
        "error": case.get("error") is not None,
    }
    output = context.output or context.level_dir / "trace_stats.csv"
    write_rows(output, [row])
    return f"wrote the case's trace statistics to {output}"


def _conversation(case: JSONObject) -> list[JSONValue]:
    """The case's messages: its transcript, else its input (a text is one user message) and its output."""
    recorded, sent = case.get("transcript"), case.get("input")
    if isinstance(recorded, list):
        return recorded
    asked = sent if isinstance(sent, list) else [{"role": "user", "content": sent}]
    answered = case.get("output")
    return [*asked, {"role": "assistant", "content": answered}] if answered is not None else asked


@register_step("gather")
def gather(context: StepContext) -> str:
    if context.output is None:
        raise StepFailed("gather needs an 'out' artifact to write")
    rows = [row for path in context.inputs for row in read_rows(path)]
    write_rows(context.output, rows)
    return f"gathered {len(rows)} rows from {len(context.inputs)} files into {context.output}"


def read_rows(path: Path) -> list[JSONObject]:
    """The rows of one artifact file: JSONL lines, a JSON object (one row), CSV or Parquet."""
    if not path.is_file():
        raise StepFailed(f"{path}: no such file (a child instance did not write it)")
    suffix = path.suffix.lower()
    try:
        if suffix == ".jsonl":
            return _objects(path, [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
                                   if line.strip()])
        if suffix == ".json":
            value = json.loads(path.read_text(encoding="utf-8"))
            return _objects(path, value if isinstance(value, list) else [value])
        if suffix == ".parquet":
            import pyarrow.parquet as pq

            table: list[JSONObject] = pq.read_table(path).to_pylist()  # pyarrow has no type hints
            return table
        with open(path, newline="", encoding="utf-8") as handle:
            return [_typed(row) for row in csv.DictReader(handle)]
    except (ValueError, OSError) as exc:
        raise StepFailed(f"{path}: cannot read: {exc}") from None


def _objects(path: Path, values: list[JSONValue]) -> list[JSONObject]:
    """``values`` when each is a JSON object (a row), else the first that is not, named."""
    rows: list[JSONObject] = []
    for number, value in enumerate(values, start=1):
        if not isinstance(value, dict):
            raise StepFailed(f"{path}: row {number} is a {type(value).__name__}, not a JSON object")
        rows.append(value)
    return rows


def _typed(row: dict[str, str | None]) -> JSONObject:
    """CSV cells back to numbers, booleans and nulls where they read as such."""
    typed: JSONObject = {}
    for key, text in row.items():
        if text in ("", None):
            typed[key] = None
        elif text in ("True", "False"):
            typed[key] = text == "True"
        else:
            try:
                typed[key] = float(text) if any(c in text for c in ".eE") or text.lower() in ("nan", "inf") \
                    else int(text)
            except ValueError:
                typed[key] = text
    return typed


def write_rows(path: Path, rows: list[JSONObject]) -> None:
    columns = list(dict.fromkeys(key for row in rows for key in row))
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist([{c: _cell(row.get(c)) for c in columns} for row in rows]), path)
        return
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows({c: _cell(row.get(c)) for c in columns} for row in rows)


def _cell(value: object) -> object:
    return json.dumps(value, ensure_ascii=False) if isinstance(value, (dict, list)) else value


#: The built-ins that draw bootstrap intervals: their ``config`` is checked before anything runs.
INTERVAL_STEPS = ("bootstrap_ci", "plot")


def interval_config(config: JSONObject, step: str) -> tuple[list[str], int, float]:
    """The metrics (``config.metrics``; a ``plot``'s one ``config.metric``), ``config.seed`` and
    ``config.confidence`` of an interval step, or :class:`StepFailed` naming the key."""
    key = "metric" if step == "plot" else "metrics"
    given = config.get(key, "score" if step == "plot" else ["score"])
    metrics = ([given] if isinstance(given, str) else None) if step == "plot" else given
    if not (isinstance(metrics, list) and metrics and all(isinstance(m, str) and m for m in metrics)):
        wanted = "a column name" if step == "plot" else "a list of column names"
        raise StepFailed(f"{step}: config.{key}: needs {wanted}, got {given!r}")
    seed = config.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise StepFailed(f"{step}: config.seed: needs a whole number of at least 0, got {seed!r}")
    confidence = config.get("confidence", 0.95)
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0 < confidence < 1:
        raise StepFailed(f"{step}: config.confidence: needs a number between 0 and 1 (exclusive), got {confidence!r}")
    return metrics, seed, float(confidence)


@register_step("bootstrap_ci")
def bootstrap_ci(context: StepContext) -> str:
    summary = arm_intervals(context, "bootstrap_ci")
    output = context.output or context.level_dir / "ci_summary.csv"
    write_rows(output, summary)
    return f"wrote {len(summary)} intervals to {output}"


def arm_intervals(context: StepContext, step: str) -> list[JSONObject]:
    """From the dataframes of ``in``, per arm and metric: the mean of item means and its bootstrap
    interval (items and repeats resampled; ``config.seed``, ``config.confidence``)."""
    metrics, seed, confidence = interval_config(context.config, step)
    rows = [row for path in context.inputs for row in read_rows(path)]
    import numpy as np  # numpy and scipy only when this step runs, not with every run

    from evalsite.stats import bootstrap_ci

    summary: list[JSONObject] = []
    for arm in dict.fromkeys(str(row.get("arm")) for row in rows):
        mine = [row for row in rows if str(row.get("arm")) == arm]
        for metric in metrics:
            matrix = _item_matrix(mine, metric)
            if matrix is None:
                continue
            values = matrix[:, 0] if matrix.shape[1] == 1 else matrix  # one repeat: the items' own interval
            interval = bootstrap_ci(values, seed=seed, confidence=confidence)
            summary.append({"arm": arm, "metric": metric, "mean": float(np.nanmean(np.nanmean(matrix, axis=1))),
                            "ci_low": interval.low, "ci_high": interval.high, "items": matrix.shape[0]})
    if not summary:
        raise StepFailed(f"{step}: no numeric values of {', '.join(metrics)} in {len(rows)} rows "
                         f"(need columns arm, item_id and the metric)")
    return summary


@register_step("plot")
def plot(context: StepContext) -> str:
    output = context.output
    if output is None or output.suffix.lower() != ".svg":
        raise StepFailed("plot needs an 'out' artifact of type plot whose path ends in .svg (it draws SVG, not PNG)")
    (metric,), _, confidence = interval_config(context.config, "plot")
    summary = arm_intervals(context, "plot")
    estimates = [Estimate(row["arm"], row["mean"], row["ci_low"], row["ci_high"]) for row in summary]
    title = str(context.config.get("title") or f"{metric}: mean and {confidence:.0%} bootstrap interval per arm")
    output.write_text(interval_chart(estimates, title, metric), encoding="utf-8")
    return f"drew {len(estimates)} arms' {metric} into {output}"


def _item_matrix(rows: list[JSONObject], metric: str) -> np.ndarray | None:
    """Items × repeats (NaN where an item has fewer repeats); ``None`` when the metric is absent."""
    by_item: dict[str, list[float]] = {}
    for row in rows:
        value = row.get(metric)
        if isinstance(value, bool):
            value = float(value)
        if isinstance(value, (int, float)) and not math.isnan(value):
            by_item.setdefault(str(row.get("item_id")), []).append(float(value))
    if not by_item:
        return None
    import numpy as np

    width = max(len(values) for values in by_item.values())
    return np.array([values + [math.nan] * (width - len(values)) for values in by_item.values()])


@register_step("validate_outputs")
def validate_outputs(context: StepContext) -> str:
    schema = context.config.get("schema") or context.extra.get("output_schema")
    if not schema:
        raise StepFailed("validate_outputs: no output_schema in the manifest (nor config.schema on the step)")
    root = context.level_dir
    problems = [f"output_schema: required file {name!r} is missing from {root}"
                for name in schema.get("required_files", []) if not (root / name).is_file()]
    for name, columns in (schema.get("required_columns") or {}).items():
        path = root / name
        if not path.is_file():
            problems.append(f"output_schema: required file {name!r} is missing from {root}")
            continue
        present = _columns(path)
        problems += [f"output_schema: {name} has no column {column!r} (columns: {', '.join(present)})"
                     for column in columns if column not in present]
    if problems:
        raise StepFailed("; ".join(dict.fromkeys(problems)))
    return f"output_schema holds in {root}"


def _columns(path: Path) -> list[str]:
    if path.suffix.lower() == ".parquet":
        import pyarrow.parquet as pq

        return list(pq.read_schema(path).names)
    with open(path, newline="", encoding="utf-8") as handle:
        return next(csv.reader(handle), [])
