"""``evalsite plan-size``: the items a ``stop_when`` run expects to use, beside the fixed-n design."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import click

from evalsite.cli.output import print_json, print_table
from evalsite.cli.params import FINITE, LEVEL, NOT_NEGATIVE, POSITIVE, SEED
from evalsite.errors import PlanError

if TYPE_CHECKING:
    from evalsite.stats.stopping_design import StoppingPlan

COUNT = click.IntRange(min=1)


@click.command("plan-size")
@click.option("--delta", type=FINITE, required=True, help="Assumed difference in mean score between adjacent arms.")
@click.option("--base", type=LEVEL, default=0.5, show_default=True, help="Mean score of the worst arm.")
@click.option("--sd", type=POSITIVE, default=None,
              help="Continuous scores whose per-item difference has this spread (default: pass/fail scores).")
@click.option("--nested", is_flag=True, help="Pass/fail arms where a better arm is right wherever a worse one is.")
@click.option("--cluster-size", type=COUNT, default=1, show_default=True,
              help="Items per cluster; the sequence then runs over cluster means.")
@click.option("--cluster-shift", type=NOT_NEGATIVE, default=0.0, show_default=True,
              help="Each cluster's mean score moves by ±this per arm (how alike a cluster's items are).")
@click.option("--items", "n_items", type=COUNT, default=1000, show_default=True, help="Items in the dataset.")
@click.option("--arms", type=click.IntRange(min=2), default=2, show_default=True, help="Arms, means stepping by --delta.")
@click.option("--alpha", type=LEVEL, default=0.05, show_default=True, help="Familywise error over every pair of arms.")
@click.option("--margin", type=POSITIVE, default=None,
              help="Stop a pair as equivalent once its interval lies inside ±MARGIN.")
@click.option("--min-items", type=COUNT, default=30, show_default=True, help="First look after this many items.")
@click.option("--check-every", type=COUNT, default=20, show_default=True, help="Look after every block of this many items.")
@click.option("--max-items", type=COUNT, default=None, help="Stop undecided after this many items (default: --items).")
@click.option("--sims", "n_sims", type=COUNT, default=1000, show_default=True, help="Simulated experiments.")
@click.option("--seed", type=SEED, default=0, show_default=True, help="Seed of the simulation.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def plan_size_command(delta: float, base: float, sd: float | None, nested: bool, cluster_size: int, cluster_shift: float,
                      n_items: int, arms: int, alpha: float, margin: float | None, min_items: int, check_every: int,
                      max_items: int | None, n_sims: int, seed: int, as_json: bool) -> None:
    """Items a stop_when run is expected to use for an assumed difference, by simulation.

    Beside it, on the same simulated data, the fixed-n design (the paired sign-flip test of every
    pair on all items, Holm-corrected): its power, and the items it needs for the same power."""
    from evalsite.stats.stopping_design import Scenario, simulate_stopping

    scenario = Scenario(delta, base=base, sd=sd, arms=arms, nested=nested, cluster_size=cluster_size,
                        cluster_shift=cluster_shift)
    try:
        plan = simulate_stopping(scenario, n_items=n_items, alpha=alpha, margin=margin, min_items=min_items,
                                 check_every=check_every, max_items=max_items, n_sims=n_sims, seed=seed)
    except ValueError as exc:
        raise PlanError(str(exc)) from None
    if as_json:
        print_json({"scenario": dataclasses.asdict(scenario), "alpha": alpha, "margin": margin, "min_items": min_items,
                    "check_every": check_every, "seed": seed, "plan": dataclasses.asdict(plan)})
        return
    scores = f"continuous scores (sd of a difference {sd:g})" if sd is not None else "pass/fail scores"
    clusters = f", clusters of {cluster_size} (±{cluster_shift:g})" if cluster_size > 1 else ""
    click.echo(f"Δ {delta:+g} between adjacent arms from {base:g}, {scores}{', nested' if nested else ''}{clusters}; "
               f"{arms} arms ({plan.pairs} pair{'s' if plan.pairs > 1 else ''}), α {alpha:g} familywise; "
               f"{n_sims:,} simulated experiments, seed {seed}")
    print_table(_rows(plan), ["design", "items_median", "items_mean", "items_p10", "items_p90", "decided"])
    click.echo(f"stop_when: looks every {check_every} items from {min_items}, stops when every pair is separated"
               f"{f' or equivalent within ±{margin:g}' if margin else ''}, else at {plan.max_items:,} items")
    if plan.false_separation_rate:
        click.echo(f"false separations (a pair declared apart the wrong way): {plan.false_separation_rate:.3f}")


def _rows(plan: StoppingPlan) -> list[dict[str, str]]:
    rows = [{"design": "stop_when (anytime-valid)", "items_median": f"{plan.items_median:,.0f}",
             "items_mean": f"{plan.items_mean:,.1f}", "items_p10": f"{plan.items_p10:,.0f}",
             "items_p90": f"{plan.items_p90:,.0f}", "decided": f"{plan.decided_rate:.1%}"}]
    rows.append(_fixed(f"fixed-n, all {plan.n_items:,} items", plan.n_items, plan.fixed_power))
    if plan.fixed_items is not None and plan.fixed_items_power is not None:
        rows.append(_fixed("fixed-n, same power", plan.fixed_items, plan.fixed_items_power))
    return rows


def _fixed(design: str, items: int, power: float) -> dict[str, str]:
    count = f"{items:,}"
    return {"design": design, "items_median": count, "items_mean": count, "items_p10": count, "items_p90": count,
            "decided": f"{power:.1%}"}
