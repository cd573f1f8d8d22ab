"""Which runs a comparison across arms may use, and what each arm is called.

A leaderboard reads one dataset (one ``dataset_id``). Of that dataset's runs it keeps the
completed, scored ones whose evaluators agree (``compare.comparability``), and of those the
latest run of every config: configs from one sweep share an arm id, so arms are keyed by
``config_id``. Every other run of the dataset — interrupted, unscored, scored differently, older —
and every run on another version of it (same dataset name, other rows) is listed with the
reason, never dropped silently. A run excluded in ``runs/decisions.jsonl`` (``evalsite runs
--exclude``) is left out with its reason, and a dataset whose every run is excluded is no choice.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalsite.analysis.compare import comparability
from evalsite.analysis.db import RunsDatabase
from evalsite.errors import EvalsiteError, NotComparableError
from evalsite.runlog.hashing import canonical_json
from evalsite.runlog.records import RunHeader, RunStatus
from evalsite.runlog.store import open_run, resolve_run

RUNS_SQL = (
    "SELECT run_id, arm_id, config_id, dataset_id, status, started_at, directory FROM runs "
    "ORDER BY started_at, run_id"
)
_LABEL_SECTIONS = ("params", "prompt_variables")
#: One row of :data:`RUNS_SQL`, column -> value.
Row = dict[str, Any]
#: A usable run: its row and its header.
Candidate = tuple[Row, RunHeader]


@dataclass(frozen=True)
class ArmRun:
    """One system under test as a comparison sees it: the run that stands for it and its label.

    ``label`` is the arm id; when several configs of one arm take part (a sweep), it adds the
    config fields that tell them apart (``writer temperature=0.7``), and it is the run id when
    nothing else does (two runs of the same config)."""

    label: str
    run_id: str
    arm_id: str | None
    config_id: str | None
    status: str
    started_at: str | None
    header: RunHeader = field(repr=False, compare=False, metadata={"internal": True})

    @property
    def dataset_id(self) -> str | None:
        return self.header.dataset.dataset_id

    @property
    def evaluators(self) -> dict[str, str | None]:
        """Evaluator name → version, as the run header records them."""
        return self.header.evaluator_versions


@dataclass(frozen=True)
class LeftOut:
    """A run of the dataset that the comparison does not use, and why."""

    run_id: str
    arm_id: str | None
    reason: str


@dataclass(frozen=True)
class DatasetRuns:
    """A dataset that has runs: what ``--dataset`` chooses between."""

    dataset_id: str
    runs: int
    completed: int
    latest_run: str


@dataclass(frozen=True)
class Selection:
    """The arms of one dataset that may be compared (oldest run first) and the runs left out.

    ``evaluators`` maps each evaluator name to the version every chosen run used."""

    dataset_id: str
    arms: tuple[ArmRun, ...]
    left_out: tuple[LeftOut, ...]
    evaluators: dict[str, str | None]


class DatasetChoiceError(EvalsiteError):
    """``--dataset`` is missing while several datasets have runs, or matches none or several."""

    exit_code = 2


def datasets_with_runs(database: RunsDatabase) -> list[DatasetRuns]:
    """Every dataset id some run names, with its run counts; newest activity first."""
    grouped: dict[str, list[Row]] = {}
    for row in database.rows(RUNS_SQL):
        if row["dataset_id"] and row["run_id"] not in database.excluded:
            grouped.setdefault(row["dataset_id"], []).append(row)
    found = [
        DatasetRuns(dataset_id, len(rows), sum(r["status"] == RunStatus.COMPLETED for r in rows), rows[-1]["run_id"])
        for dataset_id, rows in grouped.items()
    ]
    return sorted(found, key=lambda d: d.latest_run, reverse=True)


def choose_dataset(datasets: list[DatasetRuns], wanted: str | None) -> str:
    """The dataset id ``wanted`` names (an id, a unique prefix of one, or a dataset name such as
    ``arithmetic``); without ``wanted``, the only dataset that has runs."""
    if not datasets:
        raise EvalsiteError("no runs yet: run an experiment first (evalsite run experiments/<name>.yaml)")
    if wanted is None:
        if len(datasets) == 1:
            return datasets[0].dataset_id
        raise DatasetChoiceError(f"{len(datasets)} datasets have runs; choose one with --dataset:\n{_listing(datasets)}")
    exact = [d for d in datasets if d.dataset_id == wanted]
    matches = exact or [d for d in datasets if d.dataset_id.startswith(wanted)] or [
        d for d in datasets if dataset_name(d.dataset_id) == wanted
    ]
    if len(matches) == 1:
        return matches[0].dataset_id
    if not matches:
        raise DatasetChoiceError(f"--dataset {wanted!r} matches no dataset with runs; datasets:\n{_listing(datasets)}")
    raise DatasetChoiceError(f"--dataset {wanted!r} matches {len(matches)} datasets; give the full id:\n{_listing(matches)}")


def _listing(datasets: list[DatasetRuns]) -> str:
    width = max(len(d.dataset_id) for d in datasets)
    return "\n".join(
        f"  {d.dataset_id.ljust(width)}  {d.runs} run{'s' * (d.runs != 1)} ({d.completed} completed), latest {d.latest_run}"
        for d in datasets
    )


def dataset_name(dataset_id: str | None) -> str | None:
    """``arithmetic`` for ``arithmetic@854dec43a471``: every version of a dataset file shares it."""
    return dataset_id.split("@")[0] if dataset_id else None


@dataclass(frozen=True)
class DatasetGroups:
    """Every comparable group of one dataset's runs (the site shows one leaderboard per group).

    ``groups``: one :class:`Selection` per group, the group holding the newest run first; each
    lists its own older runs of a config in ``left_out``. ``left_out``: every run of the dataset
    that no group uses (not completed, unscored, an older run of a config), with the reason."""

    dataset_id: str
    groups: tuple[Selection, ...]
    left_out: tuple[LeftOut, ...]

    @property
    def chosen(self) -> Selection | None:
        """The group :func:`select_runs` reads (:func:`chosen_group`), None when there is none."""
        return chosen_group(self.groups) if self.groups else None


def chosen_group(groups: Sequence[Selection]) -> Selection:
    """The one rule for which comparable group stands for a dataset (the CLI's leaderboard and
    claims, the home card): the group with the most configs, the one holding the newest run among equals."""
    return max(groups, key=lambda group: len(group.arms))


def select_runs(database: RunsDatabase, dataset: str | None = None, evaluator: str | None = None) -> Selection:
    """The comparable arms of one dataset (see the module docstring for the rules).

    ``evaluator``: also leave out runs that lack this evaluator. Raises :class:`EvalsiteError`
    when no run of the dataset can be used."""
    dataset_id = choose_dataset(datasets_with_runs(database), dataset)
    other_versions, unusable, candidates = _dataset_runs(database, dataset_id, evaluator)
    if not candidates:
        reasons = "; ".join(f"{r.run_id}: {r.reason}" for r in unusable)
        raise EvalsiteError(f"no completed, scored run on dataset {dataset_id} ({reasons})")
    groups = _comparable_groups(candidates)
    selections = [_selection(dataset_id, group, []) for group in groups]
    picked = chosen_group(selections)
    chosen = groups[next(i for i, selection in enumerate(selections) if selection is picked)]
    reference = chosen[-1]
    left_out = other_versions + unusable
    for row, header in sorted((c for g in groups if g is not chosen for c in g), key=lambda c: c[0]["run_id"]):
        reason = comparability(reference[1], header).reason
        left_out.append(LeftOut(row["run_id"], row["arm_id"], f"not comparable with {reference[0]['run_id']}: {reason}"))
    return _selection(dataset_id, chosen, left_out)


def comparable_groups(
    database: RunsDatabase, dataset_id: str, evaluator: str | None = None, only_runs: Collection[str] | None = None
) -> DatasetGroups:
    """Every comparable group of the runs on ``dataset_id`` (an exact id), by the rules of
    :func:`select_runs`, which keeps only the group with the most configs. ``only_runs``: consider
    these runs only (e.g. one experiment's)."""
    _, unusable, candidates = _dataset_runs(database, dataset_id, evaluator, only_runs)
    groups = tuple(_selection(dataset_id, group, []) for group in _comparable_groups(candidates)) if candidates else ()
    left_out = unusable + [item for group in groups for item in group.left_out]
    return DatasetGroups(dataset_id, groups, tuple(sorted(left_out, key=lambda r: r.run_id)))


def _dataset_runs(
    database: RunsDatabase, dataset_id: str, evaluator: str | None, only_runs: Collection[str] | None = None
) -> tuple[list[LeftOut], list[LeftOut], list[Candidate]]:
    """Runs on other versions of the dataset, unusable runs of it, and its usable (row, header)s, oldest first."""
    other_versions: list[LeftOut] = []
    unusable: list[LeftOut] = []
    candidates: list[Candidate] = []
    for row in database.rows(RUNS_SQL):
        if only_runs is not None and row["run_id"] not in only_runs:
            continue
        if row["dataset_id"] != dataset_id:
            if dataset_name(row["dataset_id"]) == dataset_name(dataset_id):
                why = f"on dataset {row['dataset_id']}, not {dataset_id} (same name, other rows)"
                other_versions.append(LeftOut(row["run_id"], row["arm_id"], why))
            continue
        header = database.runs[row["run_id"]].header
        exclusion = database.excluded.get(row["run_id"])
        reason = f"excluded: {exclusion.reason}" if exclusion else _unusable(row, header, evaluator)
        if reason is None:
            candidates.append((row, header))
        else:
            unusable.append(LeftOut(row["run_id"], row["arm_id"], reason))
    return other_versions, unusable, candidates


def _selection(dataset_id: str, group: list[Candidate], left_out: list[LeftOut]) -> Selection:
    """One group's latest run per config as arms; its older runs join ``left_out``."""
    latest, older = _latest_per_config(group)
    left_out = left_out + [
        LeftOut(row["run_id"], row["arm_id"], f"an older run of the same config; {newer} is newer")
        for row, newer in older
    ]
    arms = _arm_runs([(row["status"], header) for row, header in latest])
    return Selection(dataset_id, tuple(arms), tuple(sorted(left_out, key=lambda r: r.run_id)), arms[0].evaluators)


def _unusable(row: Row, header: RunHeader, evaluator: str | None) -> str | None:
    if row["status"] != RunStatus.COMPLETED:
        return f"status {row['status']}"
    recorded = header.evaluator_versions
    if not recorded:
        return "unscored: the run has no evaluators"
    if evaluator is not None and evaluator not in recorded:
        return f"has no evaluator {evaluator!r} (it has {', '.join(sorted(recorded))})"
    return None


def _comparable_groups(candidates: list[Candidate]) -> list[list[Candidate]]:
    """Split runs (oldest first) into groups that ``comparability`` accepts together: the group
    holding the newest run first, each group oldest first."""
    groups: list[list[Candidate]] = []
    for candidate in reversed(candidates):
        home = next((g for g in groups if comparability(g[0][1], candidate[1]).comparable), None)
        if home is None:
            groups.append([candidate])
        else:
            home.append(candidate)
    return [list(reversed(group)) for group in groups]


def _config_key(row: Row) -> str:
    return str(row["config_id"] or row["run_id"])


def _latest_per_config(runs: list[Candidate]) -> tuple[list[Candidate], list[tuple[Row, str]]]:
    latest: dict[str, Candidate] = {}
    older: list[tuple[Row, str]] = []
    for row, header in runs:  # oldest first, so a later run replaces an earlier one
        key = _config_key(row)
        if key in latest:
            older.append((latest[key][0], row["run_id"]))
        latest[key] = (row, header)
    return sorted(latest.values(), key=lambda c: (c[0]["started_at"] or "", c[0]["run_id"])), older


def _arm_runs(runs: list[tuple[str, RunHeader]]) -> list[ArmRun]:
    headers = [header for _, header in runs]
    return [
        ArmRun(label, header.run_id, header.arm_id, header.config_id, status, header.started_at, header)
        for (status, header), label in zip(runs, arm_labels(headers))
    ]


def arm_labels(headers: list[RunHeader]) -> list[str]:
    """How tables name each run: its arm id, the config fields that differ between runs of the
    same arm (``arm model=x temperature=0.5``), or its run id when even those are equal."""
    bases = [header.arm_id or header.run_id for header in headers]
    labels = list(bases)
    for base, count in Counter(bases).items():
        if count < 2:
            continue
        members = [i for i, b in enumerate(bases) if b == base]
        fields = [_config_fields(headers[i].config) for i in members]
        differing = sorted(
            key for key in set().union(*fields) if len({canonical_json(f.get(key)) for f in fields}) > 1
        )
        for index, values in zip(members, fields):
            labels[index] = " ".join([base, *(f"{key}={_shown(values[key])}" for key in differing if key in values)])
    repeated = Counter(labels)
    return [header.run_id if repeated[label] > 1 else label for header, label in zip(headers, labels)]


def _config_fields(config: dict[str, Any]) -> dict[str, Any]:
    """A resolved config flattened to ``name → value``: parameters and prompt variables by their
    own name (as a sweep names them), anything else by its dotted path."""
    flat: dict[str, Any] = {}
    for key, value in config.items():
        if key == "arm_id":
            continue
        if key in _LABEL_SECTIONS and isinstance(value, dict):
            flat.update(value)
        elif isinstance(value, dict):
            flat.update({f"{key}.{name}": inner for name, inner in _config_fields(value).items()})
        else:
            flat[key] = value
    return flat


def _shown(value: object) -> str:
    """Plain words as they are; anything else (numbers, blanks, spaces, lists) as JSON."""
    return value if isinstance(value, str) and re.fullmatch(r"[\w.:/@+-]+", value) else canonical_json(value)


def runs_by_reference(runs_dir: Path, references: list[str]) -> list[ArmRun]:
    """The runs named on a command line (ids, unique prefixes or paths), labelled for tables."""
    directories = [resolve_run(runs_dir, reference) for reference in references]
    named = Counter(directory.resolve() for directory in directories)
    for directory, count in named.items():
        if count > 1:
            raise EvalsiteError(f"run {directory.name} is named twice; name each run once")
    runs = [open_run(directory) for directory in directories]
    return _arm_runs([(run.status, run.header) for run in runs])


def require_comparable(first: ArmRun, others: list[ArmRun]) -> None:
    """Refuse (exit 1, ``Error: not comparable: …``) when any run may not be compared with ``first``."""
    refusals = []
    for other in others:
        verdict = comparability(first.header, other.header)
        if not verdict.comparable:
            refusals.append(f"{first.run_id} vs {other.run_id}: {verdict.reason}")
    if refusals:
        raise NotComparableError("not comparable: " + "; ".join(refusals))
