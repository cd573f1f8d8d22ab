"""The template-context reference of docs/reference/site.md, generated from the context dataclasses.

``python -m evalsite.site.reference`` prints it, ``python -m evalsite.site.reference --write
docs/reference/site.md`` updates the page; a test fails when the docs fall behind the code.
"""

from __future__ import annotations

import sys
from dataclasses import fields, is_dataclass
from pathlib import Path

from evalsite.site import settings
from evalsite.site.pages import (
    PageContext,
    common,
    compare,
    datasets,
    decisions,
    experiments,
    home,
    items,
    judges,
    reports,
    runs,
)

MODULES = (home, runs, datasets, experiments, decisions, compare, reports, items, judges, common)


def context_classes() -> list[type]:
    found: list[type] = [PageContext]
    for module in MODULES:
        for value in vars(module).values():
            if (isinstance(value, type) and is_dataclass(value) and value.__module__ == module.__name__
                    and not value.__name__.startswith("_") and value not in found):
                found.append(value)
    return found


def _type_name(annotation: object) -> str:
    return str(annotation).replace("evalsite.site.", "").replace("typing.", "").replace("|", "\\|")


def context_reference() -> str:
    lines = []
    for cls in context_classes():
        own = [f for f in fields(cls) if cls is PageContext or f.name not in {g.name for g in fields(PageContext)}]
        summary = (cls.__doc__ or "").strip().splitlines()[0].replace("``", "`") if cls.__doc__ else ""
        lines += [f"### `{cls.__name__}`", "", summary, ""]
        lines += ["| field | type | meaning |", "| --- | --- | --- |"]
        lines += [f"| `{f.name}` | `{_type_name(f.type)}` | {f.metadata['help']} |" for f in own]
        lines.append("")
    return "\n".join(lines).replace("\n\n\n", "\n\n")


def settings_reference() -> str:
    lines = ["| key | default | meaning |", "| --- | --- | --- |"]
    for item in fields(settings.SiteSettings):
        lines.append(f"| `{item.name}` | `{item.default!r}` | {item.metadata['help']} |")
    return "\n".join(lines) + "\n"


def update(path: Path) -> None:
    """Rewrite the generated sections of ``path`` (between ``<!-- generated: X`` and ``<!-- end generated -->``)."""
    text = path.read_text(encoding="utf-8")
    for name, body in (("settings", settings_reference()), ("contexts", context_reference() + "\n")):
        start = text.index(f"<!-- generated: {name}")
        start = text.index("\n", start) + 1
        end = text.index("<!-- end generated -->", start)
        text = text[:start] + body + text[end:]
    path.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--write"]:
        update(Path(sys.argv[2]))
    else:
        print(settings_reference())
        print(context_reference())
