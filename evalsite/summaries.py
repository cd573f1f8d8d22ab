"""Concise markdown summaries of a command's result, for GitHub's step summary or a PR comment.

Each function turns one command's result into markdown; :func:`evalsite.ci.write_summary`
decides where it goes.
"""

from __future__ import annotations

from evalsite.ci import markdown_table

MARKS = {"holds": "✓", "fails": "✗", "cannot be checked": "?"}


def _signed(value: float | None) -> str:
    return "—" if value is None else f"{value:+.3f}"


def claims_markdown(results) -> str:
    """One row per claim directive: mark, text, where, verdict, the numbers behind it."""
    held = sum(r.status == "holds" for r in results)
    rows = [{"claim": f"{MARKS[r.status]} {r.text}", "where": f"{r.file}:{r.line}", "verdict": r.status,
             "numbers": r.detail} for r in results]
    return (f"### evalsite claims: {held} of {len(results)} hold\n\n"
            + markdown_table(rows, ["claim", "where", "verdict", "numbers"]))


def compare_markdown(report) -> str:
    """The run against its baseline: comparability, item counts, mean Δ with interval and p, gate."""
    current = report.current
    title = f"### evalsite compare: {current.run_id} (arm {current.arm_id})"
    if report.baseline is None:
        return f"{title}\n\nNo baseline: no promoted run and no older completed run of this arm on this dataset."
    lines = [title, "", f"Baseline: {report.baseline.run_id} ({report.baseline_source})."]
    verdict = report.comparability
    if not verdict.comparable:
        return "\n".join([*lines, "", f"**Not comparable:** {verdict.reason}"])
    s = report.regression.summary
    interval = "—" if s.ci_low is None else f"[{s.ci_low:+.3f}, {s.ci_high:+.3f}]"
    p_value = "—" if s.p_value is None else f"{s.p_value:.4g} ({s.test_kind})"
    noise = " · within noise" if s.within_noise else ""
    lines += [
        "",
        markdown_table([{
            "items": s.compared, "improved": s.improved, "regressed": s.regressed, "unchanged": s.unchanged,
            "gt_changed": s.gt_changed, "baseline mean": s.baseline_mean, "mean": s.current_mean,
            "mean Δ": _signed(s.mean_delta), f"{s.confidence:.0%} interval": interval, "p": p_value,
        }], ["items", "improved", "regressed", "unchanged", "gt_changed", "baseline mean", "mean", "mean Δ",
             f"{s.confidence:.0%} interval", "p"]),
        "",
    ]
    newly_failing = [e for e in report.regression.evaluators if e.newly_failing]
    for change in newly_failing:
        lines.append(f"- `{change.evaluator}` newly fails on {len(change.newly_failing)} items: "
                     + ", ".join(change.newly_failing[:10]) + (" …" if len(change.newly_failing) > 10 else ""))
    gate = report.gate
    lines.append(f"\n**Gate (α = {gate.alpha}):** " + ("fail — " + "; ".join(gate.reasons) if gate.failed else "pass") + noise)
    return "\n".join(lines)
