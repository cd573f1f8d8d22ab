"""Long lists on a terminal show their head and how many more: ``evalsite compare``'s report (every
entry with ``--all``; ``--json`` and ``--output`` always hold them all) and ``evalsite run``'s
warnings, through one helper (``evalsite.cli.output.first``)."""

from __future__ import annotations

from evalsite.cli.run_report import listing


def test_run_warnings_name_twenty_items_then_how_many_more():
    ids = [f"q{n}" for n in range(1234)]
    assert listing(ids[:3]) == "q0, q1, q2"
    assert listing(ids[:20]) == ", ".join(ids[:20])
    assert listing(ids[:21]) == ", ".join(ids[:20]) + " and 1 more"
    assert listing(ids) == ", ".join(ids[:20]) + " and 1,214 more"
