"""Experiment pages: ``experiments/<name>.html`` and the pages of its arm × item matrix.

The page shows the manifest (its description rendered from markdown, raw HTML escaped), the arms
with their resolved configs from run.json, score-against-parameter charts for swept numeric
parameters, and the arm × item matrix of the newest comparable group of runs: per-row winners,
rows where the arms' outputs diverge, cells whose output differs from the row's majority, and a
word diff of any two arms' outputs beside the item's input and expected value. The matrix's rows are
data scripts (``data/experiments/<name>/matrix-<n>.js``) drawn, filtered and paged by
``static/matrix.js``; its header, legend and aggregate row are HTML; the diff loads the outputs
from the runs' own data scripts, so the matrix carries no copy of them.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

import yaml
from markupsafe import Markup

from evalsite.analysis import Selection, comparable_groups
from evalsite.analysis.dataset_versions import OLDER
from evalsite.analysis.matrix import MIN_LEAD, check_comparable, decide_rows
from evalsite.analysis.selection import ArmRun
from evalsite.analysis.verdict import sequence_text
from evalsite.errors import EvalsiteError, NotComparableError
from evalsite.experiment.bounded_yaml import load_yaml
from evalsite.runlog.store import Run
from evalsite.site import charts, paths
from evalsite.site.artifacts import ArtifactLink, experiment_artifacts
from evalsite.site.drift import drift_variant, experiment_drift, experiment_status
from evalsite.site.inputs import ExperimentSource, ProjectInputs
from evalsite.site.matrixdata import matrix_scripts
from evalsite.site.pages import Kit, PageContext, PageJob, doc
from evalsite.site.pages.common import dataset_link, run_link, runs_by, runs_table
from evalsite.site.pages.datasets import bounds, describe, places_text
from evalsite.site.pages.runs import flatten
from evalsite.site.safe_text import markdown
from evalsite.site.settings import SiteSettings
from evalsite.site.tables import Link, ShownInterval, Table


@dataclass(kw_only=True)
class ArmConfig:
    """An arm of the matrix and its resolved config."""

    label: str = doc("The arm as the matrix names it.")
    run: Link = doc("Link to the run the matrix uses for this arm.")
    config_id: str | None = doc("Hash of the resolved config.")
    config_json: str = doc("The resolved config (from run.json) as indented JSON.")
    edited: bool = doc("True when the manifest no longer produces this config (edited since this run).", False)
    submitted_json: str | None = doc("The arm as written in the manifest its run was started from (with the manifest's prompt and sweep, before extends, sweeps, --set and `latest` were resolved), as indented JSON; None when the run recorded no manifest.", None)


@dataclass(kw_only=True)
class ArmTotal:
    """One arm over every item of the matrix (the leaderboard's figures for the group)."""

    arm: str = doc("Arm label.")
    mean: ShownInterval | None = doc("Mean score with the verdict's bootstrap interval (over clusters when items declare them).")
    rank: str = doc("The arm's places in the verdict: 1, or a range (2–3) where the paired tests do not separate it.")
    latency_p50: float | None = doc("Median latency, ms.")
    cost_per_case: float | None = doc("Total cost / cases; None when unknown.")
    best: bool = doc("The leaderboard's first arm, when the paired tests separate it from every other (its places are 1 alone).")
    fastest: bool = doc("The lowest median latency of the arms.")
    cheapest: bool = doc("The lowest known cost per case of the arms.")


@dataclass(kw_only=True)
class SequenceView:
    """One pair of a ``stop_when`` batch: its anytime-valid sequence look by look."""

    phrase: str = doc("The verdict's sentence for the pair: 'decided after 240 of 1,000 items (anytime-valid, α 0.05): A > B by …'.")
    chart: Markup = doc("The sequence's interval at each look narrowing (inline SVG), the stopping look marked.")


@dataclass(kw_only=True)
class Matrix:
    """The arm × item matrix: HTML header, legend and aggregate row; rows in data scripts."""

    arms: list[str] = doc("Arm labels in column order (best mean first).")
    totals: list[ArmTotal] = doc("The aggregate row: each arm over every item, with the overall winners.", default_factory=list)
    comparable: str = doc("What the runs of the matrix share (dataset, evaluator versions).")
    items: int = doc("Rows (items) in the matrix.")
    divergent: int = doc("Rows where the arms' outputs differ.")
    parts: list[str] = doc("Site-root-relative paths of the data scripts holding the rows: item, bucket, divergence, and per cell score, verdict, tint, flags, latency, tokens and cost.")
    runs_json: str = doc("The columns' runs as JSON (label, data folder), for the diff to load each arm's output.")
    item_pages: str | None = doc("Site-root-relative folder of the dataset's item pages.")
    page_size: int = doc("Rows per page ([site] items_per_page).")


@dataclass(kw_only=True)
class ExperimentPage(PageContext):
    """``experiments/<name>.html``."""

    name: str = doc("Experiment name.")
    manifest_path: str | None = doc("The manifest file, relative to the project root (None when only runs remain).")
    manifest_text: str = doc("The manifest as written (the current file, else the newest run's copy).")
    manifest_error: str | None = doc("Why the manifest could not be parsed, if it could not.")
    description: Markup = doc("The manifest's description rendered from markdown (raw HTML escaped).")
    datasets: list[Link | str] = doc("Links to the leaderboards of the datasets the experiment's runs used.")
    arms: list[ArmConfig] = doc("The arms of the matrix with their resolved configs.")
    sweeps: list[Markup] = doc("Score against each swept numeric parameter (inline SVG), when configs differ in one.")
    matrix: Matrix | None = doc("First page of the arm × item matrix; None without a completed scored run.")
    matrix_note: str = doc("Why there is no matrix although there are runs (evalsite.analysis.matrix refused them), if so.")
    other_groups: list[str] = doc("Comparable groups of this experiment's runs that the matrix does not show.")
    runs: Table = doc("Every run of the experiment, newest first (excluded runs left out; runs.html lists them, marked).")
    artifacts: list[ArtifactLink] = doc("The newest batch's experiment-level artifacts copied beside the page (name, type, href, inline for plots); none with redact.", default_factory=list)
    status: str = doc("The experiment's status from each arm's latest run: not run, unfinished, failed, edited or completed.", "")
    edited: list[str] = doc("Arms whose latest run the current manifest would no longer produce (edited since this run).", default_factory=list)
    not_run: list[str] = doc("Arms of the manifest with no run yet.", default_factory=list)
    drift_problem: str | None = doc("Why the manifest could not be planned to check for edits, if so.", None)
    dataset_version: str = doc("Which version of its file the matrix's dataset is: 'current version of data/x.jsonl' (its hash matches the file now) or 'older version of data/x.jsonl (the file has changed since)'; empty without a comparable group.", "")
    current: bool = doc("False when the matrix's dataset is an older version of its file.", True)
    sequences: list[SequenceView] = doc("When the matrix's runs stopped by stop_when: each pair's confidence sequence look by look (the verdict's).", default_factory=list)


def jobs(inputs: ProjectInputs, settings: SiteSettings) -> list[PageJob]:
    by_name = runs_by(inputs.runs, lambda run: run.header.experiment)
    result = []
    for name in sorted(set(by_name) | set(inputs.experiments)):
        members = by_name.get(name, [])
        ids = tuple(r.run_id for r in members)
        keys = ("decisions", *inputs.summary_keys(ids))  # an excluded run leaves the matrix and its leaderboard
        keys += (f"experiment:{name}",) if name in inputs.experiments else ()
        drift = experiment_drift(inputs, name)
        versions = sorted({f"{r.header.dataset.dataset_id}:{inputs.dataset_versions.of(r.header.dataset).state}" for r in members})
        result.append(PageJob(f"experiment:{name}", keys, _renderer(name, members, inputs.experiments.get(name)),
                          figures=ids, matrix_of=ids, variant=drift_variant(drift) + "|" + ",".join(versions)))
    return result


@dataclass
class _GroupView:
    """What the page shows of the experiment's newest comparable group."""

    arms: list[ArmConfig]
    labels: list[str]
    comparable: str
    matrix: Matrix | None
    sweeps: list[Markup]
    matrix_note: str = ""
    totals: list[ArmTotal] = field(default_factory=list)
    files: dict[str, bytes] = field(default_factory=dict)


def experiment_groups(inputs: ProjectInputs, members: list[Run]) -> list[Selection]:
    """The comparable groups of an experiment's runs (analysis rules, per dataset), newest run first."""
    ids = {run.run_id for run in members}
    groups = [group for dataset_id in sorted({r.header.dataset.dataset_id for r in members if r.header.dataset.dataset_id})
              for group in comparable_groups(inputs.database, dataset_id, only_runs=ids).groups]
    return sorted(groups, key=lambda g: max((arm.started_at or "", arm.run_id) for arm in g.arms), reverse=True)


def arm_means(inputs: ProjectInputs, selection: Selection) -> dict[str, ShownInterval]:
    """Run id → the arm's mean with its interval over the items the group shares (empty when it shares none)."""
    try:
        board = inputs.leaderboard(selection)
    except EvalsiteError:
        return {}
    return {arm.summary.arm.run_id: ShownInterval(arm.value, *bounds(arm.interval)) for arm in board.arms}


def _group_view(name: str, group: Selection, kit: Kit) -> _GroupView:
    means = arm_means(kit.inputs, group)
    def order(arm: ArmRun) -> tuple[bool, float, str]:  # best mean first; arms without one last
        value = means[arm.run_id].value if arm.run_id in means else None
        return value is None, -value if value is not None else 0.0, arm.label

    ordered = sorted(group.arms, key=order)
    runs = [kit.inputs.by_id[arm.run_id] for arm in ordered]
    label_of = {arm.run_id: arm.label for arm in ordered}
    arms = [ArmConfig(label=label_of[r.run_id], run=run_link(r), config_id=r.header.config_id,
                      config_json=json.dumps(r.header.config, indent=2, sort_keys=True, ensure_ascii=False, default=str),
                      submitted_json=submitted_config(r)) for r in runs]
    view = _GroupView(arms, [label_of[r.run_id] for r in runs], describe(group), None, sweep_charts(runs, label_of, means),
                      totals=_totals(kit.inputs, group, [r.run_id for r in runs], label_of))
    try:
        check_comparable(runs)
    except NotComparableError as exc:
        view.matrix_note = f"No matrix: {exc.message}."
        return view
    parts = [kit.matrix_parts[run.run_id] for run in runs]
    marks = decide_rows([part.column for part in parts])
    view.files = matrix_scripts(name, marks, parts)
    dataset_id = runs[0].header.dataset.dataset_id
    view.matrix = Matrix(
        arms=view.labels, totals=view.totals, comparable=view.comparable, items=len(marks.item_ids),
        divergent=int(marks.divergent.sum()), parts=list(view.files),
        runs_json=json.dumps([{"label": label_of[r.run_id], "folder": paths.run_data_index(r.run_id).removesuffix("index.js")}
                              for r in runs], ensure_ascii=False),
        item_pages=paths.items_folder(dataset_id) if dataset_id else None, page_size=kit.settings.items_per_page)
    return view


def _totals(inputs: ProjectInputs, group: Selection, order: list[str], labels: dict[str, str]) -> list[ArmTotal]:
    """The aggregate row from the group's leaderboard (empty when it has none), in the matrix's column order."""
    try:
        board = inputs.leaderboard(group)
    except EvalsiteError:
        return []
    ranked = {arm.summary.arm.run_id: arm for arm in board.arms}
    fastest = _clear_leader({r: a.summary.latency.p50_ms for r, a in ranked.items()}, MIN_LEAD["latency_ms"])
    cheapest = _clear_leader({r: a.summary.cost.per_case for r, a in ranked.items()}, MIN_LEAD["cost_usd"])
    return [ArmTotal(
        arm=labels[run_id], mean=ShownInterval(a.value, *bounds(a.interval)), rank=places_text(a),
        latency_p50=a.summary.latency.p50_ms, cost_per_case=a.summary.cost.per_case,
        best=len(ranked) > 1 and a.places == (1, 1), fastest=run_id == fastest, cheapest=run_id == cheapest,
    ) for run_id in order if (a := ranked.get(run_id)) is not None]


def _sequences(inputs: ProjectInputs, group: Selection) -> list[SequenceView]:
    """Each pair's sequence as the verdict read it (none unless the group's runs stopped by stop_when)."""
    try:
        verdict = inputs.leaderboard(group).verdict
    except EvalsiteError:
        return []
    views = []
    for pair in verdict.pairs:
        if pair.sequence is None:
            continue
        looks = [(look.items, look.low, look.high) for look in pair.sequence.looks]
        stop = f"stopped: {pair.sequence.decision or 'not decided'}"
        views.append(SequenceView(phrase=sequence_text(pair), chart=charts.sequence_chart(
            looks, stop=pair.sequence.items_used, margin=pair.sequence.margin, stop_label=stop,
            title=f"{pair.ahead_label} − {pair.behind_label}: anytime-valid sequence by look")))
    return views


def _clear_leader(values: dict[str, float | None], lead: tuple[float, float]) -> str | None:
    """The run with the lowest value when it leads the next by the matrix's meaningful lead (``MIN_LEAD``)."""
    known = sorted((v, r) for r, v in values.items() if v is not None)
    if len(known) < 2:
        return None
    (best, run_id), (runner_up, _) = known[0], known[1]
    absolute, share = lead
    return run_id if runner_up - best >= max(absolute, share * runner_up, 1e-12) else None


def _renderer(name: str, members: list[Run], source: ExperimentSource | None) -> Callable[[Kit], dict[str, bytes]]:
    def render(kit: Kit) -> dict[str, bytes]:
        groups = experiment_groups(kit.inputs, members)
        view = _group_view(name, groups[0], kit) if groups else _GroupView([], [], "", None, [])
        text, origin = _manifest_text(source, members)
        description, error = _description(text)
        files: dict[str, bytes] = dict(view.files)
        listed = kit.inputs.listed(members)  # an excluded run is shown only on its page and in the runs table
        context = ExperimentPage(
            title=f"Experiment {name}",
            name=name,
            manifest_path=origin,
            manifest_text=text,
            manifest_error=error,
            description=description,
            datasets=[dataset_link(d) for d in sorted({r.header.dataset.dataset_id for r in listed if r.header.dataset.dataset_id})],
            arms=view.arms,
            sweeps=view.sweeps,
            matrix=view.matrix,
            matrix_note=view.matrix_note,
            other_groups=[describe(g) for g in groups[1:]],
            runs=runs_table("runs", listed, kit.figures),
        )
        batches = list(dict.fromkeys(r.header.batch_id for r in sorted(
            members, key=lambda r: r.header.started_at or "", reverse=True) if r.header.batch_id))
        context.artifacts, copies = experiment_artifacts(kit.inputs.project.root, name, batches, kit.settings.redact)
        files.update(copies)
        drift = experiment_drift(kit.inputs, name)
        context.status = experiment_status(listed, drift)  # as the home page's experiments table says
        context.edited = sorted(r.header.arm_id or r.run_id for r in listed if r.run_id in drift.edited)
        context.not_run, context.drift_problem = list(drift.not_run), drift.problem
        for arm in context.arms:
            arm.edited = arm.run.text in drift.edited
        if groups:
            context.sequences = _sequences(kit.inputs, groups[0])
            version = kit.inputs.dataset_versions.of(groups[0].arms[0].header.dataset)
            context.dataset_version, context.current = version.label, version.state != OLDER
        files.update(kit.page(paths.experiment(name), "experiment.html", context))
        return files

    return render


def submitted_config(run: Run) -> str | None:
    """The run's arm as its submitted manifest (run.json ``submitted_manifest``) wrote it, with the
    manifest's ``prompt`` and ``sweep``; None when the run recorded no manifest or it cannot be read."""
    text = run.header.submitted_manifest
    try:
        data = load_yaml(text) if isinstance(text, str) else None
    except yaml.YAMLError:
        return None
    if not isinstance(data, dict):
        return None
    arms = data.get("arms")
    entry = next((arm for arm in arms if isinstance(arm, dict) and arm.get("id") == run.header.arm_id), None) \
        if isinstance(arms, list) else None
    if entry is None:
        return None
    written = {"arm": entry, **{key: data[key] for key in ("prompt", "sweep") if key in data}}
    return json.dumps(written, indent=2, sort_keys=True, ensure_ascii=False, default=str)


def _manifest_text(source: ExperimentSource | None, members: list[Run]) -> tuple[str, str | None]:
    if source is not None:
        return source.text, source.path.parent.name + "/" + source.path.name
    newest = max(members, key=lambda r: r.recency, default=None)
    text = newest.header.submitted_manifest if newest else None
    return (text if isinstance(text, str) else ""), None


def _description(text: str) -> tuple[Markup, str | None]:
    try:
        data = load_yaml(text) if text else {}
    except yaml.YAMLError as exc:
        return Markup(""), f"not valid YAML/JSON: {str(exc).splitlines()[0]}"
    description = data.get("description") if isinstance(data, dict) else None
    return markdown(description if isinstance(description, str) else ""), None


def sweep_charts(runs: list[Run], labels: dict[str, str], means: dict[str, ShownInterval]) -> list[Markup]:
    """One chart per numeric parameter whose value differs between the configs."""
    params = {r.run_id: dict(flatten(r.header.config.get("params") or {})) for r in runs}
    keys = sorted({k for p in params.values() for k in p})
    result = []
    for key in keys:
        values = {rid: _as_number(p.get(key)) for rid, p in params.items()}
        present = {rid: v for rid, v in values.items() if v is not None}
        if len(set(present.values())) < 2:
            continue
        series: dict[str, list[charts.Point]] = defaultdict(list)
        for run in runs:
            if run.run_id not in present:
                continue
            rest = json.dumps({k: v for k, v in params[run.run_id].items() if k != key}, sort_keys=True)
            interval = means.get(run.run_id)
            if interval is None or interval.value is None:
                continue
            series[rest].append(charts.Point(labels[run.run_id], present[run.run_id], interval.value, interval.low, interval.high))
        named = {" · ".join(p.label for p in points): points for points in series.values()}
        result.append(charts.line_chart(named, x_label=key, y_label="mean score", title=f"Mean score against {key}"))
    return result


def _as_number(text: str | None) -> float | None:
    try:
        value = json.loads(text) if text is not None else None
    except json.JSONDecodeError:
        return None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
