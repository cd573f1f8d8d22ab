"""``decisions.html``: promotions and other decisions, newest first, reasons rendered from markdown;
and the current baselines (the latest promotion per dataset and arm) that the home page lists."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from evalsite.runlog.decisions import REVIEW
from evalsite.runlog.fingerprint import fingerprint_hash
from evalsite.site import paths
from evalsite.site.inputs import DecisionEntry, ProjectInputs
from evalsite.site.pages import Kit, PageContext, PageJob, doc
from evalsite.site.pages.common import dataset_link
from evalsite.site.safe_text import markdown
from evalsite.site.settings import SiteSettings
from evalsite.site.tables import Column, Link, Table

DECISION_COLUMNS = [
    Column("when", "when", "when"), Column("action", "action"), Column("run", "run", "code"),
    Column("dataset", "dataset", "code"), Column("arm", "arm"), Column("who", "who"),
    Column("check", "check", "status", "whether the run still exists with the recorded fingerprint"),
    Column("reason", "reason"),
]


@dataclass(kw_only=True)
class DecisionView:
    """One decision with its reason rendered."""

    decision: DecisionEntry = doc("The decision as read from runs/decisions.jsonl (line, action, run_id, reason, when, who, dataset_id, inputs_id, arm_id, fingerprint_hash).")
    run: Link | str = doc("Link to the run page, or the run id when the run is not in runs/.")
    check: str = doc("'ok', 'run missing' or 'fingerprint changed'.")
    reason_html: Markup = doc("The reason rendered from markdown (raw HTML escaped).")


@dataclass(kw_only=True)
class DecisionsPage(PageContext):
    """``decisions.html``."""

    decisions: list[DecisionView] = doc("Every decision, newest first.")
    table: Table = doc("The same decisions as a table (for the downloads).")
    problems: list[str] = doc("Lines of runs/decisions.jsonl that could not be read.")


def check_decision(decision: DecisionEntry, inputs: ProjectInputs) -> str:
    run = inputs.by_id.get(decision.run_id or "")
    if run is None:
        return "run missing"
    if fingerprint_hash(run.header.fingerprint) != decision.fingerprint_hash:
        return "fingerprint changed"
    return "ok"


def newest_first(decisions: list[DecisionEntry]) -> list[DecisionEntry]:
    """The file is append-only: later lines are newer."""
    return sorted(decisions, key=lambda d: d.line, reverse=True)


def current_baselines(inputs: ProjectInputs) -> list[DecisionEntry]:
    """The latest promotion for each (dataset, arm), as `evalsite compare` resolves it."""
    latest: dict[tuple[str | None, str | None], DecisionEntry] = {}
    for decision in inputs.decisions:
        if decision.action == "promote":
            latest[(decision.dataset_id, decision.arm_id)] = decision
    return newest_first(list(latest.values()))


def decision_row(decision: DecisionEntry, inputs: ProjectInputs) -> dict[str, Any]:
    return {
        "when": decision.when, "action": decision.action, "run": run_link(decision, inputs),
        "dataset": dataset_link(decision.dataset_id), "arm": decision.arm_id, "who": decision.who,
        "check": check_decision(decision, inputs), "reason": decision.reason,
    }


def run_link(decision: DecisionEntry, inputs: ProjectInputs) -> Link | str:
    if decision.run_id and decision.run_id in inputs.by_id:
        return Link(decision.run_id, paths.run(decision.run_id))
    return decision.run_id or "—"


def jobs(inputs: ProjectInputs, settings: SiteSettings) -> list[PageJob]:
    keys = ("decisions", *(f"run:{run.run_id}" for run in inputs.runs))
    return [PageJob("decisions", keys, _render)]


def _render(kit: Kit) -> dict[str, bytes]:
    inputs = kit.inputs
    ordered = newest_first([d for d in inputs.decisions if d.action != REVIEW])  # ratings: judges.html
    views = [DecisionView(decision=d, run=run_link(d, inputs), check=check_decision(d, inputs),
                          reason_html=markdown(d.reason)) for d in ordered]
    table = Table("decisions", DECISION_COLUMNS, [decision_row(d, inputs) for d in ordered], sortable=True)
    return kit.page(paths.DECISIONS, "decisions.html",
                    DecisionsPage(title="Decisions", decisions=views, table=table, problems=inputs.decision_problems))
