"""``evalsite check-claims``."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from evalsite.analysis.ci_files import write_summary
from evalsite.analysis.claims import HOLDS, check_claims, write_claims_junit
from evalsite.analysis.markdown import MARKS, claims_markdown
from evalsite.cli.output import print_json
from evalsite.project import find_project


@click.command("check-claims")
@click.argument("files", nargs=-1, type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print every claim's verdict as JSON.")
@click.option("--summary", "summary_file", type=click.Path(path_type=Path),
              help="Append a markdown summary here (also to $GITHUB_STEP_SUMMARY when set).")
@click.option("--junit", "junit_file", type=click.Path(path_type=Path), help="Write JUnit XML, one test per claim.")
def check_claims_command(files, as_json, summary_file, junit_file) -> None:
    """Re-derive every claim in reports/*.md (or FILES) from the runs; exit 1 unless all hold."""
    results = check_claims(find_project(), files)
    if as_json:
        print_json([r.to_json() for r in results])
    else:
        for r in results:
            click.echo(f"{MARKS[r.status]} {r.file}:{r.line} {r.status}: {r.text} — {r.detail}")
        click.echo(f"{sum(r.status == HOLDS for r in results)} of {len(results)} claims hold", err=True)
    write_summary(claims_markdown(results), summary_file)
    if junit_file:
        write_claims_junit(junit_file, results)
    if any(r.status != HOLDS for r in results):
        sys.exit(1)
