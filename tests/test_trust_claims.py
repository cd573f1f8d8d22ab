"""A report cannot move a claim's verdict: the placeholders marking claims during rendering are
named after a hash of the report, so no report text can collide with them (issue 15, defect 10)."""

from __future__ import annotations

import pytest
from sitekit import parse

from evalsite.analysis.claims import FAILS, HOLDS, ClaimResult
from evalsite.site.pages.reports import marked_report


def result(status: str, text: str) -> ClaimResult:
    return ClaimResult("r.md", 1, "claim", text, status, "numbers", runs=[])


@pytest.mark.parametrize("decoy", ["EVALSITECLAIM000000X", "&#69;VALSITECLAIM000001X", "EVALSITECLAIM000001X"])
def test_placeholder_text_in_a_report_does_not_move_a_verdict(decoy):
    text = (f"[a link {decoy}](https://example.org/{decoy})\n\n"
            "First {{ claim: mean(arm=a) > 0.5 }} then second {{ claim: mean(arm=b) > 0.5 }}.\n")
    html = str(marked_report(text, [result(HOLDS, "mean(arm=a) > 0.5"), result(FAILS, "mean(arm=b) > 0.5")]))
    page = parse_fragment(html)
    link = page.find("a")
    assert "claim" not in link.attrs.get("class", "") and not link.find_all("span")
    assert link.text() == "a link " + decoy.replace("&#69;", "E")
    paragraph = page.find_all("p")[1]
    marks = paragraph.find_all("span")
    assert [m.attrs["class"] for m in marks] == ["claim claim-holds", "claim claim-fails"]
    text = paragraph.text()  # each verdict stays where its directive was, in order
    assert text.startswith("First ✓") and " then second ✗" in text and text.index("✓") < text.index("✗")


def parse_fragment(html: str):
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "f.html"
        path.write_text(f"<html><body>{html}</body></html>")
        return parse(path)
