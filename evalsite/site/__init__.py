"""The static-site renderer: pages from run logs, inline SVG charts, incremental builds, ``serve``."""

from evalsite.site.build import SiteReport, build_site

__all__ = ["SiteReport", "build_site"]
