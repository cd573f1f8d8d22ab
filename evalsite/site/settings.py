"""The ``[site]`` table of ``evalsite.toml``: every option declared once, validated in one pass."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any

from evalsite.errors import ProjectError, did_you_mean
from evalsite.jsonshape import JSONObject

#: GitHub Pages refuses files above 100 MB; no file the site writes may exceed it.
HARD_FILE_LIMIT_BYTES = 100 * 1024 * 1024


@dataclass(frozen=True)
class SiteSettings:
    """Options of the site build; each field's ``help`` is what docs/reference/site.md lists."""

    out: str = field(default="site", metadata={"help": "Output folder, relative to the project root."})
    title: str = field(default="", metadata={"help": "Title shown in every page header (default: the project folder's name)."})
    description: str = field(default="", metadata={"help": "One or two sentences under the title on the home page: what the project evaluates."})
    redact: bool = field(default=False, metadata={"help": "Leave inputs, expected values, outputs and evaluator details out of every page and download."})
    cases_per_page: int = field(default=100, metadata={"help": "Cases on one page of a run's case listing (paged in the browser)."})
    items_per_page: int = field(default=50, metadata={"help": "Items on one page of an experiment's arm × item matrix (paged in the browser)."})
    page_budget_kb: int = field(default=1024, metadata={"help": "A data script of a run's cases is split once it holds about this much text (kB), so no file grows large."})
    max_field_chars: int = field(default=20_000, metadata={"help": "Longer inputs, outputs and details are cut to this many characters, with a note saying how much was left out."})
    warn_file_mb: float = field(default=5.0, metadata={"help": "Warn about any written file larger than this many megabytes."})
    recent_runs: int = field(default=20, metadata={"help": "How many runs the home page lists (every run is on runs.html)."})
    compare: tuple[tuple[str, str], ...] = field(default=(), metadata={"help": "More pairs to compare, each [run, baseline] (ids or unique prefixes); every completed run is compared with its resolved baseline anyway."})
    dumbbells: int = field(default=100, metadata={"help": "Most items a compare page draws as dumbbells (the largest changes first)."})

    @property
    def page_budget_bytes(self) -> int:
        return self.page_budget_kb * 1024


def site_settings(project_settings: JSONObject, **overrides: Any) -> SiteSettings:
    """Read ``[site]``, reporting every unknown key and bad value at once; ``None`` overrides are ignored."""
    table = project_settings.get("site", {})
    if not isinstance(table, dict):
        raise ProjectError("evalsite.toml: [site] must be a table")
    declared = {f.name: f for f in fields(SiteSettings)}
    problems = [
        f"unknown key {key!r}{did_you_mean(key, sorted(declared))} (known: {', '.join(sorted(declared))})"
        for key in sorted(set(table) - set(declared))
    ]
    values = {}
    for key, value in sorted(table.items()):
        if key in declared:
            problem = _problem(key, value, declared[key].default)
            if problem:
                problems.append(problem)
            else:
                values[key] = value
    if problems:
        raise ProjectError("evalsite.toml [site]: " + "; ".join(problems))
    if "compare" in values:
        values["compare"] = tuple(tuple(pair) for pair in values["compare"])
    return replace(SiteSettings(**values), **{k: v for k, v in overrides.items() if v is not None})


def _problem(key: str, value: Any, default: Any) -> str | None:
    if isinstance(default, tuple):
        pairs = isinstance(value, list) and all(
            isinstance(p, list) and len(p) == 2 and all(isinstance(r, str) for r in p) for p in value)
        return None if pairs else f"{key}: needs a list of [run, baseline] pairs, got {value!r}"
    if isinstance(default, bool):
        return None if isinstance(value, bool) else f"{key}: needs true or false, got {value!r}"
    if isinstance(default, (int, float)):
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if isinstance(default, int) and not isinstance(value, int):
            number = False
        return None if number and value > 0 else f"{key}: needs a positive number, got {value!r}"
    return None if isinstance(value, str) else f"{key}: needs a string, got {value!r}"
