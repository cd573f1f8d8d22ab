"""Build the static site: scan every input, decide which jobs are stale, render them, write the folder.

Order of work: scan (headers and hashes only) → read first the new run whose cells the
leaderboards wait for, keep its cells, start its own page and its compare pages in child processes
where they can run on a spare core, and start the leaderboards → for each run a stale job needs, read its cases at
most once, as columns (:func:`evalsite.analysis.case_scan.scan_cases`: no Python object per case), summarise them (:func:`evalsite.analysis.summary.summarise_run`), render its own run page
and data, and keep its figures and matrix part (in memory and in :mod:`evalsite.site.figures`'
cache) → render the pages that read them → write the build record. A run whose own page is fresh
and whose figures are cached is not read at all. A job whose inputs, theme, settings and code are
unchanged since the last build is kept as it is on disk, so an incremental build gives the same
bytes as a full one.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple

from jinja2 import TemplateError

from evalsite import __version__
from evalsite.analysis.case_columns import CaseColumns, with_dataset_critical
from evalsite.analysis.case_scan import ScannedCases, scan_cases
from evalsite.analysis.items import case_cells
from evalsite.analysis.matrix import run_column
from evalsite.analysis.summary import RunSummary, summarise_run
from evalsite.errors import SiteError
from evalsite.forked import Forked, WorkerLost, forked
from evalsite.jsonshape import JSONObject
from evalsite.project import PACKAGE_DIR, Project
from evalsite.runlog.hashing import sha256_json
from evalsite.runlog.store import Run
from evalsite.site import paths, unchanged
from evalsite.site.figures import DATASETS_FILE, HASHES_FILE, PAIRS_FILE, CachedRun, RunFigures, SiteCache
from evalsite.site.inputs import ProjectInputs, kept_file_hash, scan_project
from evalsite.site.itemindex import input_snippets
from evalsite.site.matrixdata import SharedTexts, matrix_part
from evalsite.site.output import SiteWriter
from evalsite.site.pages import (
    PAGES,
    Kit,
    PageJob,
    compare,
    datasets,
    decisions,
    experiments,
    home,
    items,
    judges,
    register_page,
    reports,
    runs,
    search,
)
from evalsite.site.plugin_code import package_roots, source_files
from evalsite.site.report import SiteReport
from evalsite.site.settings import SiteSettings, site_settings
from evalsite.site.theme import Theme, load_theme

#: Derived per-run figures, local to the project (see :mod:`evalsite.site.figures`).
CACHE_DIR = ".evalsite/site-cache"
#: Allocations between two young-generation collections during a build (Python's default is 700).
GC_THRESHOLD = 100_000
#: Seconds a thread may hold the interpreter lock while another waits for it, during a build (Python's default is 0.005).
SWITCH_INTERVAL = 0.0005
for _family in (home, runs, datasets, experiments, decisions, compare, reports, items, search, judges):  # in build order
    register_page(_family.__name__.rpartition(".")[2])(_family.jobs)


def build_site(project: Project, out_dir: Path | None = None, *, redact: bool | None = None,
               full: bool = False, live_reload: bool = False) -> SiteReport:
    """Build (or update) the site of ``project`` in ``out_dir`` (default ``[site] out``)."""
    with _fewer_collections(), _quick_thread_switches():
        return _build(project, out_dir, redact=redact, full=full, live_reload=live_reload)


@contextmanager
def _fewer_collections() -> Iterator[None]:
    """Run the cycle collector less often while building. A build holds hundreds of thousands of
    long-lived objects (cases, summaries, matrix cells) that the default thresholds make Python scan
    again and again: a fifth to a third of a build's CPU at 100,000 cases, for no memory saved
    (measured with bench/site.py). The thresholds are put back afterwards."""
    before = gc.get_threshold()
    gc.set_threshold(GC_THRESHOLD, *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)


@contextmanager
def _quick_thread_switches() -> Iterator[None]:
    """Let a thread waiting for the interpreter lock take it sooner while building. The
    leaderboards' thread releases the lock in each numpy call, then has to take it back from the
    build's thread, which renders pages in Python: with Python's default interval (5 ms) it waits
    that long again and again, and the leaderboards a new run joins finished last (measured with
    bench/site.py at 1M cases). The interval is put back afterwards."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(SWITCH_INTERVAL)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def _build(project: Project, out_dir: Path | None, *, redact: bool | None, full: bool, live_reload: bool) -> SiteReport:
    started = time.perf_counter()
    unchanged_key = None if full or live_reload else unchanged.inputs_key(project, out_dir, redact)  # before reading anything
    settings = site_settings(project.settings, redact=redact)
    out_dir = _output_folder(project, out_dir, settings)
    cache = SiteCache(project.root / CACHE_DIR, root=project.root)
    kept_hashes = cache.kept_values(HASHES_FILE, HASHES_FILE)  # the code's files too: hashed again only when changed
    code = kept_file_hash(kept_hashes, *sorted(PACKAGE_DIR.rglob("*.py")), *map(Path, page_plugin_sources()))
    inputs = scan_project(project, kept_hashes)
    inputs.kept_datasets = cache.kept_values(DATASETS_FILE, code)
    theme = load_theme(project.templates_dir, project.static_dir, project.root)
    kit = Kit(inputs, settings, theme, settings.title or project.root.name, live_reload=live_reload)
    jobs = [job for family in PAGES.values() for job in family(inputs, settings)]
    writer = SiteWriter.open(out_dir, int(settings.warn_file_mb * 1024 * 1024), full=full)
    common = _build_identity(code, settings, project.settings, theme.content_hash, live_reload, kit.site_title)
    hashes = {job.key: sha256_json([common, inputs.combined_hash(list(job.inputs)), job.variant]) for job in jobs}
    stale = [job for job in jobs if not writer.is_fresh(job.key, hashes[job.key])]
    _write_assets(writer, theme)
    try:
        cache.recall_intervals(code)  # before any leaderboard starts bootstrapping
        kept = _RunCache(cache, code)
        inputs.kept_columns = lambda run_id: cache.case_columns(kept.key(inputs, run_id))
        inputs.kept_cells = lambda run_id: cache.case_cells(kept.key(inputs, run_id))
        inputs.has_kept_columns = lambda run_id: cache.has_columns(kept.key(inputs, run_id))
        waiting = _start_leaderboards(inputs, stale, lambda run_id: cache.has_cells(kept.key(inputs, run_id)))
        kit.pair_counts = cache.kept_values(PAIRS_FILE, common)
        _render(kit, writer, stale, hashes, kept, waiting)
    except BaseException as exc:
        _abandon(writer)
        if not isinstance(exc, TemplateError):
            raise
        lineno = getattr(exc, "lineno", None)  # syntax errors say where; other template errors do not
        where = f"{getattr(exc, 'filename', None) or getattr(exc, 'name', None)}, line {lineno}: " if lineno else ""
        raise SiteError(f"template error: {where}{exc.message or exc}") from None
    finally:
        inputs.close()
    for job in jobs:
        if job.key not in writer.current:
            writer.keep(job.key)
    writer.finish()
    files = writer.files()
    report = SiteReport(
        out_dir=out_dir,
        pages=sum(1 for f in files if f.endswith(".html")),
        rendered=len(stale),
        kept=len(jobs) - len(stale),
        files=len(files),
        bytes=sum((out_dir / f).stat().st_size for f in files),
        seconds=round(time.perf_counter() - started, 3),
        input_hash=inputs.combined_hash(),
        skipped_runs=list(inputs.skipped),
        warnings=[*inputs.manifest_problems, *inputs.decision_problems, *inputs.outside, *theme.warnings, *writer.warnings, *_cache_warnings(project, cache)],
    )
    if not full and not live_reload:  # what the next build reports if nothing changes: no page written, so no size warning
        again = replace(report, rendered=0, kept=len(jobs), warnings=[*inputs.manifest_problems, *inputs.decision_problems,
                                                                     *inputs.outside, *theme.warnings, *_cache_warnings(project, cache)])
        unchanged.remember(project, unchanged_key, again, writer.out_dir)
    return report


def _abandon(writer: SiteWriter) -> None:
    """Record what a failed build wrote (:meth:`SiteWriter.abandon`), unless even that fails: the
    build's own error is the one to report."""
    with contextlib.suppress(OSError, SiteError):
        writer.abandon()


def _cache_warnings(project: Project, cache: SiteCache) -> list[str]:
    if cache.refused is None:
        return []
    return [f"{cache.refused.relative_to(project.root).as_posix()}: a symlink or not a folder; "
            "the build cache is not used (nothing there is read, written or deleted)"]


def _output_folder(project: Project, out_dir: Path | None, settings: SiteSettings) -> Path:
    """``--out`` as given, else ``[site] out``, which must stay inside the project (a pull request can
    edit evalsite.toml); never the project itself or a folder holding it, nor one of the folders the
    build reads (``runs/``, ``reports/``, …) or a folder inside or holding one: the build writes and
    deletes pages there."""
    folder = Path(out_dir) if out_dir is not None else project.inside(Path(settings.out), "[site] out")
    resolved, root = Path(os.path.realpath(folder)), project.root.resolve()
    if resolved == root or resolved in root.parents:
        raise SiteError(f"{folder}: the site folder would hold the whole project; choose another --out")
    for inputs in _input_folders(project):
        if resolved == inputs or inputs in resolved.parents or resolved in inputs.parents:
            shown = Path(os.path.relpath(inputs, root)).as_posix()
            raise SiteError(f"{folder}: the site folder would mix with the project's {shown}/ folder, which the "
                            "build reads; choose another --out")
    return folder


def _input_folders(project: Project) -> list[Path]:
    """The project's folders a build reads or keeps its cache in (their real paths)."""
    folders = (project.runs_dir, project.data_dir, project.experiments_dir, project.root / "reports",
               project.templates_dir, project.static_dir, project.root / ".evalsite")
    return [Path(os.path.realpath(folder)) for folder in folders]


@dataclass(frozen=True)
class _RunCache:
    """The project's :class:`~evalsite.site.figures.SiteCache`, keyed by a run's files, the dataset
    file its critical flags may come from, and the code that computes the figures."""

    cache: SiteCache
    code: str

    def key(self, inputs: ProjectInputs, run_id: str) -> str:
        return sha256_json([self.code, [inputs.hashes.get(key) for key in inputs.summary_keys([run_id])]])


class _Rendered(NamedTuple):
    """A job rendered in a child process (:func:`_render_aside`): its files, and the pair counts its
    render computed (the runs table reads them)."""

    files: dict[str, bytes]
    pair_counts: dict[str, Any]


_Aside = dict[str, Forked[_Rendered]]  # job key → the child rendering it


def _render(kit: Kit, writer: SiteWriter, stale: list[PageJob], hashes: dict[str, str], cache: _RunCache,
            waiting: dict[str, str]) -> None:
    aside: _Aside = {}  # jobs rendering in a child process, collected in their turn (a run's own page last)
    try:
        _render_jobs(kit, writer, stale, hashes, cache, waiting, aside)
    finally:
        for page in aside.values():  # the build failed before their turn: no child outlives it
            page.cancel()


def _render_jobs(kit: Kit, writer: SiteWriter, stale: list[PageJob], hashes: dict[str, str], cache: _RunCache,
                 waiting: dict[str, str], aside: _Aside) -> None:
    own = {job.cases_of: job for job in stale if job.cases_of}
    stale_keys = {job.key for job in stale}
    by_key = {job.key: job for job in stale}
    wanted = {run_id for job in stale for run_id in (*job.figures, *job.matrix_of)}
    matrix_wanted = {run_id for job in stale for run_id in job.matrix_of}
    shared = SharedTexts()  # one copy of the row starts and snippets the runs of a dataset share
    late: dict[str, _OwnPage] = {}  # run pages rendering in a child, collected after the other pages

    def cached_or_read(run: Run) -> CachedRun | _ReadRun:
        entry = None if run.run_id in own else cache.cache.get(cache.key(kit.inputs, run.run_id), matrix=run.run_id in matrix_wanted)
        return entry or _read_run(kit, cache, run, waiting, lambda read: _start_aside(kit, run.run_id, read, own.get(run.run_id), by_key, aside))

    first = {run.run_id: cached_or_read(run) for run in kit.inputs.runs if run.run_id in waiting}  # the leaderboards wait
    for run in kit.inputs.runs:
        run_id = run.run_id
        if run_id not in own and run_id not in wanted:
            continue
        found = first.pop(run_id) if run_id in first else cached_or_read(run)
        if isinstance(found, CachedRun):
            kit.figures[run_id] = found.figures
            if found.matrix is not None:
                kit.matrix_parts[run_id] = shared.of(found.matrix)
            continue
        scanned, critical, columns = found
        texts = scanned.texts
        assert texts is not None
        summary = summarise_run(columns)
        kit.figures[run_id] = RunFigures.of(summary, _item_buckets(kit, columns.item_ids))
        column = run_column(run, columns, texts.output)  # its row starts are those of an earlier run of the same items
        part = matrix_part(column, input_snippets(columns, texts), shared.row_starts(column.item_ids))
        cache.cache.put(cache.key(kit.inputs, run_id), run_id, kit.figures[run_id], part)
        if run_id in matrix_wanted:
            kit.matrix_parts[run_id] = shared.of(part)
        job = own.get(run_id)
        if job is not None:
            late[job.key] = _OwnPage(job, summary, replace(scanned, columns=columns))
            if job.key not in aside:  # rendered here, in its turn
                _run_own_job(kit, writer, late.pop(job.key), hashes, None)
        if critical is None:  # the columns a comparison reads (no dataset stands in for critical flags)
            cache.cache.put_columns(cache.key(kit.inputs, run_id), scanned.columns)
            compare.compare_read_run(kit, run_id, scanned, stale_keys, aside)
    kit.inputs.prefetch_leaderboards(set(waiting.values()))  # a run that was not read after all (its cache entry kept)
    rendered = {key: _collected(kit, aside.pop(key)) for key in list(aside) if key not in late}  # before any page reads their pair counts
    for job in sorted((job for job in stale if not job.cases_of), key=_reads_leaderboards):
        _run_job(kit, writer, job, hashes, rendered.get(job.key))
    for key, page in late.items():  # last: the other pages render while the child does
        _run_own_job(kit, writer, page, hashes, _collected(kit, aside.pop(key)))
    cache.cache.keep_only({cache.key(kit.inputs, run.run_id) for run in kit.inputs.runs})
    cache.cache.keep_intervals(cache.code)
    kit.pair_counts.save()
    kit.inputs.kept_hashes.save()
    kit.inputs.kept_datasets.save()


class _OwnPage(NamedTuple):
    """A read run's own page job, with what it renders from (its summary and cases)."""

    job: PageJob
    summary: RunSummary
    cases: ScannedCases


def _run_own_job(kit: Kit, writer: SiteWriter, page: _OwnPage, hashes: dict[str, str], rendered: _Rendered | None) -> None:
    """A read run's own page: the files its child rendered, else rendered here from its summary and cases."""
    run_id = page.job.cases_of
    assert run_id is not None
    kit.summaries, kit.cases = {run_id: page.summary}, {run_id: page.cases}
    _run_job(kit, writer, page.job, hashes, rendered)
    kit.summaries, kit.cases = {}, {}


def _item_buckets(kit: Kit, item_ids: tuple[str, ...]) -> set[str]:
    """The item pages a run's items are on: those of a run of the same items whose matrix part the
    build holds (a bucket depends on the item's id alone), else each item's."""
    for run_id, part in kit.matrix_parts.items():
        if part.column.item_ids == item_ids:
            return set(kit.figures[run_id].buckets)
    return {paths.item_bucket(item_id) for item_id in item_ids}


class _ReadRun(NamedTuple):
    scanned: ScannedCases
    critical: dict[str, bool] | None  # the dataset's flags, where it stands in for the cases' own
    columns: CaseColumns  # with those flags


def _read_run(kit: Kit, cache: _RunCache, run: Run, waiting: dict[str, str], start_aside: Callable[[_ReadRun], None]) -> _ReadRun:
    """A run's one reading, as columns, its cells kept at once: a dataset whose leaderboards wait
    for this run (a new run; ``waiting`` then loses it) starts them here, before the build
    summarises the run, draws its matrix part and renders its page. Just before they start, while
    the build has no other thread, ``start_aside`` may start rendering the run's own pages in child
    processes (:func:`_start_aside`)."""
    scanned = scan_cases(run.directory, texts=True)
    critical = kit.inputs.critical_items(run, scanned.columns)
    read = _ReadRun(scanned, critical, with_dataset_critical(scanned.columns, critical))
    cache.cache.put_cells(cache.key(kit.inputs, run.run_id), case_cells(run.run_id, read.columns))  # no critical flag among them
    if run.run_id in waiting:  # its dataset's leaderboards read these cells, now kept, rather than the run's file
        if _one_thread():
            start_aside(read)
        kit.inputs.prefetch_leaderboards({waiting.pop(run.run_id)})
    return read


def _start_aside(kit: Kit, run_id: str, read: _ReadRun, job: PageJob | None, stale: dict[str, PageJob], aside: _Aside) -> None:
    """Start rendering, each in a child process, the pages of a run just read that are its own work
    alone: its own page (``job``, if stale; its data scripts) and its stale compare pages (the
    comparison; only from cases the build holds: :func:`~evalsite.site.pages.compare.pages_aside`)."""
    if job is not None:
        cases = replace(read.scanned, columns=read.columns)

        def own_page() -> None:
            kit.summaries, kit.cases = {run_id: summarise_run(cases.columns)}, {run_id: cases}

        _render_aside(kit, job, own_page, aside)
    if read.critical is None:  # the build compares the cases as read (no dataset stands in for critical flags)
        for compare_job, prepare in compare.pages_aside(kit, run_id, read.scanned, stale):
            _render_aside(kit, compare_job, prepare, aside)


def _render_aside(kit: Kit, job: PageJob, prepare: Callable[[], None], aside: _Aside) -> None:
    """Start rendering a job in a child process, on the second core, while this one goes on with the
    build and the leaderboards' thread with their statistics, which would otherwise share this
    process's interpreter lock with it (a new run's page and data scripts, its comparison: most of a
    one-new-run rebuild's own work). The child starts from this process as it is, calls ``prepare``
    (what the job's turn would have made ready) and renders the job as :func:`_run_job` would (the same bytes); the build collects its files
    in the job's turn, a run's own page after every other page (the build renders those meanwhile
    rather than wait: the run page is the child's longest work, and the last a rebuild waits for). Only while this is the process's one thread (a fork copies the calling thread
    alone, and DuckDB's threads are not running: the child must never call DuckDB; the callers
    check both), and only where :func:`evalsite.forked.forked` forks (Linux, a spare core); else the
    job renders in its turn."""

    def render() -> _Rendered:
        prepare()
        kit.stamp = kit.inputs.combined_hash(list(job.inputs))
        return _Rendered(job.render(kit), kit.pair_counts.used)

    child = forked(render)
    if child is not None:
        aside[job.key] = child


def _collected(kit: Kit, child: Forked[_Rendered] | None) -> _Rendered | None:
    """What a child rendered, its pair counts now the build's; None without a child, or when the
    child ended without a result (killed: the job renders in the build)."""
    if child is None:
        return None
    try:
        rendered = child.result()
    except WorkerLost:
        return None
    kit.pair_counts.adopt(rendered.pair_counts)
    return rendered


def _start_leaderboards(inputs: ProjectInputs, stale: list[PageJob], has_cells: Callable[[str], bool]) -> dict[str, str]:
    """Start the leaderboards stale pages show (:meth:`~evalsite.site.inputs.ProjectInputs.prefetch_leaderboards`),
    except those of a dataset whose runs all have kept cells but one this build reads (a new run):
    those wait for that read, which keeps its cells, so no run is read twice (the leaderboards'
    thread would read it with DuckDB while this one reads it for its page). Returns the waiting ones,
    as the run they wait for → its dataset. When several runs lack cells (a full build) they start
    at once: the thread reads them on the second core while this one renders."""
    read = {run_id for job in stale for run_id in (*job.figures, *job.matrix_of, *((job.cases_of,) if job.cases_of else ()))}
    waiting: dict[str, str] = {}
    now: set[str] = set()
    for dataset_id in _leaderboard_datasets(inputs, stale):
        missing = [run.run_id for run in inputs.runs if run.header.dataset.dataset_id == dataset_id and not has_cells(run.run_id)]
        if len(missing) == 1 and missing[0] in read:
            waiting[missing[0]] = dataset_id
        else:
            now.add(dataset_id)
    inputs.prefetch_leaderboards(now)
    return waiting


def _leaderboard_datasets(inputs: ProjectInputs, stale: list[PageJob]) -> set[str]:
    """The datasets whose leaderboards stale pages show."""
    wanted: set[str | None] = set()
    for job in stale:
        if _reads_leaderboards(job):
            wanted |= {inputs.by_id[run_id].header.dataset.dataset_id for run_id in job.figures}
    return {dataset_id for dataset_id in wanted if dataset_id}


def _reads_leaderboards(job: PageJob) -> bool:
    """The home page's verdict cards, the dataset pages and the experiments' matrices (their
    aggregate rows) show leaderboards; they render last, while the leaderboards' bootstraps run on
    their own thread (the order of jobs does not change a byte)."""
    return job.key == "home" or job.key.startswith(("dataset:", "experiment:"))


def _one_thread() -> bool:
    """Whether this is the process's one Python thread (no leaderboards' thread, no server's watcher)."""
    return threading.active_count() == 1


def _run_job(kit: Kit, writer: SiteWriter, job: PageJob, hashes: dict[str, str], rendered: _Rendered | None = None) -> None:
    """Render a job (or take the files a child rendered for it: :func:`_render_aside`) and write them."""
    kit.stamp = kit.inputs.combined_hash(list(job.inputs))
    writer.write(job.key, hashes[job.key], job.render(kit) if rendered is None else rendered.files)


def _write_assets(writer: SiteWriter, theme: Theme) -> None:
    key = "static"
    if writer.is_fresh(key, theme.content_hash):
        writer.keep(key)
    else:
        writer.write(key, theme.content_hash, dict(theme.files))


def page_plugin_sources() -> list[str]:
    """The source files of every page family's package from outside evalsite (a plugin's, or one a
    program registered): the pages they render change with them as with evalsite's own code."""
    modules = [getattr(family, "__module__", None) for family in PAGES.values()]
    return source_files(package_roots(module for module in modules if isinstance(module, str)))  # exec'd: None


def _build_identity(code: str, settings: SiteSettings, project_settings: JSONObject, theme_hash: str, live_reload: bool,
                    title: str) -> str:
    """Everything besides a job's inputs that shapes its pages: version, code, theme, the site's
    settings and every other table of evalsite.toml (``[analysis]`` clusters and directions, ``[ci]``
    …: they change figures, so a page built under other settings is stale)."""
    every_setting = json.dumps(project_settings, sort_keys=True, default=str)  # TOML dates are not JSON
    return sha256_json([__version__, code, theme_hash, asdict(settings), every_setting, live_reload, title])
