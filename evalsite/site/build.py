"""Build the static site: scan every input, decide which jobs are stale, render them, write the folder.

Order of work: scan (headers and hashes only) → for each run a stale job needs, read its cases once,
summarise them (:func:`evalsite.analysis.summary.summarise_run`) and render its own run pages → render the pages that read those summaries → write the build
record. A job whose inputs, theme, settings and code are unchanged since the last build is kept as it
is on disk, so an incremental build gives the same bytes as a full one.
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from jinja2 import TemplateError

from evalsite import __version__
from evalsite.analysis.summary import summarise_run
from evalsite.errors import SiteError
from evalsite.project import Project
from evalsite.runlog.hashing import sha256_json
from evalsite.runlog.store import CASES_FILE, read_cases
from evalsite.site.inputs import file_hash, scan_project
from evalsite.site.output import SiteWriter
from evalsite.site.pages import Job, Kit, compare, datasets, decisions, experiments, home, items, reports, runs, search
from evalsite.site.settings import SiteSettings, site_settings
from evalsite.site.theme import PACKAGE_DIR, load_theme

#: Page families in build order; a new family is one more module here.
FAMILIES = (home, runs, datasets, experiments, decisions, compare, reports, items, search)


@dataclass(frozen=True)
class SiteReport:
    """What a build did; ``--json`` prints it."""

    out_dir: Path
    pages: int
    rendered: int
    kept: int
    files: int
    bytes: int
    seconds: float
    input_hash: str
    skipped_runs: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        data = asdict(self)
        data["out_dir"] = str(self.out_dir)
        return data


def build_site(project: Project, out_dir: Path | None = None, *, redact: bool | None = None,
               full: bool = False, live_reload: bool = False) -> SiteReport:
    """Build (or update) the site of ``project`` in ``out_dir`` (default ``[site] out``)."""
    started = time.perf_counter()
    settings = site_settings(project.settings, redact=redact)
    out_dir = _output_folder(project, out_dir, settings)
    inputs = scan_project(project)
    theme = load_theme(project.templates_dir, project.static_dir, project.root)
    kit = Kit(inputs, settings, theme, settings.title or project.root.name, live_reload=live_reload)
    jobs = [job for family in FAMILIES for job in family.jobs(inputs, settings)]
    writer = SiteWriter.open(out_dir, int(settings.warn_file_mb * 1024 * 1024), full=full)
    common = _build_identity(settings, theme.content_hash, live_reload, kit.site_title)
    hashes = {job.key: sha256_json([common, inputs.combined_hash(list(job.inputs)), job.variant]) for job in jobs}
    stale = [job for job in jobs if not writer.is_fresh(job.key, hashes[job.key])]
    _write_assets(writer, theme)
    try:
        _render(kit, writer, stale, hashes)
    except TemplateError as exc:
        where = f"{exc.filename or exc.name}, line {exc.lineno}: " if getattr(exc, "lineno", None) else ""
        raise SiteError(f"template error: {where}{exc.message or exc}") from None
    for job in jobs:
        if job.key not in writer.current:
            writer.keep(job.key)
    writer.finish()
    files = writer.files()
    return SiteReport(
        out_dir=out_dir,
        pages=sum(1 for f in files if f.endswith(".html")),
        rendered=len(stale),
        kept=len(jobs) - len(stale),
        files=len(files),
        bytes=sum((out_dir / f).stat().st_size for f in files),
        seconds=round(time.perf_counter() - started, 3),
        input_hash=inputs.combined_hash(),
        skipped_runs=list(inputs.skipped),
        warnings=[*inputs.decision_problems, *inputs.outside, *theme.warnings, *writer.warnings],
    )


def _output_folder(project: Project, out_dir: Path | None, settings: SiteSettings) -> Path:
    """``--out`` as given, else ``[site] out``, which must stay inside the project (a pull request can
    edit evalsite.toml); never the project itself or a folder holding it."""
    folder = Path(out_dir) if out_dir is not None else project.inside(Path(settings.out), "[site] out")
    resolved, root = Path(os.path.realpath(folder)), project.root.resolve()
    if resolved == root or resolved in root.parents:
        raise SiteError(f"{folder}: the site folder would hold the whole project; choose another --out")
    return folder


def _render(kit: Kit, writer: SiteWriter, stale: list[Job], hashes: dict[str, str]) -> None:
    needed = {run_id for job in stale for run_id in job.digests}
    by_cases = {job.cases_of: job for job in stale if job.cases_of}
    for run in kit.inputs.runs:
        if run.run_id not in needed:
            continue
        warnings: list[str] = []
        cases = read_cases(run.directory / CASES_FILE, warnings)
        kit.digests[run.run_id] = summarise_run(cases, kit.inputs.critical_items(run, cases))
        job = by_cases.get(run.run_id)
        if job is not None:
            kit.cases, kit.case_warnings = {run.run_id: cases}, {run.run_id: warnings}
            _run_job(kit, writer, job, hashes)
            kit.cases, kit.case_warnings = {}, {}
    for job in stale:
        if not job.cases_of:
            _run_job(kit, writer, job, hashes)


def _run_job(kit: Kit, writer: SiteWriter, job: Job, hashes: dict[str, str]) -> None:
    kit.stamp = kit.inputs.combined_hash(list(job.inputs))
    writer.write(job.key, hashes[job.key], job.render(kit))


def _write_assets(writer: SiteWriter, theme) -> None:
    key = "static"
    if writer.is_fresh(key, theme.content_hash):
        writer.keep(key)
    else:
        writer.write(key, theme.content_hash, dict(theme.files))


def _build_identity(settings: SiteSettings, theme_hash: str, live_reload: bool, title: str) -> str:
    """Everything besides a job's inputs that shapes its pages: version, code, theme, settings."""
    code = file_hash(*sorted(PACKAGE_DIR.rglob("*.py")))
    return sha256_json([__version__, code, theme_hash, asdict(settings), live_reload, title])
