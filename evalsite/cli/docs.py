"""``evalsite docs``: the documentation that ships with evalsite, read from the terminal.

The wheel carries the repository's ``docs/`` as ``evalsite/docs/`` (pyproject's force-include), so a
pip user has the same pages a reader of the repository has, with no URL to know; in a checkout the
pages are read from ``docs/`` beside the package.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import click

from evalsite.errors import EvalsiteError, did_you_mean
from evalsite.project import shipped_folder


def docs_dir() -> Path:
    """``evalsite/docs`` inside the wheel when installed, ``docs/`` beside the package in a checkout."""
    return shipped_folder("docs", "docs")


class UnknownPageError(EvalsiteError):
    """PAGE names no page, or more than one: a usage error (exit 2), as click gives a bad argument."""

    exit_code = 2


@dataclass(frozen=True)
class DocPage:
    name: str  # the path under docs/ without ``.md``: ``guide``, ``reference/targets``
    path: Path

    @property
    def title(self) -> str:
        """The page's first heading, or its name."""
        with self.path.open(encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("# "):
                    return line[2:].strip()
        return self.name


def doc_pages(folder: Path) -> list[DocPage]:
    """Every page under ``folder``, the guide first, then by name."""
    pages = [DocPage(path.relative_to(folder).with_suffix("").as_posix(), path) for path in folder.rglob("*.md")]
    return sorted(pages, key=lambda page: (page.name != "guide", page.name))


def find_page(pages: list[DocPage], wanted: str) -> DocPage:
    """The page named ``wanted``: its whole name (``reference/targets``) or its last part(s)
    (``targets``, ``commands/run``) when only one page ends so; ``.md`` may be given."""
    wanted = wanted.removesuffix(".md").strip("/")
    by_name = {page.name: page for page in pages}
    if wanted in by_name:
        return by_name[wanted]
    ending = [page for page in pages if page.name.endswith("/" + wanted)]
    if len(ending) == 1:
        return ending[0]
    if ending:
        names = ", ".join(page.name for page in ending)
        raise UnknownPageError(f"docs page {wanted!r} is ambiguous: {names}; give one of these names")
    short_names = sorted({page.name.rsplit("/", 1)[-1] for page in pages} | set(by_name))
    raise UnknownPageError(f"no docs page {wanted!r}{did_you_mean(wanted, short_names)} "
                        "('evalsite docs' lists the pages)")


@click.command("docs")
@click.argument("page", required=False)
@click.option("--path", "path_only", is_flag=True, help="Print the page's file path (or, with no PAGE, the folder) "
              "instead of its text, to open it in an editor or a markdown viewer.")
def docs_command(page: str | None, path_only: bool) -> None:
    """List the documentation pages that ship with evalsite, or print one.

    PAGE is a page's name or its unique ending (guide, targets, commands/run); it prints as markdown."""
    folder = docs_dir()
    if not folder.is_dir():
        raise EvalsiteError(f"the documentation is not installed with this evalsite (no {folder})")
    pages = doc_pages(folder)
    if page is None:
        if path_only:
            click.echo(str(folder))
            return
        width = max(len(entry.name) for entry in pages)
        for entry in pages:
            click.echo(f"{entry.name:<{width}}  {entry.title}")
        click.echo(f"\n'evalsite docs PAGE' prints one ({folder}).", err=True)
        return
    found = find_page(pages, page)
    if path_only:
        click.echo(str(found.path))
        return
    click.echo(found.path.read_text(encoding="utf-8"), nl=False)
