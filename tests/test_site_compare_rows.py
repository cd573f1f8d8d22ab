"""A compare page with many changed items draws the largest changes as HTML and keeps the rest in
data scripts of bounded size, drawn on request; its downloads still hold every changed item."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from browser_support import load, needs_browser, problems_in
from sitedata import payload
from sitekit import case, parse, table_rows, write_run

from evalsite.project import find_project
from evalsite.site import build_site, paths
from evalsite.site.pages import compare

OLD, NEW = "20260101T000000Z-a-0001", "20260101T000001Z-a-0002"
ITEMS = [f"q{n}" for n in range(14)]
#: q0…q9 lose 0.1, 0.2, … 1.0 of their score; q10…q13 are unchanged
SCORES = {item: max(0.0, 1.0 - 0.1 * (n + 1)) if n < 10 else 1.0 for n, item in enumerate(ITEMS)}


@pytest.fixture(scope="module")
def many_changes(tmp_path_factory) -> Path:
    """A site comparing two runs of one arm in which ten of fourteen items changed, built with
    at most three changed rows drawn as HTML and four rows per data script."""
    root = tmp_path_factory.mktemp("many")
    (root / "data").mkdir()
    write_run(root / "runs", OLD, [case(i, expected=f"answer {i}") for i in ITEMS], arm="a")
    write_run(root / "runs", NEW, [case(i, score=SCORES[i], passed=SCORES[i] == 1.0, expected=f"answer {i}") for i in ITEMS],
              arm="a")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(compare, "SHOWN_CHANGES", 3)
        patch.setattr(compare, "ROWS_PER_SCRIPT", 4)
        build_site(find_project(root))
    return root / "site"


def test_the_largest_changes_are_html_and_the_rest_data_scripts(many_changes):
    page = parse(many_changes / paths.compare(NEW, OLD))
    shown = [row[0] for row in table_rows(page.find("div", id="items").find("table"))]
    assert shown == ["q9", "q8", "q7"]  # Δ −1.0, −0.9, −0.8: the largest first
    more = [payload(many_changes / paths.compare_data(NEW, OLD, f"changed-{part}")) for part in (0, 1)]
    assert [len(rows) for rows in more] == [4, 3] and not (many_changes / paths.compare_data(NEW, OLD, "changed-2")).exists()
    assert [row[0] for rows in more for row in rows] == ["q6", "q5", "q4", "q3", "q2", "q1", "q0"]
    assert {row[6] for rows in more for row in rows} == {"regressed"}
    unchanged = payload(many_changes / paths.compare_data(NEW, OLD, "unchanged-0"))
    assert [row[0] for row in unchanged] == ["q10", "q11", "q12", "q13"] and {row[6] for row in unchanged} == {"unchanged"}
    text = " ".join(page.text().split())
    assert "The 3 largest of the 10 changes are listed below" in text and "also show the other 7 changed items" in text


def test_the_downloads_hold_every_changed_item(many_changes):
    stem = paths.compare(NEW, OLD).removesuffix(".html")
    with open(many_changes / f"{stem}.items.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert sorted(row["item_id"] for row in rows) == sorted(ITEMS[:10])


@needs_browser
def test_the_other_changed_items_are_drawn_when_asked_for(browser, many_changes):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    def visible() -> list[str]:
        return [row.find_element(By.TAG_NAME, "td").text
                for row in browser.find_elements(By.CSS_SELECTOR, "#items tbody tr") if row.is_displayed()]

    load(browser, (many_changes / paths.compare(NEW, OLD)).as_uri())
    assert visible() == ["q9", "q8", "q7"]
    browser.find_element(By.CSS_SELECTOR, "input.show-more-changed").click()
    WebDriverWait(browser, 10).until(lambda d: len(visible()) == 10)
    assert visible()[3:] == ["q6", "q5", "q4", "q3", "q2", "q1", "q0"]
    browser.find_element(By.CSS_SELECTOR, "input.show-unchanged").click()
    WebDriverWait(browser, 10).until(lambda d: len(visible()) == 14)
    browser.find_element(By.CSS_SELECTOR, "input.show-more-changed").click()
    assert visible() == ["q9", "q8", "q7", "q10", "q11", "q12", "q13"]
    assert problems_in(browser, many_changes) == []
