"""The static-site renderer: pages from run logs, inline SVG charts, incremental builds, ``serve``.

:func:`build_site` first asks :mod:`evalsite.site.unchanged` whether nothing has changed since the
last build; only otherwise does it load the renderer (:mod:`evalsite.site.build`: Jinja, DuckDB,
the page families).
"""

from __future__ import annotations

from pathlib import Path

from evalsite.project import Project
from evalsite.site.report import SiteReport

__all__ = ["SiteReport", "build_site"]


def build_site(project: Project, out_dir: Path | None = None, *, redact: bool | None = None,
               full: bool = False, live_reload: bool = False) -> SiteReport:
    """Build (or update) the site of ``project`` in ``out_dir`` (default ``[site] out``): the report
    of the last build when nothing it read or wrote has changed since, else
    :func:`evalsite.site.build.build_site`."""
    if not full and not live_reload:
        from evalsite.site.unchanged import recorded_report

        report = recorded_report(project, out_dir, redact)
        if report is not None:
            return report
    from evalsite.site.build import build_site as build

    return build(project, out_dir, redact=redact, full=full, live_reload=live_reload)
