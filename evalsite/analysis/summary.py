"""A run's totals from its case records (used for ``end.json``, ``show`` and ``rescore``).

Besides the case totals this computes one aggregate per evaluator and the run's verdict:

- ``n`` scores (one per case, or one per turn for a ``single_turn`` evaluator), ``ok`` (neither
  an error nor skipped), ``errors``, ``skipped``;
- ``pass_rate`` = passes / n, so errors and skips count against it (None without a pass rule);
- ``mean`` of the scores that were produced, ``label_counts`` for categorical outputs;
- ``critical_failures``: ids (``<item>`` or ``<item>.t<turn>``) of rows marked
  ``metadata.critical`` whose score did not pass;
- ``passed``: every score passed (None without a pass rule);
- ``served_models``: the models the provider said answered, in order of first appearance, and
  ``served_model_changed`` when there is more than one (the run's model drifted mid-run).

An evaluator has a pass rule in a run when any of its scores carries ``passed``. The run's
verdict ``passed`` is true when every evaluator with a pass rule passed every score with no
error, false otherwise, and None when no evaluator has one (or there are no evaluators: the
run is then ``unscored``).
"""

from __future__ import annotations

from collections import Counter
from statistics import fmean


def unit_id(case: dict, score: dict) -> str:
    """What one score is about: the item, or ``<item>.t<turn>`` for a per-turn score."""
    turn = score.get("turn")
    return str(case.get("item_id")) if turn is None else f"{case.get('item_id')}.t{turn}"


def summarise_cases(cases: list[dict]) -> dict:
    scores = [c["score"] for c in cases if c.get("score") is not None]
    verdicts = [c["passed"] for c in cases if c.get("passed") is not None]
    costs = [c["cost_usd"] for c in cases if c.get("cost_usd") is not None]
    latencies = [c["latency_ms"] for c in cases if c.get("latency_ms") is not None]
    scoring_costs = [c["scoring_cost_usd"] for c in cases if c.get("scoring_cost_usd") is not None]
    evaluators = summarise_evaluators(cases)
    ruled = [e["passed"] for e in evaluators.values() if e["passed"] is not None]
    return {
        "cases": len(cases),
        "errors": sum(1 for c in cases if c.get("error")),
        "scored": len(scores),
        "unscored": not evaluators,
        "mean_score": fmean(scores) if scores else None,
        "pass_rate": fmean(verdicts) if verdicts else None,
        "passed": all(ruled) if ruled else None,
        "critical_failures": sorted({str(c["item_id"]) for c in cases if c.get("critical") and c.get("passed") is False}),
        "cost_usd": sum(costs) if costs and len(costs) == len(cases) else None,
        "scoring_cost_usd": sum(scoring_costs) if scoring_costs else None,
        "mean_latency_ms": fmean(latencies) if latencies else None,
        **served_models(cases),
        "evaluators": evaluators,
    }


def served_models(cases: list[dict]) -> dict:
    """The models that answered (from the providers' responses) and whether they changed mid-run."""
    models = list(dict.fromkeys(c["served_model"] for c in cases if c.get("served_model")))
    return {"served_models": models, "served_model_changed": len(models) > 1}


def summarise_evaluators(cases: list[dict]) -> dict[str, dict]:
    """One aggregate per evaluator name, in the order evaluators first appear."""
    grouped: dict[str, list[tuple[dict, dict]]] = {}
    for case in cases:
        for score in case.get("scores") or []:
            grouped.setdefault(score["evaluator"], []).append((case, score))
    return {name: _aggregate(entries) for name, entries in grouped.items()}


def _aggregate(entries: list[tuple[dict, dict]]) -> dict:
    scores = [score for _, score in entries]
    errors = sum(1 for s in scores if s.get("error"))
    skipped = sum(1 for s in scores if s.get("skipped") and not s.get("error"))
    produced = [s for s in scores if not s.get("error") and not s.get("skipped")]
    values = [s["score"] for s in produced if s.get("score") is not None]
    labels = Counter(str(s["label"]) for s in produced if s.get("label") is not None)
    ruled = any(s.get("passed") is not None for s in scores)
    passes = sum(1 for s in scores if s.get("passed") is True)
    return {
        "version": scores[0].get("version"),
        "n": len(scores),
        "ok": len(produced),
        "errors": errors,
        "skipped": skipped,
        "pass_rate": passes / len(scores) if ruled else None,
        "mean": fmean(values) if values else None,
        "label_counts": dict(sorted(labels.items())),
        "critical_failures": sorted({unit_id(c, s) for c, s in entries if c.get("critical") and s.get("passed") is False}),
        "passed": passes == len(scores) if ruled else None,
    }
