"""Page families: each module turns project inputs into jobs, each job renders one page (with its
downloads and shards) from a documented context dataclass.

A family module exposes ``jobs(inputs, settings) -> list[PageJob]``. A job names the inputs it is built
from (keys of :attr:`ProjectInputs.hashes`) so an incremental build can skip it, the runs whose
figures it reads (``figures``: run ids; the build puts each run's
:class:`~evalsite.site.figures.RunFigures` in ``kit.figures``), the runs whose matrix columns it
reads (``matrix_of``), and a ``render(kit)`` that returns ``{path: bytes}``. Families are
registered with :func:`register_page` in :data:`PAGES` (the built-ins by :mod:`evalsite.site.build`,
in build order; an installed package's ``evalsite.pages`` entry point adds its own after them).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import MISSING, dataclass, field, fields
from typing import Any

from evalsite import __version__
from evalsite.analysis.case_scan import ScannedCases
from evalsite.analysis.summary import RunSummary
from evalsite.errors import SiteError
from evalsite.registry import Registry
from evalsite.site import paths
from evalsite.site.figures import KeptValues, RunFigures
from evalsite.site.inputs import ProjectInputs
from evalsite.site.matrixdata import MatrixPart
from evalsite.site.settings import SiteSettings
from evalsite.site.tables import tables_in
from evalsite.site.theme import Theme


def doc(help: str, default: Any = MISSING, **kwargs: Any) -> Any:
    """A context field with its help text (every field of every page context has one)."""
    if default is not MISSING:
        kwargs["default"] = default
    return field(metadata={"help": help}, **kwargs)


@dataclass(kw_only=True)
class PageContext:
    """What every template receives, besides its family's own fields."""

    title: str = doc("The page title (shown in the browser tab and as the page heading).")
    root: str = doc("Prefix leading from this page back to the site root ('' or '../' per level); put it before every site link.", "")
    stamp: str = doc("Hash of the inputs this page was built from (runs, manifests, decisions): equal stamps, equal data.", "")
    version: str = doc("The evalsite version that built the page.", __version__)
    site_title: str = doc("The project's title ([site] title, else the project folder's name).", "")
    live_reload: bool = doc("True under `evalsite serve`: the page polls for rebuilds and reloads itself.", False)
    redacted: bool = doc("True when [site] redact leaves inputs, expected values and outputs out.", False)


@dataclass(frozen=True)
class PageJob:
    """One unit of an incremental build: a page with its downloads and data scripts. ``variant`` holds
    anything else the page shows that its input files do not determine (e.g. which run is a run's
    baseline); it is part of the job's hash."""

    key: str
    inputs: tuple[str, ...]
    render: Callable[[Kit], dict[str, bytes]]
    figures: tuple[str, ...] = ()
    cases_of: str | None = None
    matrix_of: tuple[str, ...] = ()
    variant: str = ""


@dataclass
class Kit:
    """What a job's ``render`` may use: inputs, settings, theme, the runs' figures (run id →
    :class:`~evalsite.site.figures.RunFigures`), the matrix parts of the runs it asked for, and —
    for a run's own job — that run's summary and cases (read as columns and texts, its critical flags
    filled in from its dataset where the cases did not record them)."""

    inputs: ProjectInputs
    settings: SiteSettings
    theme: Theme
    site_title: str
    live_reload: bool = False
    figures: dict[str, RunFigures] = field(default_factory=dict)
    summaries: dict[str, RunSummary] = field(default_factory=dict)
    cases: dict[str, ScannedCases] = field(default_factory=dict)
    matrix_parts: dict[str, MatrixPart] = field(default_factory=dict)
    pair_counts: KeptValues = field(default_factory=KeptValues.unsaved)
    stamp: str = ""

    def page(self, path: str, template: str, context: PageContext) -> dict[str, bytes]:
        """Render ``context`` with ``template`` at ``path``; every table in it gets CSV and JSON files beside the page."""
        context.root = paths.root_of(path)
        context.stamp = self.stamp
        context.site_title = self.site_title
        context.live_reload = self.live_reload
        context.redacted = self.settings.redact
        stem = path.removesuffix(".html")
        tables = list(tables_in(context))
        seen: set[str] = set()
        for table in tables:
            if table.id in seen:
                raise ValueError(f"{path}: two tables share the id {table.id!r}")
            seen.add(table.id)
            table.download_stem = f"{stem}.{table.id}"
        variables = {f.name: getattr(context, f.name) for f in fields(context)}
        html = self.theme.env.get_template(template).render(page=context, **variables)
        files = {path: html.encode("utf-8")}
        for table in tables:
            files[f"{table.download_stem}.csv"] = table.to_csv().encode("utf-8")
            files[f"{table.download_stem}.json"] = table.to_json().encode("utf-8")
        return files


PageFamily = Callable[[ProjectInputs, SiteSettings], list[PageJob]]
PAGES: Registry[PageFamily] = Registry("page family", "evalsite.pages", SiteError)


def register_page(name: str, *, replace: bool = False) -> Callable[[PageFamily], PageFamily]:
    """Register ``jobs(inputs, settings) -> list[PageJob]`` as the page family ``name``; a taken
    name is refused unless ``replace``."""

    def decorate(jobs: PageFamily) -> PageFamily:
        return PAGES.register(name, jobs, replace=replace)

    return decorate
