"""``evalsite review export`` / ``review import`` and ``evalsite judge-agreement``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from evalsite.cli.output import print_json
from evalsite.cli.params import SEED
from evalsite.project import find_project

if TYPE_CHECKING:
    from evalsite.analysis.judge_agreement import JudgeAgreement
    from evalsite.stats.proportions import Interval


@click.group("review")
def review_group() -> None:
    """Human review of cases: export a sample to rate, import the ratings."""


@review_group.command("export")
@click.option("--out", "out", type=click.Path(path_type=Path), help="Write the sample here (default: stdout).")
@click.option("--per-stratum", default=5, show_default=True, type=click.IntRange(min=1),
              help="Cases drawn from each stratum (an arm and its judges' verdicts).")
@click.option("--seed", default=0, show_default=True, type=int, help="Seed of the draw.")
@click.option("--evaluator", "evaluators", multiple=True,
              help="Stratify by this evaluator's verdict (repeatable; default: every llm_judge).")
def export_command(out: Path | None, per_stratum: int, seed: int, evaluators: tuple[str, ...]) -> None:
    """Write a JSONL sample of cases to rate, stratified by arm and by each llm_judge's verdict."""
    from evalsite.analysis.review import export_sample, write_sample

    lines = export_sample(find_project(), per_stratum=per_stratum, seed=seed, evaluators=evaluators)
    text = write_sample(lines, out)
    if out is None:
        click.echo(text, nl=False)
    else:
        click.echo(f"wrote {len(lines)} cases to rate to {out}: fill in each line's rating (pass, fail or unsure) "
                   "and comment, then `evalsite review import`", err=True)


@review_group.command("import")
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--reviewer", help="Who rated (overrides each line's reviewer; default: the line's, else git's user).")
@click.option("--json", "as_json", is_flag=True, help="Print what was recorded as JSON.")
def import_command(file: Path, reviewer: str | None, as_json: bool) -> None:
    """Record FILE's ratings as the human evaluator's scores in runs/decisions.jsonl."""
    from evalsite.analysis.review import import_ratings

    result = import_ratings(find_project(), file, reviewer)
    if as_json:
        print_json(result.to_json())
        return
    click.echo(f"recorded {result.recorded} ratings by {', '.join(result.reviewers) or 'nobody'} in runs/decisions.jsonl"
               f" ({result.unchanged} already recorded, {result.unrated} lines not rated)")


@click.command("judge-agreement")
@click.option("--evaluator", "evaluators", multiple=True, help="Compare this evaluator (repeatable; default: every llm_judge).")
@click.option("--seed", default=0, show_default=True, type=SEED, help="Seed of the bootstrap.")
@click.option("--resamples", default=2000, show_default=True, type=click.IntRange(min=1), help="Bootstrap resamples.")
@click.option("--json", "as_json", is_flag=True, help="Print every judge's agreement as JSON.")
def judge_agreement_command(evaluators: tuple[str, ...], seed: int, resamples: int, as_json: bool) -> None:
    """Each judge against the human ratings: Cohen's κ, raw agreement, confusion, disagreements."""
    from evalsite.analysis.judge_agreement import judge_agreement

    results = judge_agreement(find_project().runs_dir, evaluators=evaluators, seed=seed, n_resamples=resamples)
    if as_json:
        print_json([r.to_json() for r in results])
        return
    if not results:
        click.echo("no rated case has a judge's score: rate cases with `evalsite review export` and "
                   "`evalsite review import` first", err=True)
    for result in results:
        for line in agreement_lines(result):
            click.echo(line)


def agreement_lines(result: JudgeAgreement) -> list[str]:
    """One judge's agreement as text: the figures, the confusion counts, the disagreeing cases."""
    a = result.agreement
    c = a.confusion

    def figure(value: float, interval: Interval) -> str:
        if value != value:
            return "undefined"
        shown = f"{value:.3f}"
        if interval.low == interval.low:
            shown += f" [{interval.low:.3f}, {interval.high:.3f}]"
        return shown

    lines = [
        f"{result.evaluator}: κ {figure(a.kappa, a.kappa_interval)}, raw agreement {figure(a.raw, a.raw_interval)} "
        f"({a.agreed} of {a.n} cases; {a.raw_interval.confidence:.0%} {a.raw_interval.method}, seed {a.seed})",
        f"  left out: {result.unsure} unsure, {result.split} split between reviewers, {result.no_verdict} without a judge verdict",
        f"  judge pass / human pass {c.both_pass}   judge pass / human fail {c.first_only}",
        f"  judge fail / human pass {c.second_only}   judge fail / human fail {c.both_fail}",
    ]
    lines += [f"  disagree: {d.run_id} {d.item_id} #{d.repeat}: judge {d.judge}, human {d.human}"
              + (f" ({'; '.join(d.comments)})" if d.comments else "") for d in result.disagreements]
    return lines
