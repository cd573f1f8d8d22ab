"""Where the page families plugins add live: their packages' source, which shapes the pages as
evalsite's own code does (a new version of a plugin renders other pages, so a build must not keep
the old ones). Only the standard library: the nothing-new check (:mod:`evalsite.site.unchanged`)
looks here before anything heavy is loaded."""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterable

#: the entry-point group through which an installed package adds page families (docs/reference/plugins.md)
PAGES_GROUP = "evalsite.pages"


def page_plugin_modules() -> list[str]:
    """The modules the ``evalsite.pages`` entry points name (read from the installed packages' metadata)."""
    from importlib.metadata import entry_points  # only when a build looks: it costs more to import than the rest

    return sorted({entry.module for entry in entry_points(group=PAGES_GROUP)})


def package_roots(modules: Iterable[str]) -> list[str]:
    """The folder of each top-level package ``modules`` belong to (the file of a top-level module),
    evalsite's own left out; found without importing what is not imported yet. A name that cannot
    be found is left out (loading it fails the build anyway, naming it)."""
    roots: set[str] = set()
    for top in {module.partition(".")[0] for module in modules} - {"evalsite"}:
        roots.update(_locations(top))
    return sorted(roots)


def source_files(roots: Iterable[str]) -> list[str]:
    """Every ``.py`` file under ``roots`` (a root that is a file: itself), sorted."""
    files: set[str] = set()
    for root in roots:
        if os.path.isfile(root):
            files.add(root)
            continue
        for folder, subfolders, names in os.walk(root):
            subfolders[:] = [name for name in subfolders if name != "__pycache__"]
            files.update(os.path.join(folder, name) for name in names if name.endswith(".py"))
    return sorted(files)


def _locations(top: str) -> list[str]:
    module = sys.modules.get(top)
    if module is not None:
        folders, origin = getattr(module, "__path__", None), getattr(module, "__file__", None)
    else:
        try:
            spec = importlib.util.find_spec(top)
        except (ImportError, ValueError):
            return []
        if spec is None:
            return []
        folders, origin = spec.submodule_search_locations, spec.origin
    if folders:
        return [str(folder) for folder in folders]
    return [origin] if isinstance(origin, str) and os.path.isfile(origin) else []
