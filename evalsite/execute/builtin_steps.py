"""The built-in steps: ``write_trace``, ``gather``, ``bootstrap_ci`` and ``validate_outputs``.

Each is registered with :func:`register_step` in :data:`STEPS` (where an installed package's
``evalsite.steps`` entry point adds its own), takes a step context (``evalsite.execute.hooks.StepContext``), writes what it says, returns
a line for the step's log, and raises :class:`StepFailed` with one line naming the culprit.

* ``write_trace`` (a case ``post``): the case as one JSON line (ids, config, checkpoint, output,
  error, score, passed, latency, cost, cache mark, ``score.<evaluator>`` per evaluator) into ``out``.
* ``gather``: every child instance of ``in`` (JSONL lines, a JSON object, CSV or Parquet rows) into
  one dataframe ``out`` (CSV, or Parquet when its path ends in ``.parquet``).
* ``bootstrap_ci``: from the dataframes of ``in``, per ``arm`` and metric (``config.metrics``,
  default ``score``), the mean of item means and its bootstrap interval (items and repeats
  resampled, :func:`evalsite.stats.bootstrap_ci`) into ``out`` or ``<level_dir>/ci_summary.csv``.
* ``validate_outputs``: the manifest's ``output_schema`` (or ``config.schema``) checked against
  the level folder: every required file exists, every required column is in its file.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from evalsite.errors import ManifestError
from evalsite.registry import Registry

if TYPE_CHECKING:
    import numpy as np


class StepFailed(Exception):
    """A built-in step's one-line failure."""


Step = Callable[..., "str | None"]  # (context) -> a line for the step's log, or None
STEPS: Registry[Step] = Registry("builtin step", "evalsite.steps", ManifestError, unknown_as="builtin")


def register_step(name: str, *, replace: bool = False) -> Callable[[Step], Step]:
    """Register ``step(context)`` as the builtin ``name`` (a manifest's ``builtin: name``), the
    built-ins' way too; a taken name is refused unless ``replace``."""

    def decorate(step: Step) -> Step:
        return STEPS.register(name, step, replace=replace)

    return decorate


@register_step("write_trace")
def write_trace(context) -> str:
    case = context.case
    if case is None or context.output is None:
        raise StepFailed("write_trace runs as a case post step with an 'out' artifact")
    record = {
        **context.ids, "arm": context.extra.get("config_label", context.ids.get("arm_id")),
        "checkpoint": (context.checkpoint or {}).get("id"),
        "output": case.get("output"), "error": case.get("error"), "score": case.get("score"),
        "passed": case.get("passed"), "latency_ms": case.get("latency_ms"), "cost_usd": case.get("cost_usd"),
        "cache": case.get("cache"),
        **{f"score.{s['name']}": s.get("score") for s in case.get("scores") or [] if "name" in s},
    }
    with open(context.output, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
    return f"wrote 1 trace line to {context.output}"


@register_step("gather")
def gather(context) -> str:
    if context.output is None:
        raise StepFailed("gather needs an 'out' artifact to write")
    rows = [row for path in context.inputs for row in read_rows(path)]
    write_rows(context.output, rows)
    return f"gathered {len(rows)} rows from {len(context.inputs)} files into {context.output}"


def read_rows(path: Path) -> list[dict]:
    """The rows of one artifact file: JSONL lines, a JSON object (one row), CSV or Parquet."""
    if not path.is_file():
        raise StepFailed(f"{path}: no such file (a child instance did not write it)")
    suffix = path.suffix.lower()
    try:
        if suffix == ".jsonl":
            return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        if suffix == ".json":
            value = json.loads(path.read_text(encoding="utf-8"))
            return value if isinstance(value, list) else [value]
        if suffix == ".parquet":
            import pyarrow.parquet as pq

            return pq.read_table(path).to_pylist()
        with open(path, newline="", encoding="utf-8") as handle:
            return [_typed(row) for row in csv.DictReader(handle)]
    except (ValueError, OSError) as exc:
        raise StepFailed(f"{path}: cannot read: {exc}") from None


def _typed(row: dict) -> dict:
    """CSV cells back to numbers, booleans and nulls where they read as such."""
    typed: dict = {}
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


def write_rows(path: Path, rows: list[dict]) -> None:
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


def _cell(value):
    return json.dumps(value, ensure_ascii=False) if isinstance(value, (dict, list)) else value


@register_step("bootstrap_ci")
def bootstrap_ci(context) -> str:
    rows = [row for path in context.inputs for row in read_rows(path)]
    metrics = context.config.get("metrics") or ["score"]
    import numpy as np  # numpy and scipy only when this step runs, not with every run

    from evalsite.stats import bootstrap_ci

    summary = []
    for arm in dict.fromkeys(str(row.get("arm")) for row in rows):
        mine = [row for row in rows if str(row.get("arm")) == arm]
        for metric in metrics:
            matrix = _item_matrix(mine, metric)
            if matrix is None:
                continue
            values = matrix[:, 0] if matrix.shape[1] == 1 else matrix  # one repeat: the items' own interval
            interval = bootstrap_ci(values, seed=int(context.config.get("seed", 0)),
                                    confidence=float(context.config.get("confidence", 0.95)))
            summary.append({"arm": arm, "metric": metric, "mean": float(np.nanmean(np.nanmean(matrix, axis=1))),
                            "ci_low": interval.low, "ci_high": interval.high, "items": matrix.shape[0]})
    if not summary:
        raise StepFailed(f"bootstrap_ci: no numeric values of {', '.join(metrics)} in {len(rows)} rows "
                         f"(need columns arm, item_id and the metric)")
    output = context.output or context.level_dir / "ci_summary.csv"
    write_rows(output, summary)
    return f"wrote {len(summary)} intervals to {output}"


def _item_matrix(rows: list[dict], metric: str) -> np.ndarray | None:
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
def validate_outputs(context) -> str:
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
