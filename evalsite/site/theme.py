"""Locate the built-in theme and build the Jinja environment (project overrides first)."""

from __future__ import annotations

from pathlib import Path

from jinja2 import ChoiceLoader, Environment, FileSystemLoader, PrefixLoader, StrictUndefined, select_autoescape

PACKAGE_DIR = Path(__file__).resolve().parent.parent


def builtin_theme_dir(kind: str) -> Path:
    """``templates`` or ``static``: inside the wheel when installed, beside the package in a checkout."""
    installed = PACKAGE_DIR / "theme" / kind
    return installed if installed.is_dir() else PACKAGE_DIR.parent / kind


def environment(project_templates: Path) -> Environment:
    """Project templates override built-ins file by file; ``builtin/`` always reaches the default."""
    builtin = FileSystemLoader(str(builtin_theme_dir("templates")))
    loaders = [FileSystemLoader(str(project_templates))] if project_templates.is_dir() else []
    return Environment(
        loader=ChoiceLoader([*loaders, builtin, PrefixLoader({"builtin": builtin})]),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
    )
