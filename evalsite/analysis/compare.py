"""Comparability rules and ``evalsite compare``: fingerprint diff first, then the regression
report against the resolved baseline, and the CI gate.

Two runs are comparable when they ask the same questions (the fingerprint's ``inputs_id``: the
same dataset, or the same dataset with expected values edited, handled item by item) and score
them with the same evaluators (type, version, judge model, weight and threshold). Every other
difference (model, prompt, params, code, environment) is what is being compared, and is listed.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields, is_dataclass
from typing import Any

import numpy as np

from evalsite.analysis.baselines import NONE, PROMOTED, BaselineChoice, resolve_baseline
from evalsite.analysis.case_columns import CaseColumns
from evalsite.analysis.case_scan import ScannedCases, scan_cases
from evalsite.analysis.items import may_hold_metadata
from evalsite.analysis.json_data import Tabular
from evalsite.analysis.metadata import cluster_key, dataset_labels
from evalsite.analysis.regression import THRESHOLD, RegressionReport, regression_report
from evalsite.analysis.stopped import sequential_regression
from evalsite.analysis.wording import count_of, p_clause
from evalsite.errors import EvalsiteError, NotComparableError
from evalsite.project import Project
from evalsite.runlog.decisions import Decision
from evalsite.runlog.fingerprint import FieldDiff, diff_fingerprints
from evalsite.runlog.records import RunHeader
from evalsite.runlog.store import Run, open_run, resolve_run

ALPHA = 0.05
PROMOTED_ONLY = "promoted"  # --baseline promoted: the arm's promoted baseline, never the prior run
SCORING_KEYS = ("type", "version", "judge_model", "weight", "threshold")


@dataclass(frozen=True)
class Comparability:
    """Whether two runs may be compared; ``reason`` says why not; ``differences`` are the fingerprint
    fields that differ (for comparable runs: what changed); ``ground_truth_edited`` when the
    questions match but some expected values do not."""

    comparable: bool
    reason: str | None
    differences: list[FieldDiff]
    ground_truth_edited: bool = False


@dataclass(frozen=True)
class GateVerdict:
    """``compare --fail-on regression``: fails only on a significant regression or a critical row newly failing."""

    failed: bool
    reasons: list[str]
    alpha: float


#: ``compare -o FILE.csv``'s columns: column -> the field of one of its ``--json`` regression items.
ITEM_COLUMNS = {"item_id": "item_id", "classification": "classification", "baseline_score": "baseline_score",
                "score": "current_score", "delta": "delta", "rescored": "rescored", "note": "note"}


@dataclass(frozen=True)
class ComparisonReport(Tabular):
    """A run against its baseline; ``table()`` has one row per item of the regression report
    (:data:`ITEM_COLUMNS`; none when the runs were not compared)."""

    TABLE_COLUMNS = ITEM_COLUMNS

    current: Run
    baseline: Run | None
    baseline_source: str
    promotion: Decision | None
    comparability: Comparability | None
    regression: RegressionReport | None
    gate: GateVerdict | None

    @property
    def sequence_text(self) -> str | None:
        """A stop_when run against its baseline: the anytime-valid sequence's sentence (else None)."""
        regression = self.regression
        if regression is None or regression.sequence is None or self.baseline is None:
            return None
        label = f"{self.current.header.arm_id} ({self.current.run_id})"
        base = f"baseline {self.baseline.header.arm_id} ({self.baseline.run_id})"
        return regression.sequence.phrase(label, base, regression.summary.mean_delta or 0.0)

    @property
    def fingerprint_diff(self) -> list[FieldDiff]:
        return self.comparability.differences if self.comparability else []

    @property
    def dataset_note(self) -> str | None:
        """Why the two sides' numbers are not the runs' own, when the dataset changed between them
        (same questions, edited expected values): None when both ran on the same dataset version."""
        if self.baseline is None or self.regression is None:
            return None
        before, after = self.baseline.header.dataset, self.current.header.dataset
        if before.dataset_id == after.dataset_id:
            return None
        s = self.regression.summary
        mean = "" if s.baseline_mean is None else f" ({s.baseline_mean:.3f})"
        note = (f"The dataset changed between the runs ({before.dataset_id} → {after.dataset_id}): same questions, "
                f"{count_of(s.rescored + s.gt_changed, 'item')} with edited expected values. ")
        if s.rescored:
            note += (f"The baseline's recorded outputs of {count_of(s.rescored, 'item')} were re-scored against the "
                     f"current expected values, so its mean here{mean} is against the new ground truth, not the one on "
                     "its run page (scored against the ground truth it ran with). ")
        if s.gt_changed:
            note += f"{count_of(s.gt_changed, 'item')} could not be re-scored and {'is' if s.gt_changed == 1 else 'are'} left out."
        return note.strip()

    def refuse_if_not_comparable(self) -> None:
        """Raise :class:`NotComparableError` (``Error: not comparable: <reason>``, exit 1) when
        the two runs may not be compared."""
        if self.comparability is not None and not self.comparability.comparable:
            raise NotComparableError(f"not comparable: {self.comparability.reason}")

    def to_json(self) -> dict[str, Any]:
        """The report as plain data; the fingerprint diff is the top-level ``fingerprint_diff``."""
        data: dict[str, Any] = {
            "current": run_reference(self.current),
            "baseline": run_reference(self.baseline) if self.baseline else None,
            "baseline_source": self.baseline_source,
            **{name: asdict(part) if part else None
               for name, part in (("promotion", self.promotion), ("comparability", self.comparability),
                                  ("gate", self.gate))},
            "regression": None if self.regression is None else _regression_data(self.regression),
        }
        if data["comparability"] is not None:
            del data["comparability"]["differences"]
        return {**data, "dataset_note": self.dataset_note, "fingerprint_diff": [asdict(d) for d in self.fingerprint_diff]}

    def _records(self, data: Any) -> Sequence[Mapping[str, Any]]:
        return list((data["regression"] or {}).get("items", []))


def _regression_data(report: RegressionReport) -> dict[str, Any]:
    """``asdict(report)``, with the item rows (100k of them at scale) made from their columns
    (:meth:`~evalsite.analysis.item_changes.ItemChanges.records`), the other fields copied."""
    return {part.name: report.items.records() if part.name == "items" else _plain(getattr(report, part.name))
            for part in fields(report)}


_ATOMS = frozenset({str, int, float, bool, type(None)})


def _plain(value: Any) -> Any:
    """What ``asdict`` makes of a field's value, with a list of plain values (an evaluator's
    100k newly failing item ids) copied in one step instead of value by value."""
    if is_dataclass(value) and not isinstance(value, type):
        return {part.name: _plain(getattr(value, part.name)) for part in fields(value)}
    if type(value) is list:
        return list(value) if all(type(v) in _ATOMS for v in value) else [_plain(v) for v in value]
    if type(value) is tuple:
        return tuple(_plain(v) for v in value)
    if type(value) is dict:
        return {_plain(k): _plain(v) for k, v in value.items()}
    return copy.deepcopy(value)  # as asdict copies anything else


def run_reference(run: Run) -> dict[str, Any]:
    """How a report names a run: id, arm, dataset, status, start and fingerprint hash."""
    header = run.header
    return {"run_id": run.run_id, "arm_id": header.arm_id, "dataset_id": header.dataset.dataset_id,
            "status": run.status, "started_at": header.started_at, "fingerprint_hash": header.fingerprint_hash}


def comparability(baseline: RunHeader, current: RunHeader) -> Comparability:
    """Decide from two run headers whether their numbers may be compared."""
    differences = diff_fingerprints(baseline.fingerprint, current.fingerprint)
    reason = _refusal(baseline, current)
    edited = reason is None and baseline.dataset.dataset_id != current.dataset.dataset_id
    return Comparability(reason is None, reason, differences, edited)


def _refusal(baseline: RunHeader, current: RunHeader) -> str | None:
    if not baseline.dataset.same_questions(current.dataset):
        return f"dataset {baseline.dataset.dataset_id} vs {current.dataset.dataset_id}"
    if baseline.emulated != current.emulated:
        return "emulated (mock) answers vs a model's" if baseline.emulated else "a model's answers vs emulated (mock) ones"
    old, new = baseline.evaluator_specs, current.evaluator_specs
    for name in sorted(old.keys() | new.keys()):
        if name not in new:
            return f"evaluator {name!r} only in the baseline"
        if name not in old:
            return f"evaluator {name!r} only in the current run"
        for key in SCORING_KEYS:
            if old[name].get(key) != new[name].get(key):
                return f"evaluator {name!r} {key} {old[name].get(key)} vs {new[name].get(key)}"
    return None


def gate(report: RegressionReport, alpha: float = ALPHA) -> GateVerdict:
    """Fail on a regression the paired test calls significant at ``alpha``, or a critical row newly
    failing; a single flipped item, or a drop the test cannot tell from chance, passes."""
    summary, reasons = report.summary, []
    if summary.p_value is not None and summary.mean_delta is not None and summary.mean_delta < 0 and summary.p_value < alpha:
        reasons.append(f"significant regression: mean Δ {summary.mean_delta:+.3f}, {p_clause(summary.p_value)} < α = {alpha}")
    sequence = report.sequence
    if sequence is not None and sequence.decision == "separated" and sequence.last.high < 0:
        reasons.append(f"regression decided by the anytime-valid sequence: mean Δ {summary.mean_delta:+.3f}, "
                       f"[{sequence.last.low:+.3f}, {sequence.last.high:+.3f}] at α = {sequence.alpha}")
    if report.critical_newly_failing:
        reasons.append(f"critical rows newly failing: {', '.join(report.critical_newly_failing)}")
    return GateVerdict(bool(reasons), reasons, alpha)


def item_clusters(project: Project, run: Run, cases: CaseColumns) -> dict[str, str] | None:
    """Item id → cluster when the run's dataset file gives some item ``metadata.<cluster key>``;
    None without clusters, or when the file is unknown (imported runs) or unreadable. ``cases``
    are the run's (an item's item_sha is its last case's)."""
    recorded_path = run.header.dataset.path
    if not recorded_path or not may_hold_metadata(project.root, recorded_path):
        return None
    sha_codes = cases.item_sha if cases.item_sha is not None else np.full(cases.size, -1)
    shas = {cases.item_ids[item]: None if sha < 0 else cases.shas[sha]
            for item, sha in zip(cases.item.tolist(), sha_codes.tolist())}
    try:
        values, _ = dataset_labels(project.root, recorded_path, list(shas), list(shas.values()), cluster_key(project))
    except EvalsiteError:
        return None
    clusters = {item_id: value for item_id, value in zip(shas, values) if value is not None}
    return clusters or None


def compare_runs(
    project: Project,
    run: str,
    *,
    baseline: str | None = None,
    threshold: float = THRESHOLD,
    noise: float | None = None,
    alpha: float = ALPHA,
    run_code: bool = True,
    current_cases: ScannedCases | None = None,
    baseline_cases: ScannedCases | None = None,
) -> ComparisonReport:
    """Compare ``run`` with ``baseline`` (a run, or ``promoted``: only a promoted baseline) or the
    baseline resolved for it; never raises for a refusal: the report carries the fingerprint
    diff and the reason instead. ``run_code`` false (the site) never re-scores with python
    evaluators or judges (docs/security.md). ``current_cases``, ``baseline_cases``: the run's and
    the baseline's cases when the caller has already read them (the site:
    :func:`evalsite.analysis.case_scan.cases_in_hand`, ``ScannedCases.kept``); ``baseline_cases``
    only with an explicit ``baseline`` run, whose cases they are."""
    current = open_run(resolve_run(project.runs_dir, run))
    choice: BaselineChoice = resolve_baseline(project, current.header, None if baseline == PROMOTED_ONLY else baseline)
    if baseline == PROMOTED_ONLY and choice.source != PROMOTED:
        choice = BaselineChoice(None, NONE)
    if choice.directory is None:
        return ComparisonReport(current, None, NONE, None, None, None, None)
    reference = open_run(choice.directory)
    verdict = comparability(reference.header, current.header)
    regression = None
    if verdict.comparable:
        explicit = baseline not in (None, PROMOTED_ONLY)
        cases = (baseline_cases if explicit and baseline_cases else scan_cases(reference.directory),
                 current_cases or scan_cases(current.directory))
        clusters = item_clusters(project, current, cases[1].columns)
        regression = regression_report(project.root, reference, current, cases, threshold=threshold, noise=noise,
                                       run_code=run_code, alpha=alpha, clusters=clusters)
        regression = sequential_regression(regression, [current.header, reference.header], alpha, clusters)
    return ComparisonReport(
        current=current,
        baseline=reference,
        baseline_source=choice.source,
        promotion=choice.decision,
        comparability=verdict,
        regression=regression,
        gate=gate(regression, alpha) if regression else None,
    )
