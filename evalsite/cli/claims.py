"""``evalsite check-claims``."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from evalsite.analysis.ci_files import write_summary
from evalsite.analysis.claims import (
    CLAIMS_SUITE,
    FAILS,
    HOLDS,
    UNCHECKABLE,
    check_claims,
    claims_outcomes,
    write_claims_junit,
)
from evalsite.analysis.markdown import MARKS, claims_markdown
from evalsite.analysis.rows import pick_rows
from evalsite.cli.console import paint
from evalsite.cli.export import (
    CSV,
    HTML,
    JSON,
    JUNIT,
    MARKDOWN,
    OutputFile,
    Result,
    output_option,
    project_input_refused,
    write_output,
)
from evalsite.cli.output import print_json
from evalsite.project import find_project

CLAIM_KINDS = {HOLDS: "good", FAILS: "bad", UNCHECKABLE: "warn"}
CLAIM_COLUMNS = {"file": "file", "line": "line", "kind": "kind", "status": "status", "claim": "text",
                 "detail": "detail", "numbers": "numbers", "runs": "runs"}


@click.command("check-claims")
@click.argument("files", nargs=-1, type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print every claim's verdict as JSON.")
@click.option("--summary", "summary_file", type=click.Path(path_type=Path), callback=project_input_refused,
              help="Append a markdown summary here (also to $GITHUB_STEP_SUMMARY when set).")
@click.option("--junit", "junit_file", type=click.Path(path_type=Path), callback=project_input_refused,
              help="Write JUnit XML, one test per claim.")
@output_option("check-claims", JSON, CSV, MARKDOWN, JUNIT, HTML)
def check_claims_command(files: tuple[Path, ...], as_json: bool, summary_file: Path | None, junit_file: Path | None,
                         output: OutputFile | None) -> None:
    """Re-derive every claim in reports/*.md (or FILES) from the runs; exit 1 unless all hold."""
    results = check_claims(find_project(), files)
    if as_json:
        print_json([r.to_json() for r in results])
    else:
        for r in results:
            kind = CLAIM_KINDS[r.status]
            click.echo(f"{paint(MARKS[r.status], kind)} {r.file}:{r.line} {paint(r.status, kind)}: {r.text} — {r.detail}")
        click.echo(f"{sum(r.status == HOLDS for r in results)} of {len(results)} claims hold", err=True)
    markdown = claims_markdown(results)
    write_summary(markdown, summary_file)
    if junit_file:
        write_claims_junit(junit_file, results)
    data = [r.to_json() for r in results]
    write_output(output, Result("evalsite check-claims", data, pick_rows(data, CLAIM_COLUMNS), markdown,
                                (CLAIMS_SUITE, claims_outcomes(results))))
    if any(r.status != HOLDS for r in results):
        sys.exit(1)
