"""A run's totals from its case records (used for ``end.json`` and ``show``)."""

from __future__ import annotations

from statistics import fmean


def summarise_cases(cases: list[dict]) -> dict:
    scores = [c["score"] for c in cases if c.get("score") is not None]
    verdicts = [c["passed"] for c in cases if c.get("passed") is not None]
    costs = [c["cost_usd"] for c in cases if c.get("cost_usd") is not None]
    latencies = [c["latency_ms"] for c in cases if c.get("latency_ms") is not None]
    return {
        "cases": len(cases),
        "errors": sum(1 for c in cases if c.get("error")),
        "scored": len(scores),
        "mean_score": fmean(scores) if scores else None,
        "pass_rate": fmean(verdicts) if verdicts else None,
        "cost_usd": sum(costs) if costs and len(costs) == len(cases) else None,
        "mean_latency_ms": fmean(latencies) if latencies else None,
    }
