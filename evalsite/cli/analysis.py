"""``evalsite leaderboard``, ``family-test``, ``bootstrap``, ``rank-stability``, ``noise`` and ``holdout``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from evalsite import analysis  # its names load their modules on first use: completion loads none of them
from evalsite.analysis.rows import pick_rows
from evalsite.cli.complete import complete_runs
from evalsite.cli.export import CSV, HTML, JSON, MARKDOWN, OutputFile, Result, output_option, write_output
from evalsite.cli.fit import fitted, wide_option
from evalsite.cli.output import print_json, warn_unreadable_runs
from evalsite.cli.params import LEVEL, POSITIVE, SEED
from evalsite.jsonshape import JSONObject
from evalsite.project import find_project

Report = TypeVar("Report")

#: ``evalsite.analysis.verdict.METRICS``, named here so that loading the commands (shell completion)
#: loads no statistics; tests/test_cli_lazy.py checks that the two agree.
METRIC_NAMES = ("score", "pass_rate", "cost", "latency", "tokens")


dataset_option = click.option(
    "--dataset", metavar="ID", help="Dataset id, unique prefix, or name (optional when one dataset has runs)."
)
evaluator_option = click.option(
    "--evaluator", metavar="NAME", help="Rank on this evaluator's scores (default: the case score, all evaluators combined)."
)
scores_option = click.option(  # for the commands that do not rank arms
    "--evaluator", metavar="NAME",
    help="Use this evaluator's scores and pass/fail (default: the case score, all evaluators combined).",
)
seed_option = click.option("--seed", type=SEED, default=0, show_default=True, help="Seed of every random resample.")
json_option = click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
alpha_option = click.option("--alpha", type=LEVEL, default=0.05, show_default=True, help="Significance level.")
metric_option = click.option(
    "--metric", type=click.Choice(list(METRIC_NAMES)), default="score", show_default=True,
    help="Rank by this statistic (mean over items): cost, latency and tokens rank lowest first.",
)
direction_option = click.option(
    "--direction", type=click.Choice(["higher", "lower"]),
    help="Which way is better for --metric (default: evalsite.toml [analysis.direction], else by name).",
)


#: The ``-o`` table of each report: one row per record of its ``--json`` data (export.pick_rows).
FAMILY_COLUMNS = {
    "vs": "other.label", "vs_run_id": "other.run_id", "items": "n_items", "mean": "mean", "other_mean": "other_mean",
    "mean_diff": "mean_diff", "ci_low": "interval.low", "ci_high": "interval.high", "confidence": "interval.confidence",
    "raw_ci_low": "raw_interval.low", "raw_ci_high": "raw_interval.high", "p": "sign_flip.p_value", "holm_p": "holm_p",
    "mcnemar_p": "mcnemar.p_value", "mcnemar_holm_p": "mcnemar_holm_p", "noise_p": "noise_p", "verdict": "verdict",
}
BOOTSTRAP_COLUMNS = {"statistic": "statistic", "value": "value", "ci_low": "interval.low", "ci_high": "interval.high",
                     "confidence": "interval.confidence", "method": "interval.method"}
STABILITY_COLUMNS = {"rank": "rank", "places": "places", "group": "letters", "arm": "label", "arm_id": "arm_id",
                     "value": "value", "ci_low": "interval.low", "ci_high": "interval.high"}
NOISE_COLUMNS = {"item_id": "item_id", "runs": "runs", "passed": "passed", "pass_rate": "pass_rate", "wilson_low": "wilson_low",
                 "wilson_high": "wilson_high", "pass_at_k": "pass_at_k", "pass_hat_k": "pass_hat_k", "flaky": "flaky"}
HOLDOUT_COLUMNS = {"arm": "label", "arm_id": "arm_id", "run_id": "run_id", "pilot_mean": "pilot_mean",
                   "holdout_mean": "holdout_mean", "pilot_rank": "pilot_rank", "holdout_rank": "holdout_rank"}


def _bootstrap_rows(data: JSONObject) -> list[dict[str, Any]]:
    return pick_rows([{"statistic": name, **data[name]} for name in ("mean", "pass_rate") if data.get(name)], BOOTSTRAP_COLUMNS)


def _noise_rows(data: JSONObject) -> list[dict[str, Any]]:
    items = [{**item, "wilson_low": item["wilson"][0], "wilson_high": item["wilson"][1]} for item in data["items"]]
    return pick_rows(items, NOISE_COLUMNS)


def _holdout_rows(data: JSONObject) -> list[dict[str, Any]]:
    """One row per arm: its means on each split and its rank there (1 = first in that split's order)."""
    check = data["check"]
    arms = [
        {**arm, "pilot_mean": pilot, "holdout_mean": holdout, "pilot_rank": check["pilot_order"].index(index) + 1,
         "holdout_rank": check["holdout_order"].index(index) + 1}
        for index, (arm, pilot, holdout) in enumerate(zip(data["selection"]["arms"], check["pilot_means"], check["holdout_means"]))
    ]
    return pick_rows(arms, HOLDOUT_COLUMNS)


def _emit(report: Report, as_json: bool, printer: Callable[[Report], None], output: OutputFile | None = None,
          title: str = "", rows: Callable[[Any], list[dict[str, Any]]] | None = None) -> None:
    """Print the report (``--json``, else its text fitted to the terminal) and write ``-o`` FILE
    from the same ``--json`` data, ``rows(data)`` its table."""
    data = analysis.json_ready(report) if as_json or output else None
    if as_json:
        print_json(data)
    else:
        with fitted():
            printer(report)
    if output is not None and rows is not None:
        write_output(output, Result(title, data, rows(data)))


@click.command("leaderboard")
@dataset_option
@evaluator_option
@metric_option
@direction_option
@alpha_option
@seed_option
@json_option
@wide_option
@output_option("leaderboard", JSON, CSV, MARKDOWN, HTML)
def leaderboard_command(dataset: str | None, evaluator: str | None, metric: str, direction: str | None, alpha: float,
                        seed: int, as_json: bool, output: OutputFile | None) -> None:
    """Every arm on a dataset, and the order the data supports.

    Arms in the order of the statistic shown; paired sign-flip tests between every pair,
    Holm-corrected, decide which arms are separated; Friedman and Nemenyi beside them as the
    omnibus test; runs left out are listed with the reason."""
    from evalsite.cli import analysis_output as show

    project = find_project()
    warn_unreadable_runs(project.runs_dir)
    chosen = analysis.choose_metric(metric, direction, project.settings)
    report = analysis.leaderboard(project, dataset, evaluator=evaluator, alpha=alpha, seed=seed, metric=chosen)
    _emit(report, as_json, show.leaderboard, output, f"leaderboard · dataset {report.selection.dataset_id}", report.table)


@click.command("family-test")
@click.argument("run", shell_complete=complete_runs)
@click.option("--vs", "others", metavar="RUN", multiple=True, shell_complete=complete_runs, required=True, help="A run of the family (repeat for each).")
@alpha_option
@click.option("--effect", type=POSITIVE,
              help="A mean difference to detect: print how many items that needs.")
@click.option("--all-pairs", is_flag=True,
              help="Holm over every pair of the named runs (the leaderboard's family), not only RUN vs each --vs.")
@scores_option
@seed_option
@json_option
@output_option("family-test", JSON, CSV, MARKDOWN, HTML)
@wide_option
def family_test_command(run: str, others: tuple[str, ...], alpha: float, effect: float | None, all_pairs: bool,
                        evaluator: str | None, seed: int, as_json: bool, output: OutputFile | None) -> None:
    """RUN against a declared family of runs, Holm-corrected.

    Paired sign-flip test per comparison (McNemar beside it for pass/fail), raw and adjusted p,
    verdict at α, noise, and the power of each comparison. Holm corrects over the pairs RUN vs each
    --vs, or over every pair of the runs with --all-pairs; the groups always come from every pair."""
    from evalsite.cli import analysis_output as show

    report = analysis.family_test(find_project(), run, list(others), alpha=alpha, effect=effect, evaluator=evaluator, seed=seed,
                         all_pairs=all_pairs)
    _emit(report, as_json, show.family, output, f"family-test · {report.run.run_id}",
          lambda data: pick_rows(data["comparisons"], FAMILY_COLUMNS))


@click.command("bootstrap")
@click.argument("run", shell_complete=complete_runs)
@click.option("--confidence", type=LEVEL, default=0.95, show_default=True, help="Confidence level of the intervals.")
@seed_option
@click.option("--group", "group_key", metavar="KEY", default=None,
              help="metadata key whose items form clusters, resampled whole (default: [analysis] cluster_key, else group).")
@scores_option
@json_option
@output_option("bootstrap", JSON, CSV, MARKDOWN, HTML)
@wide_option
def bootstrap_command(run: str, confidence: float, seed: int, group_key: str | None, evaluator: str | None,
                      as_json: bool, output: OutputFile | None) -> None:
    """Intervals for RUN's mean and pass rate.

    BCa over clusters when items carry metadata.<group>, else over items, each item's repeats
    averaged first; the output says which and why."""
    from evalsite.cli import analysis_output as show

    report = analysis.bootstrap_report(find_project(), run, evaluator=evaluator, confidence=confidence, seed=seed, group_key=group_key)
    _emit(report, as_json, show.bootstrap, output, f"bootstrap · {report.run.run_id}", _bootstrap_rows)


@click.command("rank-stability")
@dataset_option
@evaluator_option
@metric_option
@direction_option
@alpha_option
@seed_option
@json_option
@output_option("rank-stability", JSON, CSV, MARKDOWN, HTML)
@wide_option
def rank_stability_command(dataset: str | None, evaluator: str | None, metric: str, direction: str | None, alpha: float,
                           seed: int, as_json: bool, output: OutputFile | None) -> None:
    """How many items the separated part of the order of the arms needs.

    Only pairs the paired tests separate are checked: per size, the share of bootstrap samples
    that keep them, and each arm's bootstrap rank interval."""
    from evalsite.cli import analysis_output as show

    project = find_project()
    chosen = analysis.choose_metric(metric, direction, project.settings)
    report = analysis.stability_report(project, dataset, evaluator=evaluator, seed=seed, metric=chosen, alpha=alpha)
    _emit(report, as_json, show.stability, output, f"rank-stability · dataset {report.selection.dataset_id}",
          lambda data: pick_rows(data["arms"], STABILITY_COLUMNS))


@click.command("noise")
@click.argument("run", shell_complete=complete_runs)
@click.option("--k", type=click.IntRange(min=1), help="Repeats drawn by pass@k and pass^k (default: the fewest any item has).")
@click.option("--all", "all_items", is_flag=True, help="List every item, not only the flaky ones.")
@scores_option
@json_option
@output_option("noise", JSON, CSV, MARKDOWN, HTML)
@wide_option
def noise_command(run: str, k: int | None, all_items: bool, evaluator: str | None, as_json: bool,
                  output: OutputFile | None) -> None:
    """RUN's spread across repeats and each item's flakiness.

    Per-repeat means and their spread; per item the pass rate across repeats with its Wilson
    interval, pass@k and pass^k."""
    from evalsite.cli import analysis_output as show

    report = analysis.noise_report(find_project(), run, evaluator=evaluator, k=k)
    _emit(report, as_json, lambda r: show.noise(r, all_items), output, f"noise · {report.run.run_id}", _noise_rows)


@click.command("holdout")
@click.option("--pilot", default="pilot", show_default=True, help="metadata.split value of the pilot items.")
@click.option("--holdout", "holdout_split", default="holdout", show_default=True,
              help="metadata.split value of the holdout items.")
@dataset_option
@evaluator_option
@json_option
@output_option("holdout", JSON, CSV, MARKDOWN, HTML)
@wide_option
def holdout_command(pilot: str, holdout_split: str, dataset: str | None, evaluator: str | None, as_json: bool,
                    output: OutputFile | None) -> None:
    """Does the pilot order of the arms hold on the holdout items?

    Items are split by their metadata.split in the dataset file."""
    from evalsite.cli import analysis_output as show

    report = analysis.holdout_report(find_project(), dataset, evaluator=evaluator, pilot=pilot, holdout=holdout_split)
    _emit(report, as_json, show.holdout, output, f"holdout · dataset {report.selection.dataset_id}", _holdout_rows)
