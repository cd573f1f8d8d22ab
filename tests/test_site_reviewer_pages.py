"""Reviewer-facing page contents checked without a browser: the run page's error panel and badge."""

from __future__ import annotations

from sitekit import case, parse, write_run

from evalsite.project import find_project
from evalsite.site import build_site


def test_a_run_whose_every_case_crashed_shows_a_red_badge_and_its_errors_first(tmp_path):
    root = tmp_path / "p"
    (root / "data").mkdir(parents=True)
    crashed = [case(f"i{n}", score=None, passed=None, output=None, error="HTTP 500: upstream exploded\ntraceback …")
               for n in range(4)] + [case("i9", score=None, passed=None, output=None, error="timeout after 30 s")]
    write_run(root / "runs", "20260101T000000Z-a-0001", crashed)
    build_site(find_project(root))
    page = parse(root / "site/runs/20260101T000000Z-a-0001.html")
    badge = page.find("dl", class_="facts").find("span", class_="badge")
    assert "badge-failed" in badge.attrs["class"] and "every case errored" in badge.text()
    panel = page.find("section", class_="error-panel")
    rows = [[" ".join(td.text().split()) for td in tr.find_all("td")] for tr in panel.find("tbody").find_all("tr")]
    assert rows[0][:3] == ["4", "generation", "HTTP 500: upstream exploded"]
    assert rows[1][:3] == ["1", "generation", "timeout after 30 s"]
    headings = [h.text() for h in page.find_all("h2")]
    assert headings.index("Errors") < headings.index("Cases") < headings.index("Fingerprint")
    runs = parse(root / "site/runs.html")
    assert "run-all-errored" in runs.find("tbody").find("tr").attrs["class"]
