"""The static-site renderer."""

from evalsite.site.build import build_site

__all__ = ["build_site"]
