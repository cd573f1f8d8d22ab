"""lm-evaluation-harness: ``results_<ts>.json`` plus the ``samples_<task>_<ts>.jsonl`` of ``--log_samples``.

One run per model and task; one case per document; each per-document metric is a score (one per
filter when a task has several filters). Corpus-level metrics such as ``bleu`` have no
per-document value (lm-eval logs the reference/prediction pair), so they are not scores; their
run-level values stay in ``run.json`` under ``source.reported``. The field mapping is in
docs/reference/importers/lm-eval.md.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evalsite.errors import SourceError
from evalsite.execute.importers.jsonstream import TOO_DEEP, JsonLines, json_problem
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
from evalsite.runlog.store import iso

TOOL = "lm-eval"
VERSION_PREFIX = "0.4."
NO_FILTER = "none"
REQUIRED_KEYS = ("results", "configs")
CONFIG_KEYS = ("batch_size", "limit", "gen_kwargs", "random_seed", "numpy_seed", "torch_seed", "fewshot_seed")
PROMPT_KEYS = ("description", "doc_to_text", "doc_to_choice", "fewshot_config", "target_delimiter",
               "fewshot_delimiter", "gen_prefix")


@dataclass
class _TaskScores:
    """Pass one over a samples file: every document's numeric metrics, over all its filters."""

    by_doc: dict[int, list[tuple[str, float, str | None]]] = field(default_factory=lambda: defaultdict(list))
    metrics: dict[str, tuple[str, str]] = field(default_factory=dict)  # score name -> (metric, filter)
    corpus: set[str] = field(default_factory=set)
    filters: list[str] = field(default_factory=list)

    @property
    def primary(self) -> str | None:
        """The filter whose lines become cases: ``none`` (the raw answer) when present."""
        return NO_FILTER if NO_FILTER in self.filters else (self.filters[0] if self.filters else None)


def read_lmeval(source: SourceImport, options: ImportOptions) -> None:
    results = _load_results(source)
    stamp = source.path.stem.removeprefix("results_")
    arm = _arm(results, source, options)
    for task, task_config in results["configs"].items():
        if not isinstance(task_config, dict):
            raise SourceError(f"{source.label}: configs[{task!r}] is not an object")
        samples = _samples_file(source, task, stamp)
        if not samples.is_file():
            raise SourceError(f"{source.label}: no {samples.name} beside it; lm-eval writes per-document "
                              "samples only when run with --log_samples")
        source.add_file(samples)
        scores = _scan(samples, task_config)
        lines = JsonLines(samples)
        documents = 0
        for number, line in lines:
            if str(line.get("filter", NO_FILTER)) == scores.primary:
                source.add_case(_case(line, task, scores, f"{samples}: line {number}"))
                documents += 1
        if task not in source.run_keys:
            raise SourceError(f"{samples}: no documents in the samples file")
        status = _status(source, results, task, documents, lines.truncated)
        source.describe(task, _run(results, task, task_config, arm, scores, status))


def _samples_file(source: SourceImport, task: str, stamp: str) -> Path:
    """The per-document samples lm-eval wrote beside the results for ``task``."""
    try:
        return source.path.with_name(f"samples_{task}_{stamp}.jsonl")
    except ValueError:  # a task name holding a path separator names no file beside it
        raise SourceError(f"{source.label}: task name {task!r} cannot name a samples file") from None


def _load_results(source: SourceImport) -> JSONObject:
    try:
        results = mapping(json.loads(source.path.read_text(encoding="utf-8-sig")))  # not an object: no required key
    except ValueError as exc:  # syntax, encoding, or an integer past 4,300 digits
        raise SourceError(f"{source.label}: not valid JSON: {json_problem(exc)}") from None
    except RecursionError:
        raise SourceError(f"{source.label}: {TOO_DEEP}") from None
    for key in REQUIRED_KEYS:
        if not isinstance(results.get(key), dict):
            raise SourceError(f"{source.label}: no '{key}' object: not an lm-eval results_*.json file")
    version = results.get("lm_eval_version")
    if version is None:
        source.warn("no lm_eval_version field; read as lm-eval 0.4")
    elif not str(version).startswith(VERSION_PREFIX):
        raise SourceError(f"{source.label}: lm_eval_version is {version!r}; evalsite reads lm-evaluation-harness "
                          f"{VERSION_PREFIX}x results")
    return results


def _per_task(results: JSONObject, key: str, task: str) -> Any:
    """``results[key][task]`` (task names may hold dots, so no dotted path)."""
    per_task = results.get(key)
    return per_task.get(task) if isinstance(per_task, dict) else None


def _model_args(results: JSONObject) -> JSONObject:
    """``config.model_args``: a mapping in recent versions, ``key=value,…`` text in older ones."""
    args = value_at(results, "config.model_args")
    if isinstance(args, str):
        return dict(part.split("=", 1) for part in args.split(",") if "=" in part)
    return args if isinstance(args, dict) else {}


def _arm(results: JSONObject, source: SourceImport, options: ImportOptions) -> str:
    if options.arm_from:
        return arm_from(results, options.arm_from, source.label)
    args = _model_args(results)
    name = results.get("model_name") or args.get("model") or args.get("pretrained") or value_at(results, "config.model")
    if not name:
        raise SourceError(f"{source.label}: model_name and config.model_args are missing; name the arm with --arm-from")
    return str(name)


def _scan(samples: Path, task_config: JSONObject) -> _TaskScores:
    scores = _TaskScores()
    declared = [m["metric"] for m in elements(task_config.get("metric_list"))
                if isinstance(m, dict) and isinstance(m.get("metric"), str)]
    for number, line in JsonLines(samples):
        doc_id = line.get("doc_id")
        if not isinstance(doc_id, int):
            raise SourceError(f"{samples}: line {number}: no integer doc_id: not an lm-eval samples file")
        filter_name = str(line.get("filter", NO_FILTER))
        if filter_name not in scores.filters:
            scores.filters.append(filter_name)
        named = [metric for metric in elements(line.get("metrics")) if isinstance(metric, str)]  # (else: no metric)
        for metric in named or [m for m in declared if m in line]:
            name = metric if filter_name == NO_FILTER else f"{metric},{filter_name}"
            value = finite_number(line.get(metric))
            if value is None:
                scores.corpus.add(name)
                continue
            scores.metrics[name] = (metric, filter_name)
            filtered = value_at(line, "filtered_resps.0")
            detail = f"filtered answer: {filtered!r}" if filter_name != NO_FILTER else None
            scores.by_doc[doc_id].append((name, value, detail))
    return scores


def _doc_input(doc: Any) -> Any:
    if isinstance(doc, dict):
        return doc["input"] if "input" in doc else {k: v for k, v in doc.items() if k != "id"}
    return doc


def _response(resps: Any) -> Any:
    """``resps`` is one list per request; a single request with a single answer becomes that answer."""
    if isinstance(resps, list) and len(resps) == 1 and isinstance(resps[0], list):
        return resps[0][0] if len(resps[0]) == 1 else resps[0]
    return resps


def _sent(arguments: Any) -> Any:
    """The first request's context: a chat template's messages arrive JSON-encoded."""
    context = value_at(arguments, "gen_args_0.arg_0")
    if isinstance(context, list) and context:
        context = context[0]
    if isinstance(context, str):
        try:
            messages = json.loads(context)
        except (ValueError, RecursionError):  # not JSON, an integer past 4,300 digits, or too deep: the text itself
            return context
        return prompt_text(messages) if isinstance(messages, list) else context
    return context


def _case(line: JSONObject, task: str, scores: _TaskScores, where: str) -> SourceCase:
    doc_id, doc = line["doc_id"], line.get("doc")
    own_id = doc.get("id") if isinstance(doc, dict) else None
    return checked_case(SourceCase(
        run=task,
        item=SourceItem(
            id=item_name(own_id, "doc.id", where) if own_id is not None else None,
            input=_doc_input(doc),
            expected=line.get("target"),
            order=doc_id,
            key=None if own_id is not None else f"doc {doc_id}",
        ),
        repeat=0,
        input=_sent(line.get("arguments")),
        output=_response(line.get("resps")),
        scores=[SourceScore(name, value, detail=detail, kind=f"lm-eval:{scores.metrics[name][0]}")
                for name, value, detail in scores.by_doc.get(doc_id, [])],
    ), where)


def _status(source: SourceImport, results: JSONObject, task: str, documents: int, truncated: bool) -> RunStatus:
    expected = optional_int(value_at(_per_task(results, "n-samples", task), "effective"))
    if truncated or (expected is not None and documents < expected):
        source.warn(f"task {task}: {documents} documents in the samples file, {expected} evaluated; "
                    "imported as an interrupted run")
        return RunStatus.INTERRUPTED
    return RunStatus.COMPLETED


def _portable(task_config: JSONObject) -> JSONObject:
    """The task config minus what names this machine's files or repeats the model's arguments."""
    portable = {k: v for k, v in task_config.items() if k not in ("metadata", "dataset_kwargs")}
    kwargs = task_config.get("dataset_kwargs")
    if isinstance(kwargs, dict):
        portable["dataset_kwargs"] = {k: v for k, v in kwargs.items() if k != "data_files"}
    portable["metadata"] = {"version": value_at(task_config, "metadata.version")}
    return portable


def _location(task_config: JSONObject) -> str | None:
    split = task_config.get("test_split") or "test"
    files = value_at(task_config, f"dataset_kwargs.data_files.{split}")
    if files is not None:
        return str(files)
    path, name = task_config.get("dataset_path"), task_config.get("dataset_name")
    return None if path is None else f"{path}/{name}" if name else str(path)


def _times(results: JSONObject) -> tuple[str | None, str | None]:
    started = finite_number(results.get("date"))
    if started is None:
        return None, None
    try:
        seconds = results.get("total_evaluation_time_seconds")
        duration = float(seconds) if seconds is not None else None
    except (TypeError, ValueError):
        duration = None
    return _as_iso(started), None if duration is None else _as_iso(started + duration)


def _as_iso(seconds: float) -> str | None:
    """A Unix time as ISO text; ``None`` past what a date can hold (or not a number: NaN)."""
    try:
        return iso(datetime.fromtimestamp(seconds, UTC))
    except (OverflowError, OSError, ValueError):
        return None


def _metric_spec(task_config: JSONObject, metric: str, filter_name: str) -> JSONObject:
    metric_list = [m for m in elements(task_config.get("metric_list")) if isinstance(m, dict) and m.get("metric") == metric]
    filters = [f for f in elements(task_config.get("filter_list")) if isinstance(f, dict) and f.get("name") == filter_name]
    return {"metric": metric_list[0] if metric_list else metric, "filter": filters[0] if filters else filter_name}


def _run(results: JSONObject, task: str, task_config: JSONObject, arm: str, scores: _TaskScores, status: RunStatus) -> SourceRun:
    version = results.get("lm_eval_version")
    config = mapping(results.get("config"))
    started, ended = _times(results)
    return SourceRun(
        arm_id=arm,
        experiment=task,
        tool=TOOL,
        tool_version=version,
        config={
            "model": config.get("model"),
            "model_args": redact(_model_args(results)),
            **{key: config.get(key) for key in CONFIG_KEYS},
            "num_fewshot": _per_task(results, "n-shot", task),
            "fewshot_as_multiturn": results.get("fewshot_as_multiturn"),
            "chat_template_sha": results.get("chat_template_sha"),
            "system_instruction_sha": results.get("system_instruction_sha"),
        },
        prompt={**{key: task_config.get(key) for key in PROMPT_KEYS},
                "chat_template_sha": results.get("chat_template_sha"),
                "system_instruction": results.get("system_instruction")},
        scorers={name: {"task": task, **_metric_spec(task_config, *spec)} for name, spec in scores.metrics.items()},
        spec={"task": task, "task_version": _per_task(results, "versions", task),
              "task_config": _portable(task_config)},
        code={"commit": results.get("git_hash"), "dirty": None},
        environment={"lm_eval": version, "transformers": results.get("transformers_version")},
        status=status,
        started_at=started,
        ended_at=ended,
        dataset_location=_location(task_config),
        reported={
            "metrics": _per_task(results, "results", task),
            "n_samples": _per_task(results, "n-samples", task),
            "higher_is_better": _per_task(results, "higher_is_better", task),
            "corpus_metrics": sorted(scores.corpus),
        },
        ids={"task_hash": _per_task(results, "task_hashes", task)},
    )
