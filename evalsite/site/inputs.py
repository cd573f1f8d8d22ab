"""Everything the site is built from, gathered before anything is rendered.

A scan reads run headers and footers (not cases), decisions and manifests, and hashes the bytes
of every input file: those hashes decide which pages an incremental build re-renders and make
up the input hash stamped on each page. Unreadable runs and decision lines are reported with the
reason and left out; they never stop a build.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import yaml

from evalsite import analysis
from evalsite.analysis import baselines
from evalsite.analysis.baselines import DECISIONS_FILE
from evalsite.analysis.db import RunsDatabase, open_database
from evalsite.errors import EvalsiteError, RunLogError
from evalsite.experiment.datasets import dataset_id as compute_dataset_id
from evalsite.experiment.datasets import item_identity, load_rows
from evalsite.project import Project
from evalsite.runlog.hashing import sha256_json
from evalsite.runlog.records import RunStatus
from evalsite.runlog.store import CASES_FILE, END_FILE, RUN_FILE, footer_status, read_end, read_header, run_directories

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


def file_hash(*paths: Path) -> str:
    """sha256 over the named files' bytes (a missing file counts as empty, under its name)."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.name.encode() + b"\0")
        if path.is_file():
            with open(path, "rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
        digest.update(b"\0")
    return digest.hexdigest()


@dataclass(frozen=True)
class RunSource:
    """One readable run: its header and footer, and the hash of its three files."""

    run_id: str
    directory: Path
    header: dict
    end: dict | None
    content_hash: str

    @property
    def status(self) -> str:
        return footer_status(self.end, self.directory)

    @property
    def dataset(self) -> dict:
        dataset = self.header.get("dataset")
        return dataset if isinstance(dataset, dict) else {}

    @property
    def dataset_id(self) -> str | None:
        return self.dataset.get("dataset_id")

    @property
    def experiment(self) -> str | None:
        return self.header.get("experiment")

    @property
    def arm_id(self) -> str:
        return str(self.header.get("arm_id") or "?")

    @property
    def config_id(self) -> str | None:
        return self.header.get("config_id")

    @property
    def started_at(self) -> str | None:
        return self.header.get("started_at")

    @property
    def recency(self) -> tuple[str, str]:
        """Sorts runs oldest first: by start time (milliseconds), then id (ids only resolve seconds)."""
        return (str(self.started_at or ""), self.run_id)

    @property
    def evaluator_versions(self) -> tuple[tuple[str, str], ...]:
        """``(name, version)`` pairs, sorted: two runs are comparable only when these are equal."""
        evaluators = self.header.get("evaluators")
        if not isinstance(evaluators, dict):
            return ()
        return tuple(sorted((str(name), str((spec or {}).get("version"))) for name, spec in evaluators.items()))


@dataclass(frozen=True)
class Decision:
    """One line of ``runs/decisions.jsonl`` (a promotion or another decision), as the site shows it."""

    line: int
    action: str
    run_id: str | None
    reason: str
    when: str | None
    who: str | None
    dataset_id: str | None
    inputs_id: str | None
    arm_id: str | None
    fingerprint_hash: str | None
    record: baselines.Decision = field(repr=False, compare=False)


@dataclass(frozen=True)
class ExperimentSource:
    """A manifest under ``experiments/``: its text and hash (parsing happens when its page renders)."""

    name: str
    path: Path
    text: str
    content_hash: str


@dataclass(frozen=True)
class ReportSource:
    """A markdown report under ``reports/`` whose claims the site checks and marks."""

    name: str
    path: Path
    content_hash: str


@dataclass
class ProjectInputs:
    project: Project
    runs: list[RunSource]
    skipped: list[str]
    decisions: list[Decision]
    decision_problems: list[str]
    decisions_hash: str
    experiments: dict[str, ExperimentSource]
    reports: list[ReportSource] = field(default_factory=list)
    _dataset_cache: dict[str, dict[str, dict] | None] = field(default_factory=dict)
    _baselines: dict[str, baselines.BaselineChoice] = field(default_factory=dict)
    _leaderboards: dict[tuple, analysis.Leaderboard | EvalsiteError] = field(default_factory=dict)
    memo: dict = field(default_factory=dict)  # what several page families of one build read (e.g. manifest drift)

    @cached_property
    def by_id(self) -> dict[str, RunSource]:
        return {run.run_id: run for run in self.runs}

    @cached_property
    def database(self) -> RunsDatabase:
        """The DuckDB views the analysis layer reads (opened once per build, when a page needs them)."""
        return open_database(self.project.runs_dir)

    def leaderboard(self, selection: analysis.Selection) -> analysis.Leaderboard:
        """:func:`evalsite.analysis.leaderboard_of` of a comparable group, computed once per build (a
        dataset page and an experiment page often show the same group). Raises
        :class:`EvalsiteError` when the group's arms share no scored item."""
        if selection.arms not in self._leaderboards:
            try:
                matrix = analysis.item_matrix(self.database, selection.arms)
                self._leaderboards[selection.arms] = analysis.leaderboard_of(analysis.ArmsOnDataset(selection, matrix))
            except EvalsiteError as exc:
                self._leaderboards[selection.arms] = exc
        found = self._leaderboards[selection.arms]
        if isinstance(found, EvalsiteError):
            raise found
        return found

    @cached_property
    def hashes(self) -> dict[str, str]:
        """Input key → content hash; pages name the keys they are built from."""
        keys = {f"run:{run.run_id}": run.content_hash for run in self.runs}
        keys.update({f"experiment:{name}": source.content_hash for name, source in self.experiments.items()})
        keys.update({f"report:{report.name}": report.content_hash for report in self.reports})
        keys["decisions"] = self.decisions_hash
        keys["skipped"] = sha256_json(self.skipped)
        for path in sorted({run.dataset.get("path") for run in self.runs if run.dataset.get("path")}):
            keys[f"dataset-file:{path}"] = file_hash(self.project.root / path)
        return keys

    def combined_hash(self, keys: list[str] | None = None) -> str:
        """One short hash over the named inputs (all of them by default)."""
        chosen = sorted(self.hashes) if keys is None else sorted(set(keys))
        return sha256_json([[key, self.hashes.get(key)] for key in chosen])[:16]

    @cached_property
    def baseline_resolver(self) -> baselines.BaselineResolver:
        """`evalsite compare`'s baseline rule over the scanned runs and decisions (no further reading)."""
        runs = [baselines.KnownRun(run.directory, run.header, run.status) for run in self.runs]
        return baselines.BaselineResolver(runs, [decision.record for decision in self.decisions])

    def baseline_choice(self, run_id: str) -> baselines.BaselineChoice:
        """The baseline `evalsite compare RUN` resolves for a run (:class:`evalsite.analysis.baselines.BaselineResolver`)."""
        if run_id not in self._baselines:
            self._baselines[run_id] = self.baseline_resolver.choose(self.by_id[run_id].header)
        return self._baselines[run_id]

    def baseline_of(self, run_id: str) -> str | None:
        """The id of a completed run's baseline, if it has one."""
        if self.by_id[run_id].status != RunStatus.COMPLETED:
            return None
        choice = self.baseline_choice(run_id)
        return choice.directory.name if choice.directory is not None else None

    def critical_items(self, run: RunSource) -> dict[str, bool] | None:
        """Which items of the run's dataset are ``metadata.critical``; ``None`` when the dataset
        file is gone or no longer matches the run's ``dataset_id`` (then criticality is unknown)."""
        rows = self.dataset_rows(run)
        return None if rows is None else {item_id: bool(_metadata(row).get("critical")) for item_id, row in rows.items()}

    def dataset_rows(self, run: RunSource) -> dict[str, dict] | None:
        """Item id → the dataset row the run used; ``None`` when the dataset file is gone or no longer
        matches the run's ``dataset_id``."""
        path, expected_id = run.dataset.get("path"), run.dataset_id
        key = f"{path}|{expected_id}|{run.dataset.get('items')}"
        if key not in self._dataset_cache:
            self._dataset_cache[key] = self._load_rows(path, expected_id, run.dataset.get("items"))
        return self._dataset_cache[key]

    def _load_rows(self, path: str | None, expected_id: str | None, count) -> dict[str, dict] | None:
        if not path or not expected_id or "@" not in expected_id:
            return None
        try:
            rows = load_rows(self.project.root / path)
            if isinstance(count, int):
                rows = rows[:count]
            items = item_identity(rows, path)
        except EvalsiteError:
            return None
        if compute_dataset_id(expected_id.rsplit("@", 1)[0], items) != expected_id:
            return None
        return {item.item_id: item.row for item in items}


def _metadata(row: dict) -> dict:
    metadata = row.get("metadata")
    return metadata if isinstance(metadata, dict) else {}


def scan_project(project: Project) -> ProjectInputs:
    runs, skipped = _scan_runs(project.runs_dir)
    decisions_path = project.runs_dir / DECISIONS_FILE
    decisions, problems = read_decisions(decisions_path)
    return ProjectInputs(
        project=project,
        runs=runs,
        skipped=skipped,
        decisions=decisions,
        decision_problems=problems,
        decisions_hash=file_hash(decisions_path),
        experiments=_scan_experiments(project.experiments_dir),
        reports=_scan_reports(project.root / "reports"),
    )


def _scan_runs(runs_dir: Path) -> tuple[list[RunSource], list[str]]:
    runs, skipped = [], []
    for directory in run_directories(runs_dir):
        try:
            header, end = read_header(directory), read_end(directory)
        except RunLogError as exc:
            skipped.append(exc.message)
            continue
        content_hash = file_hash(directory / RUN_FILE, directory / CASES_FILE, directory / END_FILE)
        runs.append(RunSource(directory.name, directory, header, end, content_hash))
    return runs, skipped


def _scan_experiments(experiments_dir: Path) -> dict[str, ExperimentSource]:
    found: dict[str, ExperimentSource] = {}
    if not experiments_dir.is_dir():
        return found
    for path in sorted(experiments_dir.iterdir()):
        if path.suffix.lower() in MANIFEST_SUFFIXES and path.is_file():
            text = path.read_text(encoding="utf-8", errors="replace")
            name = _manifest_name(text) or path.stem
            found.setdefault(name, ExperimentSource(name, path, text, file_hash(path)))
    return found


def _scan_reports(reports_dir: Path) -> list[ReportSource]:
    if not reports_dir.is_dir():
        return []
    return [ReportSource(path.relative_to(reports_dir).with_suffix("").as_posix(), path, file_hash(path))
            for path in sorted(reports_dir.rglob("*.md")) if path.is_file()]


def _manifest_name(text: str) -> str | None:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    name = data.get("name") if isinstance(data, dict) else None
    return name if isinstance(name, str) else None


def read_decisions(path: Path) -> tuple[list[Decision], list[str]]:
    """Every decision, in file order (read by :mod:`evalsite.analysis.baselines`), and a problem per unreadable line."""
    lines, problems = baselines.read_decisions(path)
    messages = [f"runs/{DECISIONS_FILE}: {problem}; skipped" for problem in problems]
    decisions = []
    for entry in lines:
        try:
            decision = baselines.Decision.from_json(entry.record)
        except TypeError:
            messages.append(f"runs/{DECISIONS_FILE}: line {entry.line} lacks fields of a decision; skipped")
            continue
        decisions.append(Decision(
            line=entry.line, action=decision.decision, run_id=decision.run_id, reason=decision.reason,
            when=decision.at, who=decision.by, dataset_id=decision.dataset_id, inputs_id=decision.inputs_id,
            arm_id=decision.arm_id,
            fingerprint_hash=decision.fingerprint_hash, record=decision,
        ))
    return decisions, messages
