"""The site renders analysis results and imports no statistics (DESIGN.md, layering).

Every module under ``evalsite/site/`` is parsed and every import in it is checked — module level,
inside functions (lazy imports), under ``if TYPE_CHECKING:``, relative or absolute, and
``from evalsite import stats`` — so a page that starts computing a statistic of its own fails
here, naming the file, the line and the import. ``tests/test_layers.py`` checks what importing a
layer loads; this checks what the site's source asks for, which also covers imports a run never
reaches.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "evalsite"
FORBIDDEN = "evalsite.stats"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _package_of(path: Path) -> str:
    name = _module_name(path)
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def imported_names(source: str, package: str) -> list[tuple[int, str]]:
    """(line, dotted name) of every module an import in ``source`` names, anywhere in the tree;
    ``from a import b`` yields both ``a`` and ``a.b`` (b may be a module), relative imports are
    resolved against ``package``."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            found.append((node.lineno, base))
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return found


def stats_imports(source: str, package: str) -> list[str]:
    return [f"line {line}: {name}" for line, name in imported_names(source, package)
            if name == FORBIDDEN or name.startswith(FORBIDDEN + ".")]


def test_no_module_of_the_site_imports_the_statistics():
    modules = sorted((PACKAGE / "site").rglob("*.py"))
    assert len(modules) > 20  # the scan really walks the site's package
    offenders = {
        str(path.relative_to(PACKAGE.parent)): found
        for path in modules if (found := stats_imports(path.read_text(encoding="utf-8"), _package_of(path)))
    }
    assert offenders == {}, f"evalsite/site imports evalsite.stats (pages render the verdict, they compute nothing): {offenders}"


def test_the_scan_finds_lazy_type_checking_relative_and_package_imports():
    planted = """
from typing import TYPE_CHECKING
if TYPE_CHECKING:
    from evalsite.stats.proportions import Interval
def page():
    import evalsite.stats.ranking
    from ...stats import tied_groups
    from evalsite import stats
    from evalsite.analysis import verdict
"""
    assert stats_imports(planted, "evalsite.site.pages") == [
        "line 4: evalsite.stats.proportions", "line 4: evalsite.stats.proportions.Interval",
        "line 6: evalsite.stats.ranking", "line 7: evalsite.stats", "line 7: evalsite.stats.tied_groups",
        "line 8: evalsite.stats",
    ]
