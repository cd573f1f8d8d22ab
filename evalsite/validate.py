"""The project-wide checks behind ``evalsite validate``.

Each check takes the project and returns its problems, one line each, naming the file (and the
line, key or item) at fault. A check reports everything it finds and never raises for a user's
mistake, so one run of ``evalsite validate`` lists every problem. A new kind of check is one more
entry in :data:`CHECKS`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from evalsite.analysis.baselines import tier_problems
from evalsite.analysis.footer_check import footer_problems
from evalsite.analysis.run_views import large_cases
from evalsite.errors import EvalsiteError
from evalsite.execute.prepare import prepare_plan
from evalsite.experiment.datasets import DATASET_SUFFIXES, dataset_problems, read_source_rows
from evalsite.experiment.locks import LOCK_SUFFIX, is_lock_file, verify_dataset
from evalsite.project import Project, ci_plan, cwd_relative, max_error_rate, settings_problems
from evalsite.runlog.decisions import validate_decisions
from evalsite.runlog.records import Case
from evalsite.runlog.store import CASES_FILE, END_FILE, read_cases, run_directories, scan_runs
from evalsite.site.settings import site_settings

if TYPE_CHECKING:
    from evalsite.analysis.case_columns import CaseColumns

Check = Callable[[Project], list[str]]
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


def manifest_files(project: Project) -> list[Path]:
    folder = project.experiments_dir
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in MANIFEST_SUFFIXES)


def dataset_files(project: Project) -> list[Path]:
    """Files under ``data/`` with a dataset extension (lock files and hidden files left out)."""
    if not project.data_dir.is_dir():
        return []
    return sorted(
        p for p in project.data_dir.rglob("*")
        if p.is_file() and p.suffix.lower() in DATASET_SUFFIXES and not is_lock_file(p) and not p.name.startswith(".")
    )


def lock_files(project: Project) -> list[Path]:
    return sorted(project.data_dir.rglob(f"*{LOCK_SUFFIX}")) if project.data_dir.is_dir() else []


def check_manifests(project: Project) -> list[str]:
    """Each manifest loads, its plan builds (dataset, pin, design, limits, prompts) and its
    evaluators construct; ``python:`` references are checked in their source, never imported."""
    return manifest_results(project)[0]


def manifest_results(project: Project) -> tuple[list[str], list[str]]:
    """The problems of :func:`check_manifests` and, from the same pass, the warnings: what would
    stop a run here but need not fail a check elsewhere — an environment variable a target needs
    that is not set (CI validates without the keys). ``validate --strict`` fails on these."""
    problems: list[str] = []
    warnings: list[str] = []
    for path in map(cwd_relative, manifest_files(project)):
        found: list[str] = []
        try:
            prepare_plan(project, path, warnings=found, run_code=False, check_lock=False)
        except EvalsiteError as exc:
            problems += [_named(path, line) for line in exc.message.splitlines()]
            continue
        warnings += [_named(path, warning) for warning in found]
    return problems, list(dict.fromkeys(warnings))


def _named(path: Path, message: str) -> str:
    return message if message.startswith(str(path)) else f"{path}: {message}"


def check_datasets(project: Project) -> list[str]:
    """Every dataset file under ``data/`` reads, and every row has a usable shape and id."""
    problems = []
    for path in map(cwd_relative, dataset_files(project)):
        try:
            problems += dataset_problems(read_source_rows(path), str(path))
        except EvalsiteError as exc:
            problems.append(exc.message)
    return problems


def check_locks(project: Project) -> list[str]:
    """Every lock file still matches the dataset beside it."""
    problems = []
    for lock in map(cwd_relative, lock_files(project)):
        dataset = lock.with_name(lock.name.removesuffix(LOCK_SUFFIX))
        if not dataset.is_file():
            problems.append(f"{lock}: locks {dataset}, which does not exist")
            continue
        try:
            check = verify_dataset(dataset)
        except EvalsiteError as exc:
            problems.append(exc.message)
            continue
        problems += [f"{dataset}: differs from {lock}: {difference}" for difference in check.differences]
    return problems


def check_settings(project: Project) -> list[str]:
    """``evalsite.toml``: tables and keys nothing reads, the ``[site]`` table as ``evalsite
    build`` reads it, ``[ci] max_error_rate`` as ``promote`` reads it and ``[ci] experiments`` /
    ``max_cost_usd`` as ``evalsite ci experiments`` reads them."""
    problems = settings_problems(project.settings)
    for read in (site_settings, lambda _: max_error_rate(project), lambda _: ci_plan(project)):
        try:
            read(project.settings)
        except EvalsiteError as exc:
            problems.append(exc.message)
    return problems


def check_runs(project: Project) -> list[str]:
    """Every run under ``runs/`` (a folder with a ``run.json``) is readable, its id is its folder's
    name, every line of its ``cases.jsonl`` is a case and no two lines are the same case (item_id,
    repeat), its footer's totals are what its cases give, and a compacted run's Parquet still
    comes from that JSONL. Folders without a ``run.json`` (a process killed before it wrote the
    header) are not runs and are ignored."""
    runs, problems = scan_runs(project.runs_dir)
    shown = cwd_relative(project.runs_dir)
    messages = [f"{shown}/{problem}" for problem in problems]
    for run in runs:
        warnings, cases = _cases_of(run.directory)
        messages += [f"{shown}/{warning}" for warning in warnings]
        if run.footer is not None:
            messages += footer_problems(run.footer.totals, cases, f"{shown}/{run.run_id}/{END_FILE}")
        messages += _compacted_problems(run.directory)
    return sorted(messages)  # by run id, so each run's problems stay together


def _cases_of(directory: Path) -> tuple[list[str], list[Case] | CaseColumns]:
    """A run's cases as the Python reader reads them, with its warnings: a large file as columns,
    every line checked by DuckDB and the file read in Python only when some line needs a warning
    (:func:`~evalsite.analysis.case_scan.scan_cases`; 100,000 ~1 KB cases: ~2 s against ~6 s)."""
    warnings: list[str] = []
    path = directory / CASES_FILE
    if not large_cases(path):
        return warnings, read_cases(path, warnings)
    from evalsite.analysis.case_scan import scan_cases

    scanned = scan_cases(directory, vouched=False)
    return scanned.warnings, scanned.columns


def _compacted_problems(folder: Path) -> list[str]:
    """A compacted run's Parquet must come from the JSONL beside it (by hash)."""
    if not (folder / "cases.parquet").exists():
        return []
    from evalsite.analysis.parquet import parquet_problems  # DuckDB and pyarrow only when needed

    return parquet_problems(folder)


CHECKS: list[Check] = [check_settings, check_manifests, check_datasets, check_locks, check_runs, validate_decisions,
                       tier_problems]


def validate_project(project: Project, checks: list[Check] | None = None,
                     warnings: list[str] | None = None) -> list[str]:
    """Every problem every check finds, in check order, each listed once; with ``warnings``, the
    manifests' warnings are appended to it from the same pass that checks them."""
    problems: list[str] = []
    for check in CHECKS if checks is None else checks:
        if check is check_manifests and warnings is not None:
            found, noted = manifest_results(project)
            warnings += noted
        else:
            found = check(project)
        problems += found
    return list(dict.fromkeys(problems))


def inventory(project: Project) -> dict[str, int]:
    """How many of each thing ``validate`` looked at."""
    return {
        "manifests": len(manifest_files(project)),
        "datasets": len(dataset_files(project)),
        "locks": len(lock_files(project)),
        "runs": len(run_directories(project.runs_dir)),
    }
