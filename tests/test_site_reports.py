"""Report pages: markdown reports with every claim re-derived and marked, links to the deciding runs."""

from __future__ import annotations

import shutil

import pytest
from example_support import REPO, run_example
from sitekit import parse, table_rows

from evalsite.project import find_project
from evalsite.site import build_site


@pytest.fixture(scope="module")
def reports_site(tmp_path_factory):
    """The example's site built with its reports/ and a hostile report added."""
    root = run_example(tmp_path_factory.mktemp("reports"))
    shutil.copytree(REPO / "reports", root / "reports")
    (root / "reports/hostile.md").write_text(
        "# Hostile <script>window.__xss=1</script>\n\n"
        "Careful is best {{ claim: mean(arm=careful) > 0.99 }} and {{ claim: mean(arm=nobody) > 0 }}.\n"
        "Raw <img src=x onerror=alert(1)> stays text; {{ value: mean(arm=careful) = 0.933 }}.\n")
    build_site(find_project(root))
    return root / "site"


def test_the_example_report_marks_every_claim_as_holding_and_links_its_runs(reports_site):
    page = parse(reports_site / "reports/arithmetic.html")
    marks = page.find("article", class_="report").find_all("span", class_="claim")
    assert len(marks) == 5 and all("claim-holds" in m.attrs["class"] and m.text().startswith("✓") for m in marks)
    rows = table_rows(page.find("div", id="claims").find("table"))
    assert [row[3] for row in rows] == ["holds"] * 5
    article = page.find("article", class_="report")
    assert "arm=" not in article.text() and "claim:" not in article.text()  # prose, not claim syntax
    for link in article.find_all("a"):
        target = link.attrs["href"]
        assert any(n.attrs.get("id") == target[1:] for n in page.iter()) if target.startswith("#") else (reports_site / "reports" / target).resolve().is_file()
    notes = page.find("ol", class_="claim-notes").find_all("li")
    assert len(notes) == 5 and all("holds" in n.text() and n.find_all("a") for n in notes)
    home = parse(reports_site / "index.html").find("div", id="reports")
    assert [row[0] for row in table_rows(home.find("table"))] == ["arithmetic", "hostile"]


def test_failing_and_uncheckable_claims_are_marked_and_raw_html_stays_text(reports_site):
    page = parse(reports_site / "reports/hostile.html")
    marks = page.find("article", class_="report").find_all("span", class_="claim")
    assert [m.attrs["class"].split()[1] for m in marks] == ["claim-fails", "claim-uncheckable", "claim-holds"]
    assert marks[2].text() == "✓ 0.933"
    assert not page.find_all("img") and all(s.attrs.get("src") for s in page.find_all("script"))
    assert "window.__xss=1" in page.find("h1").text()
    assert "2 cannot be checked" not in page.text() and "1 cannot be checked" in page.text()
