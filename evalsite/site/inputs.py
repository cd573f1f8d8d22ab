"""Everything the site is built from, gathered before anything is rendered.

A scan reads run headers and footers (not cases), decisions and manifests, and hashes the bytes
of every input file: those hashes decide which pages an incremental build re-renders and make
up the input hash stamped on each page. Unreadable runs and decision lines are reported with the
reason and left out; they never stop a build.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import pyarrow as pa
import yaml

from evalsite import analysis
from evalsite.analysis import baselines
from evalsite.analysis.case_columns import NONE, CaseColumns
from evalsite.analysis.case_scan import ScannedCases
from evalsite.analysis.dataset_versions import DatasetVersions
from evalsite.analysis.db import RunsDatabase, open_database
from evalsite.analysis.run_views import dataset_rows
from evalsite.errors import EvalsiteError
from evalsite.experiment.bounded_yaml import MAX_DOCUMENT_BYTES, load_yaml
from evalsite.jsonshape import JSONObject
from evalsite.project import Project
from evalsite.runlog import decisions
from evalsite.runlog.decisions import DECISIONS_FILE, Decision
from evalsite.runlog.digests import kept_sha256
from evalsite.runlog.hashing import RACY_SECONDS, file_sha256, settled, sha256_json
from evalsite.runlog.records import RunStatus
from evalsite.runlog.rows import is_critical
from evalsite.runlog.secrets import redact_urls
from evalsite.runlog.store import CASES_FILE, END_FILE, RUN_FILE, Run, run_directories, scan_runs
from evalsite.site.artifacts import refused_results
from evalsite.site.figures import KeptValues
from evalsite.site.safe_text import project_relative

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


def file_hash(*paths: Path) -> str:
    """sha256 over the named files' names and sha256s (a missing file, or one that is not a regular
    file, counts as none). A settled file's sha256 is the one every command shares
    (:func:`~evalsite.runlog.digests.kept_sha256`: kept in the project for a run's files, else once a
    process), so a new run's cases, hashed here, are not read again to be checked against its footer;
    but a file changed within :data:`~evalsite.runlog.hashing.RACY_SECONDS` is read here each time
    (``evalsite serve`` builds again in the same process, and a second change in the same clock tick
    keeps a file's size and times)."""
    return sha256_json([[path.name, _sha256_or_none(path)] for path in paths])


def _sha256_or_none(path: Path) -> str | None:
    try:
        found = os.stat(path)
        if not stat.S_ISREG(found.st_mode):
            return None
        return kept_sha256(path) if _settled(found) else file_sha256(path)
    except OSError:
        return None


def _settled(found: os.stat_result) -> bool:
    """:func:`~evalsite.runlog.hashing.settled` at this module's :data:`RACY_SECONDS` (the tests shorten it)."""
    return settled(found, RACY_SECONDS)


def kept_file_hash(kept: KeptValues, *paths: Path) -> str:
    """:func:`file_hash`, taken from ``kept`` (the build cache's :data:`~evalsite.site.figures.HASHES_FILE`)
    when an earlier build hashed the same files in the same states (``os.stat``: device, inode, size,
    modification and change times). A file gone, not a regular file, or changed within
    :data:`~evalsite.runlog.hashing.RACY_SECONDS` (a change in the same clock tick keeps its times) is
    hashed again, and so is every file of a cloned or copied project (new inodes and change times)."""
    states: list[list[int | str]] = []
    for path in paths:
        try:
            found = os.stat(path)
        except OSError:
            return file_hash(*paths)
        if not stat.S_ISREG(found.st_mode) or not _settled(found):
            return file_hash(*paths)
        states.append([str(path), found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns])
    found_hash: str = kept.get(sha256_json(states), lambda: file_hash(*paths))
    return found_hash


@dataclass(frozen=True)
class DecisionEntry:
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
    record: decisions.Decision = field(repr=False, compare=False)


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
    runs: list[Run]
    run_hashes: dict[str, str]
    skipped: list[str]
    decisions: list[DecisionEntry]
    decision_problems: list[str]
    decisions_hash: str
    experiments: dict[str, ExperimentSource]
    reports: list[ReportSource] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)
    #: One line per manifest under experiments/ that cannot be read (``build`` warns; ``--strict`` fails).
    manifest_problems: list[str] = field(default_factory=list)
    _dataset_cache: dict[str, dict[str, JSONObject] | None] = field(default_factory=dict)
    _baselines: dict[str, baselines.BaselineChoice] = field(default_factory=dict)
    _leaderboards: dict[tuple[analysis.ArmRun, ...],
                        analysis.Leaderboard | EvalsiteError | Future[analysis.Leaderboard]] = field(default_factory=dict)
    _pool: ThreadPoolExecutor | None = None
    memo: dict[tuple[str, ...], Any] = field(default_factory=dict)  # what several page families of one build read (e.g. manifest drift)
    #: Run id → its case columns (what comparisons read) and its cells (what leaderboards read) kept
    #: by an earlier build (the build's cache), None when there are none.
    kept_columns: Callable[[str], CaseColumns | None] = lambda run_id: None
    kept_cells: Callable[[str], pa.Table | None] = lambda run_id: None
    #: Whether a run's case columns are kept (without reading them).
    has_kept_columns: Callable[[str], bool] = lambda run_id: False
    #: Files' hashes by their states (:func:`kept_file_hash`), and what the dataset files' contents
    #: give (their selections' hashes, the items' metadata scripts), both kept by earlier builds.
    kept_hashes: KeptValues = field(default_factory=KeptValues.unsaved)
    kept_datasets: KeptValues = field(default_factory=KeptValues.unsaved)

    @cached_property
    def by_id(self) -> dict[str, Run]:
        return {run.run_id: run for run in self.runs}

    @cached_property
    def excluded(self) -> dict[str, Decision]:
        """Run id → its exclusion (``evalsite runs --exclude``), from the decisions scanned."""
        return decisions.exclusions(entry.record for entry in self.decisions)

    @cached_property
    def listed_runs(self) -> list[Run]:
        """The runs every listing shows: all but the excluded ones, which appear only on their own
        page and in the runs table, marked (as no leaderboard or claim reads them)."""
        return self.listed(self.runs)

    def listed(self, runs: list[Run]) -> list[Run]:
        """Of ``runs``, the ones a listing shows (all but the excluded ones, see :attr:`listed_runs`)."""
        return [run for run in runs if run.run_id not in self.excluded]

    @cached_property
    def dataset_versions(self) -> DatasetVersions:
        """Which version of its file each run's dataset is (each dataset file read once per build):
        the pages that name it put the version in their cache key, as an edited file re-renders them."""
        return DatasetVersions(self.project.root, self._kept_selections)

    def _kept_selections(self, path: str, count: int | None, compute: Callable[[], list[str] | None]) -> list[str] | None:
        """A dataset file's selection hashes, kept by its content (:class:`DatasetVersions`)."""
        return self.kept_dataset_value(["selections", count], [path], compute)  # type: ignore[no-any-return]

    def kept_dataset_value(self, key: list[Any], paths: list[str], compute: Callable[[], Any]) -> Any:
        """``compute()``, a value (JSON) of the dataset files ``paths`` (relative to the project), kept
        under ``key`` and the files' content hashes: computed again whenever one changes, and
        whenever one is missing or outside the project (nothing then to read, or to keep)."""
        contents = []
        for path in paths:
            file = self.project.root / path
            if not (self.project.contains(Path(path)) and file.is_file()):
                return compute()
            contents.append([path, kept_file_hash(self.kept_hashes, file)])
        return self.kept_datasets.get(sha256_json([*key, contents]), compute)

    @cached_property
    def database(self) -> RunsDatabase:
        """The DuckDB views the analysis layer reads (opened once per build, when a page needs them):
        the runs, and the cases of the runs each leaderboard chooses, read from their own files."""
        return open_database(self.project.runs_dir, case_views=False)

    def leaderboard(self, selection: analysis.Selection) -> analysis.Leaderboard:
        """:func:`evalsite.analysis.leaderboard_of` of a comparable group, computed once per build (a
        dataset page and an experiment page often show the same group). Raises
        :class:`EvalsiteError` when the group's arms share no scored item."""
        if selection.arms not in self._leaderboards:
            self._start_leaderboard(selection, background=False)
        found = self._leaderboards[selection.arms]
        if isinstance(found, Future):
            try:
                found = found.result()
            except EvalsiteError as exc:
                found = exc
            self._leaderboards[selection.arms] = found
        if isinstance(found, EvalsiteError):
            raise found
        return found

    def prefetch_leaderboards(self, dataset_ids: set[str]) -> None:
        """Start the leaderboards of these datasets' comparable groups on a second thread, so reading
        their cells (DuckDB, on a connection of its own) and their bootstraps and permutations
        (numpy) — both release the interpreter lock — run while the build reads runs and renders
        pages; :meth:`leaderboard` then waits for the result (the order of work never changes a byte)."""
        for dataset_id in sorted(dataset_ids):
            members = {run.run_id for run in self.runs if run.header.dataset.dataset_id == dataset_id}
            for group in analysis.comparable_groups(self.database, dataset_id, only_runs=members).groups:
                if group.arms not in self._leaderboards:
                    self._start_leaderboard(group, background=True)

    def _start_leaderboard(self, selection: analysis.Selection, *, background: bool) -> None:
        if background:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="evalsite-leaderboards")
            self._leaderboards[selection.arms] = self._pool.submit(self._leaderboard_of, selection, self.database.for_thread())
            return
        try:
            self._leaderboards[selection.arms] = self._leaderboard_of(selection, self.database)
        except EvalsiteError as exc:
            self._leaderboards[selection.arms] = exc

    def _leaderboard_of(self, selection: analysis.Selection, database: RunsDatabase) -> analysis.Leaderboard:
        """The group's leaderboard, its cells read from the runs' kept cells where there are any."""
        kept = {arm.run_id: cells for arm in selection.arms if (cells := self.kept_cells(arm.run_id)) is not None}
        try:
            return analysis.leaderboard_of(analysis.arms_of_selection(self.project, database, selection, kept=kept))
        finally:
            if database is not self.database:
                database.connection.close()

    def close(self) -> None:
        """Wait for the leaderboard thread, if one was started (a build never leaves it running)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def kept_cases(self, run_id: str) -> ScannedCases | None:
        """The run's cases as :func:`~evalsite.analysis.case_scan.scan_cases` reads them, from its kept columns."""
        columns = self.kept_columns(run_id)
        return None if columns is None else ScannedCases.kept(columns, self.by_id[run_id].directory / CASES_FILE)

    @cached_property
    def hashes(self) -> dict[str, str]:
        """Input key → content hash; pages name the keys they are built from."""
        keys = {f"run:{run_id}": content_hash for run_id, content_hash in self.run_hashes.items()}
        keys.update({f"experiment:{name}": source.content_hash for name, source in self.experiments.items()})
        keys.update({f"report:{report.name}": report.content_hash for report in self.reports})
        keys["decisions"] = self.decisions_hash
        keys["skipped"] = sha256_json(self.skipped)
        for path in sorted({run.header.dataset.path for run in self.runs if run.header.dataset.path}):
            inside = self.project.contains(Path(path))
            keys[f"dataset-file:{path}"] = kept_file_hash(self.kept_hashes, self.project.root / path) if inside else ""
        return keys

    def summary_keys(self, run_ids: Sequence[str]) -> tuple[str, ...]:
        """The input keys the summaries of ``run_ids`` depend on: each run, and the dataset file
        that stands in for critical flags its cases may not have recorded (:meth:`critical_items`)."""
        keys = [f"run:{run_id}" for run_id in run_ids]
        paths = {self.by_id[run_id].header.dataset.path for run_id in run_ids}
        return (*keys, *(f"dataset-file:{path}" for path in sorted(p for p in paths if p)))

    def combined_hash(self, keys: list[str] | None = None) -> str:
        """One short hash over the named inputs (all of them by default)."""
        chosen = sorted(self.hashes) if keys is None else sorted(set(keys))
        return sha256_json([[key, self.hashes.get(key)] for key in chosen])[:16]

    @cached_property
    def baseline_resolver(self) -> baselines.BaselineResolver:
        """`evalsite compare`'s baseline rule over the scanned runs and decisions (no further reading)."""
        return baselines.BaselineResolver(self.runs, [decision.record for decision in self.decisions])

    def baseline_choice(self, run_id: str) -> baselines.BaselineChoice:
        """The baseline `evalsite compare RUN` resolves for a run (:class:`evalsite.analysis.baselines.BaselineResolver`)."""
        if run_id not in self._baselines:
            self._baselines[run_id] = self.baseline_resolver.choose(self.by_id[run_id].header)
        return self._baselines[run_id]

    def baseline_of(self, run_id: str) -> str | None:
        """The id of a completed run's baseline, if it has one that started before it: a run is
        judged against what came before it, so a baseline promoted later (a newer run) gives an
        older run no compare page and no "vs baseline" figures."""
        if self.by_id[run_id].status != RunStatus.COMPLETED:
            return None
        choice = self.baseline_choice(run_id)
        if choice.directory is None or self.later(choice.directory.name, run_id):
            return None
        return choice.directory.name

    def later(self, baseline_id: str, run_id: str) -> bool:
        """Whether ``baseline_id`` started after ``run_id`` (:attr:`Run.recency`)."""
        baseline = self.by_id.get(baseline_id)
        return baseline is not None and baseline.recency > self.by_id[run_id].recency

    def critical_items(self, run: Run, columns: CaseColumns) -> dict[str, bool] | None:
        """Which items of the run's dataset are critical, for cases that did not record it
        (None when every case did, or the dataset file is gone or changed)."""
        if not (columns.critical == NONE).any():
            return None
        rows = self.dataset_rows(run)
        return None if rows is None else {item_id: is_critical(row) for item_id, row in rows.items()}

    def dataset_rows(self, run: Run) -> dict[str, JSONObject] | None:
        """Item id → the dataset row the run used (:func:`evalsite.analysis.run_views.dataset_rows`,
        read once per dataset file)."""
        dataset = run.header.dataset
        key = f"{dataset.path}|{dataset.dataset_id}|{dataset.items}"
        if key not in self._dataset_cache:
            self._dataset_cache[key] = dataset_rows(self.project.root, dataset)
        return self._dataset_cache[key]


def scan_project(project: Project, kept_hashes: KeptValues | None = None) -> ProjectInputs:
    """The project's inputs; ``kept_hashes``: files' hashes by their states, kept by earlier builds
    (:func:`kept_file_hash`: a run's cases are read only when they changed)."""
    kept_hashes = kept_hashes or KeptValues.unsaved()
    outside: list[str] = []
    folders, linked = _run_folders(project, outside)
    runs, skipped = scan_runs(project.runs_dir, folders)
    skipped = sorted([*linked, *skipped])
    outside += [f"runs/{run.run_id}/{RUN_FILE}: experiment {run.header.experiment!r}, batch {run.header.batch_id!r} is not "
                "a folder under results/; its artifacts are not published" for run in runs
                if refused_results(project.root, run.header.experiment, run.header.batch_id)]
    decisions_path = project.runs_dir / DECISIONS_FILE
    entries, problems = read_decisions(decisions_path)
    experiments = _scan_experiments(project, outside)
    return ProjectInputs(
        project=project,
        runs=runs,
        run_hashes={run.run_id: kept_file_hash(kept_hashes, *(run.directory / name for name in (RUN_FILE, CASES_FILE, END_FILE)))
                    for run in runs},
        skipped=skipped,
        decisions=entries,
        decision_problems=problems,
        decisions_hash=file_hash(decisions_path),
        experiments=experiments,
        reports=_scan_reports(project, outside),
        outside=outside,
        manifest_problems=[problem for source in experiments.values() if (problem := _manifest_problem(project, source))],
        kept_hashes=kept_hashes,
    )


def _manifest_problem(project: Project, source: ExperimentSource) -> str | None:
    """Why a manifest cannot be read (its first problem, paths relative to the project), or None.
    The manifest reader is imported here, for a project with manifests only (its schema checks are
    ~0.1 s of a build's start-up)."""
    from evalsite.experiment.manifest import load_manifest

    try:
        load_manifest(source.path)
    except EvalsiteError as exc:
        lines = exc.message.splitlines()
        more = f" (and {len(lines) - 1} more problems: evalsite validate lists them)" if len(lines) > 1 else ""
        return project_relative(lines[0], project.root) + more
    return None


def _run_folders(project: Project, outside: list[str]) -> tuple[list[Path], list[str]]:
    """The run folders whose files may be read for the site, and a skip reason per run whose
    ``run.json``, ``cases.jsonl`` or ``end.json`` is a symlink (a run file is read only as the file
    the runner wrote; even a link inside the project could make a page quote another file). A run
    whose files lead outside the project is left out with a note in ``outside``, unread."""
    folders, linked = [], []
    for directory in run_directories(project.runs_dir):
        present = [directory / name for name in (RUN_FILE, CASES_FILE, END_FILE) if os.path.lexists(directory / name)]
        if not all(in_project(project, path, outside) for path in present):
            continue
        symlinks = [path.name for path in present if path.is_symlink()]
        if symlinks:
            linked.append(f"{directory.name}/{symlinks[0]}: a symlink; run files are read only as regular files")
        else:
            folders.append(directory)
    return folders, linked


def _scan_experiments(project: Project, outside: list[str]) -> dict[str, ExperimentSource]:
    found: dict[str, ExperimentSource] = {}
    if not project.experiments_dir.is_dir():
        return found
    for path in sorted(project.experiments_dir.iterdir()):
        if path.suffix.lower() in MANIFEST_SUFFIXES and path.is_file() and in_project(project, path, outside):
            text = _manifest_text(path)
            name = _manifest_name(text) or path.stem
            found.setdefault(name, ExperimentSource(name, path, text, file_hash(path)))
    return found


def _scan_reports(project: Project, outside: list[str]) -> list[ReportSource]:
    reports_dir = project.root / "reports"
    if not reports_dir.is_dir():
        return []
    return [ReportSource(path.relative_to(reports_dir).with_suffix("").as_posix(), path, file_hash(path))
            for path in sorted(reports_dir.rglob("*.md")) if path.is_file() and in_project(project, path, outside)]


def in_project(project: Project, path: Path, outside: list[str]) -> bool:
    """Whether ``path`` (symlinks resolved) stays in the project; if not, say so in ``outside``:
    such a file is left out of the site, never read into it."""
    if project.contains(path):
        return True
    shown = path.relative_to(project.root).as_posix() if path.is_relative_to(project.root) else str(path)
    outside.append(f"{shown}: a symlink to outside the project; left out of the site")
    return False


def _manifest_text(path: Path) -> str:
    """A manifest's text as published (no URL credentials); empty past
    :data:`~evalsite.experiment.bounded_yaml.MAX_DOCUMENT_BYTES`, left unread (the build warns, as
    for any manifest that cannot be read: PyYAML would take minutes over it)."""
    if path.stat().st_size > MAX_DOCUMENT_BYTES:
        return ""
    return redact_urls(path.read_text(encoding="utf-8", errors="replace"))


def _manifest_name(text: str) -> str | None:
    try:
        data = load_yaml(text)
    except yaml.YAMLError:
        return None
    name = data.get("name") if isinstance(data, dict) else None
    return name if isinstance(name, str) else None


def read_decisions(path: Path) -> tuple[list[DecisionEntry], list[str]]:
    """Every well-formed decision, in file order (read by :mod:`evalsite.runlog.decisions`), and a
    problem per bad line."""
    lines, problems = decisions.read_decisions(path, f"runs/{DECISIONS_FILE}")
    views = [
        DecisionEntry(
            line=entry.line, action=d.decision, run_id=d.run_id, reason=d.reason, when=d.at, who=d.by,
            dataset_id=d.dataset_id, inputs_id=d.inputs_id, arm_id=d.arm_id, fingerprint_hash=d.fingerprint_hash, record=d,
        )
        for entry in lines for d in [entry.decision]
    ]
    return views, problems
