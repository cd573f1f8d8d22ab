"""``evalsite compare`` and ``evalsite promote``."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from evalsite.analysis.ci_files import write_summary
from evalsite.analysis.markdown import compare_markdown
from evalsite.analysis.wording import p_clause
from evalsite.cli.complete import complete_runs
from evalsite.cli.console import paint
from evalsite.cli.export import (
    CSV,
    HTML,
    JSON,
    MARKDOWN,
    OutputFile,
    Result,
    output_option,
    project_input_refused,
    write_output,
)
from evalsite.cli.fit import fitted, wide_option
from evalsite.cli.output import LISTED, Listed, first, format_value, joined, left_out, print_json, warn_unreadable_runs
from evalsite.cli.params import LEVEL, NOT_NEGATIVE
from evalsite.project import find_project
from evalsite.runlog.store import Run

if TYPE_CHECKING:
    from evalsite.analysis.compare import ComparisonReport
    from evalsite.analysis.item_changes import ItemChange
    from evalsite.analysis.regression import RegressionReport, RegressionSummary

#: ``evalsite.analysis.regression.THRESHOLD`` and ``evalsite.analysis.compare.ALPHA``, named here so
#: that loading the commands (shell completion) loads no statistics; tests/test_cli_lazy.py checks them.
THRESHOLD = 0.05
ALPHA = 0.05
#: Where the baseline came from (``evalsite.analysis.baselines``' EXPLICIT, PROMOTED, PRIOR).
SOURCES = {
    "explicit": "given with --baseline",
    "promoted": "the promoted baseline",
    "prior": "the most recent older completed run of this arm on this dataset",
}
DIFF_VALUE_WIDTH = 60
#: Where a cut list's every entry is, said after its "… and N more".
ALL_OF_THEM = "--all, --json or --output FILE.json"


@click.command("compare")
@click.argument("run", shell_complete=complete_runs)
@click.option("--baseline", metavar="RUN", shell_complete=complete_runs, help="Compare against this run (default: the promoted baseline, else the prior run).")
@click.option("--threshold", type=NOT_NEGATIVE, default=THRESHOLD, show_default=True,
              help="Per-item score change beyond which an item counts as improved or regressed.")
@click.option("--noise", type=NOT_NEGATIVE,
              help="The spread σ of one repeat's mean score: Δ is tested against it (default: measured from repeats).")
@click.option("--alpha", type=LEVEL, default=ALPHA, show_default=True,
              help="Significance level of the paired test for the gate.")
@click.option("--fail-on", type=click.Choice(["regression"]),
              help="Exit 1 on a significant regression or a critical row newly failing.")
@click.option("--allow-missing-baseline", is_flag=True,
              help="With --fail-on regression, pass when the run has no baseline (a first run) instead of failing.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--all", "show_all", is_flag=True,
              help=f"List every item and id (default: the first {LISTED} of each list, then how many more).")
@click.option("--summary", "summary_file", type=click.Path(path_type=Path), callback=project_input_refused,
              help="Append a markdown summary here (also to $GITHUB_STEP_SUMMARY when set).")
@output_option("compare", JSON, CSV, MARKDOWN, HTML)
@wide_option
def compare_command(run: str, baseline: str | None, threshold: float, noise: float | None, alpha: float,
                    fail_on: str | None, allow_missing_baseline: bool, as_json: bool, show_all: bool,
                    summary_file: Path | None, output: OutputFile | None) -> None:
    """Compare RUN with its baseline, fingerprint first.

    Prints the fingerprint diff, refuses runs that are not comparable, and reports what
    improved and regressed, per item and per evaluator, with the paired test."""
    from evalsite.analysis.compare import compare_runs

    project = find_project()
    warn_unreadable_runs(project.runs_dir)
    report = compare_runs(project, run, baseline=baseline, threshold=threshold, noise=noise, alpha=alpha)
    data = report.to_json() if as_json or output else None
    if as_json:
        print_json(data)
    else:
        with fitted():
            print_report(report, listed=None if show_all else LISTED)
    markdown = compare_markdown(report)
    write_summary(markdown, summary_file)
    if output is not None and data is not None:
        write_output(output, Result(f"evalsite compare {report.current.run_id}", data, report.table(data), markdown))
    report.refuse_if_not_comparable()
    if fail_on == "regression" and report.baseline is None and not allow_missing_baseline:
        click.echo(f"gate: {paint('fail', 'bad', err=True)}: no baseline to compare with, so no regression can be ruled "
                   "out (promote one, or pass --allow-missing-baseline to accept a first run)", err=True)
        sys.exit(1)
    if fail_on == "regression" and report.gate is not None and report.gate.failed:
        for reason in report.gate.reasons:
            click.echo(f"gate: {paint('fail', 'bad', err=True)}: {reason}", err=True)
        sys.exit(1)


@click.command("promote")
@click.argument("run", shell_complete=complete_runs)
@click.option("--reason", required=True, help="Why this run becomes the baseline (recorded with it).")
@click.option("--allow-dirty", is_flag=True, help="Promote a run from a dirty tree or an unknown build.")
@click.option("--allow-critical", is_flag=True, help="Promote a run even though a critical row failed (recorded).")
@click.option("--json", "as_json", is_flag=True, help="Print the decision as JSON.")
def promote_command(run: str, reason: str, allow_dirty: bool, allow_critical: bool, as_json: bool) -> None:
    """Make RUN the baseline of its arm, with a reason.

    Appends the decision to runs/decisions.jsonl. Refuses a run with a failed critical row
    (unless --allow-critical) or more failed generations than [ci] max_error_rate."""
    from evalsite.analysis.baselines import promote

    decision = promote(find_project(), run, reason, allow_dirty=allow_dirty, allow_critical=allow_critical)
    if as_json:
        print_json(asdict(decision))
    else:
        click.echo(f"promoted {decision.run_id} as the baseline of arm {decision.arm_id} on {decision.dataset_id}")


def _run_line(label: str, run: Run) -> str:
    return f"{label:<9} {run.run_id}  arm {run.header.arm_id}  {run.header.dataset.dataset_id}  {run.status}"


def _short(value: Any) -> str:
    text = "—" if value is None else json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= DIFF_VALUE_WIDTH else text[: DIFF_VALUE_WIDTH - 1] + "…"


def _signed(value: float | None) -> str:
    return "—" if value is None else f"{value:+.3f}"


def print_report(report: ComparisonReport, *, listed: int | None = LISTED, all_of_them: str = ALL_OF_THEM) -> None:
    """The report on stdout; each list of items or ids shows its first ``listed`` entries (every
    one when None), then "… and N more (all of them: ``all_of_them``)"."""
    click.echo(_run_line("run", report.current))
    if report.baseline is None:
        click.echo(
            f"no prior run: no promoted baseline and no older completed run of arm {report.current.header.arm_id} "
            "on this dataset; nothing to compare"
        )
        return
    click.echo(_run_line("baseline", report.baseline) + f"  ({SOURCES[report.baseline_source]})")
    if report.promotion is not None:
        click.echo(f"          promoted {report.promotion.at} by {report.promotion.by or 'unknown'}: {report.promotion.reason}")
    _print_diff(report)
    verdict, gate = report.comparability, report.gate
    if verdict is not None and verdict.comparable and report.regression is not None and gate is not None:
        note = "; expected values edited" if verdict.ground_truth_edited else ""
        click.echo(f"comparable: same questions and evaluators{note}")
        if report.dataset_note:
            click.echo(report.dataset_note)
        _print_regression(report.regression, gate.alpha, listed, all_of_them)
        click.echo(f"gate (α = {gate.alpha}): "
                   + (paint("fail", "bad") + ": " + "; ".join(gate.reasons) if gate.failed else paint("pass", "good")))


def _print_diff(report: ComparisonReport) -> None:
    diff = report.fingerprint_diff
    if not diff:
        click.echo(f"\nfingerprint: identical ({report.current.header.fingerprint_hash})")
        return
    click.echo(f"\nfingerprint: {len(diff)} field{'s' * (len(diff) != 1)} differ (baseline → run)")
    width = max(len(d.path) for d in diff)
    for d in diff:
        click.echo(f"  {d.path.ljust(width)}  {_short(d.old)} → {_short(d.new)}")
    click.echo()


def noise_phrase(s: RegressionSummary, alpha: float) -> str:
    """The noise verdict in words; it never says "within noise" for a change the paired test separates."""
    if s.noise is None or s.noise_p is None:  # set together (analysis.regression)
        return "noise unknown (repeat the run or pass --noise)"
    spread = f"repeat spread σ {s.noise:.3f} ({s.noise_source}), noise test {p_clause(s.noise_p)} over {s.noise_items} items"
    if s.within_noise:
        return f"within noise ({spread}; neither test separates Δ at α = {alpha})"
    if s.noise_p >= alpha:
        return f"not noise: the paired test separates Δ, though the repeat spread alone would not ({spread})"
    return f"beyond noise ({spread})"


def _item_line(item: ItemChange) -> str:
    note = "  re-scored" if item.rescored else f"  {item.note}" if item.note else ""
    return f"  {item.item_id}  {format_value(item.baseline_score)} → {format_value(item.current_score)}  Δ {_signed(item.delta)}{note}"


def _item_lines(items: Listed[ItemChange], listed: int | None, all_of_them: str) -> str:
    """One line an item, cut after ``listed`` by a line "… and N more (all of them: …)"."""
    shown, more = first(items, listed)
    return "\n".join([*map(_item_line, shown), *([f"  {left_out(more, all_of_them)}"] if more else [])])


def _print_regression(report: RegressionReport, report_alpha: float, listed: int | None, all_of_them: str) -> None:
    s = report.summary
    click.echo(
        f"\nitems: {s.compared} compared · {s.improved} improved · {s.regressed} regressed · "
        f"{s.unchanged} unchanged · {s.gt_changed} gt_changed · {s.rescored} re-scored  (threshold {report.threshold})"
    )
    if s.compared and report.sequence is not None:  # a stop_when run: its sequence, never a fixed-n test
        click.echo(f"mean: {s.baseline_mean:.3f} → {s.current_mean:.3f}  Δ {s.mean_delta:+.3f}  "
                   f"{report.sequence.phrase('this run', 'the baseline', s.mean_delta or 0.0)}")
    elif s.compared:
        noise = noise_phrase(s, report_alpha)
        click.echo(
            f"mean: {s.baseline_mean:.3f} → {s.current_mean:.3f}  Δ {s.mean_delta:+.3f} (net {s.net_delta:+.3f})  "
            f"{s.confidence:.0%} CI [{_signed(s.ci_low)}, {_signed(s.ci_high)}]  "
            f"paired sign-flip {p_clause(s.p_value)} ({s.test_kind}"
            + (f", whole clusters flipped: {s.n_units} clusters" if s.unit == "cluster" else "") + f")  {noise}"
        )
    from evalsite.analysis.item_changes import GT_CHANGED, IMPROVED, REGRESSED

    title_kinds = {REGRESSED: "bad", IMPROVED: "good"}
    for classification, title in ((REGRESSED, "regressed"), (IMPROVED, "improved"), (GT_CHANGED, "gt_changed, left out of every number")):
        items = report.classified(classification).largest_first()  # cut, the list keeps the largest changes
        if items:
            click.echo(f"\n{paint(title, title_kinds.get(classification, 'muted'))} ({len(items)}):")
            click.echo(_item_lines(items, listed, all_of_them))  # one write for 50,000 lines (--all)
    for title, ids in (("only in the baseline", report.only_in_baseline), ("only in this run", report.only_in_current),
                       ("unscored on a side", report.unscored), ("critical rows newly failing", report.critical_newly_failing)):
        if ids:
            click.echo(f"\n{title} ({len(ids)}): {joined(ids, listed, all_of_them)}")
    for e in report.evaluators:
        click.echo(
            f"\nevaluator {e.evaluator}: pass rate {format_value(e.baseline_pass_rate)} → {format_value(e.current_pass_rate)} "
            f"({_signed(e.pass_rate_delta)}) · mean {format_value(e.baseline_mean)} → {format_value(e.current_mean)} "
            f"({_signed(e.mean_delta)}) · errors {e.baseline_errors} → {e.current_errors} ({e.error_delta:+d})"
        )
        for title, ids in (("newly failing", e.newly_failing), ("newly passing", e.newly_passing), ("still failing", e.still_failing)):
            if ids:
                click.echo(f"  {title} ({len(ids)}): {joined(ids, listed, all_of_them)}")
    click.echo()
