"""Browsing the site in headless Chromium from file://: a dataset's item index (every item, its
input's start and each arm's outcome, filtered and searched over every page), the word diff of two
long answers (jsdiff's Myers diff, no size limit a reader meets), search results saying why they
matched, titles naming the project once, and the matrix's "same" meaning every repeat agreed."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from browser_support import drawn, load, needs_browser, problems_in
from sitekit import case, parse, write_run

from evalsite.project import find_project
from evalsite.site import build_site, itemindex, paths

pytestmark = needs_browser

WORDS = 2000
LONG = "long-1"


def long_answers() -> tuple[str, str]:
    """Two 2,000-word answers that differ in a known set of words (seeded)."""
    rng = random.Random(7)
    left = [f"w{rng.randrange(500)}" for _ in range(WORDS)]
    right = list(left)
    for position in (10, 700, 1999):
        right[position] = f"changed{position}"
    return " ".join(left), " ".join(right)


@pytest.fixture(scope="module")
def long_site(tmp_path_factory) -> Path:
    """Two arms answering one item with 2,000 words each, three words apart."""
    root = tmp_path_factory.mktemp("long-answers")
    (root / "data").mkdir()
    left, right = long_answers()
    write_run(root / "runs", "20260101T000000Z-a-0001", [case(LONG, output=left)], arm="a")
    write_run(root / "runs", "20260101T000100Z-b-0001", [case(LONG, output=right)], arm="b")
    build_site(find_project(root))
    return root / "site"


def test_two_2000_word_answers_get_a_word_diff(browser, long_site):
    page = long_site / paths.item_page("data@000000000000", paths.item_bucket(LONG))
    load(browser, page.as_uri())
    out = drawn(browser, ".pair-picker:not([hidden]) .worddiff-out ins")[0].find_element("xpath", "..")
    inserted = [node.text for node in out.find_elements("css selector", "ins")]
    deleted = [node.text for node in out.find_elements("css selector", "del")]
    left, right = long_answers()
    changed = sorted(f"changed{p}" for p in (10, 700, 1999))
    original = sorted(left.split()[p] for p in (10, 700, 1999))
    assert sorted([sorted(inserted), sorted(deleted)]) == sorted([changed, original])  # newest run first: b against a
    picked = "a" if sorted(inserted) == original else "b"  # the answer the diff is drawn against
    assert browser.execute_script("const o = arguments[0].cloneNode(true); o.querySelectorAll('del').forEach(d => d.remove());"
                                  " return o.textContent;", out) == {"a": left, "b": right}[picked]  # it rebuilds that answer
    assert problems_in(browser, long_site) == []


ITEMS = 250
DATASET = "data@000000000000"


def outcome(arm: str, n: int) -> bool:
    """Whether arm ``arm`` passes item ``n``: a fails every 5th item, b every 7th."""
    return n % (5 if arm == "a" else 7) != 0


@pytest.fixture(scope="module")
def index_site(tmp_path_factory) -> Path:
    """Two arms on 250 items (more than a page of the index); item 137 asks about a pelican."""
    root = tmp_path_factory.mktemp("item-index")
    (root / "data").mkdir()
    for minute, arm in enumerate("ab"):
        cases = [case(f"i{n}", input="pelican saxophone?" if n == 137 else f"question number {n}",
                      passed=outcome(arm, n), score=float(outcome(arm, n))) for n in range(ITEMS)]
        write_run(root / "runs", f"20260101T00{minute:02d}00Z-{arm}-0001", cases, arm=arm)
    build_site(find_project(root))
    return root / "site"


def index_rows(driver) -> list[list[str]]:
    return driver.execute_script(
        "return [...document.querySelectorAll('#item-index-table tbody tr')].map(tr => [...tr.cells].map(td => td.textContent));")


def test_the_item_index_lists_every_item_with_its_input_and_each_arms_outcome(browser, index_site):
    load(browser, (index_site / paths.items_index(DATASET)).as_uri())
    drawn(browser, "#item-index-table tbody tr")
    headers = browser.execute_script("return [...document.querySelectorAll('#item-index-table th')].map(th => th.textContent)")
    assert headers == ["item", "input", "b", "a"]  # newest run's arm first
    rows = index_rows(browser)
    assert len(rows) == 100 and rows[0] == ["i0", "question number 0", "0.00", "0.00"]  # a page of 100, natural order
    assert rows[1] == ["i1", "question number 1", "1.00", "1.00"] and rows[10][0] == "i10"
    assert "1–100 of 250 items" in browser.find_element("css selector", ".index-tally").text
    link = browser.find_element("css selector", "#item-index-table tbody tr a")
    assert link.get_attribute("href").endswith(f"{paths.item_bucket('i0')}.html#item-i0")
    assert problems_in(browser, index_site) == []


def test_the_item_index_filters_and_searches_every_page(browser, index_site):
    from selenium.webdriver.support.ui import Select

    load(browser, (index_site / paths.items_index(DATASET)).as_uri())
    drawn(browser, "#item-index-table tbody tr")
    needle = browser.find_element("css selector", ".index-needle")
    needle.send_keys("pelican")  # input text of an item on the second page
    assert index_rows(browser) == [["i137", "pelican saxophone?", "1.00", "1.00"]]
    needle.clear()
    needle.send_keys("i24")
    assert [r[0] for r in index_rows(browser)] == ["i24", *(f"i24{n}" for n in range(10))]
    needle.clear()
    outcomes = Select(browser.find_element("css selector", ".index-outcome"))
    expected = {
        "failed": [n for n in range(ITEMS) if not outcome("a", n) or not outcome("b", n)],
        "passed": [n for n in range(ITEMS) if outcome("a", n) and outcome("b", n)],
        "disagree": [n for n in range(ITEMS) if outcome("a", n) != outcome("b", n)],
        "missing": [],
    }
    for value, items in expected.items():
        outcomes.select_by_value(value)
        tally = browser.find_element("css selector", ".index-tally").text
        assert tally == (f"1–{min(100, len(items))} of {len(items)} items" if items else "no item matches"), value
        assert [r[0] for r in index_rows(browser)] == [f"i{n}" for n in items[:100]], value


def test_the_item_index_page_holds_no_row_and_its_scripts_are_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(itemindex, "INDEX_PART_ROWS", 40)
    (tmp_path / "data").mkdir()
    write_run(tmp_path / "runs", "20260101T000000Z-a-0001", [case(f"i{n}") for n in range(ITEMS)])
    build_site(find_project(tmp_path))
    site = tmp_path / "site"
    page = parse(site / paths.items_index(DATASET))
    assert page.find("table", id="item-index-table").find_all("td") == []
    parts = page.find("div", id="item-index").attrs["data-parts"].split()
    assert parts == [paths.item_index_data(DATASET, n) for n in range(7)]  # 250 rows, 40 a script
    assert all((site / part).exists() for part in parts)


def search_hit(browser, title: str):
    """(snippet text, marked words) of the result whose link names item ``title``, once it is listed."""
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(browser, 10).until(lambda d: d.execute_script(
        "const li = [...document.querySelectorAll('ol.search-results li')].find(li => li.querySelector('a')"
        " && li.querySelector('a').textContent.includes(' ' + arguments[0] + ' ·'));"
        " return li ? [li.querySelector('.search-snippet').textContent, [...li.querySelectorAll('mark')].map(m => m.textContent)] : null;",
        title))


def test_a_search_result_shows_why_it_matched(browser, index_site):
    load(browser, (index_site / "index.html").as_uri())
    box = browser.find_element("css selector", "form.site-search input")
    box.send_keys("saxoph")  # a prefix of a word in item i137's input
    # the input, the expected value and the run's output, the matched word marked
    assert search_hit(browser, "i137") == ["pelican saxophone? ok ok", ["saxophone"]]
    box.clear()
    box.send_keys("i13")  # matches item ids, not their text
    assert search_hit(browser, "i13") == ["matched its name", []]
    assert problems_in(browser, index_site) == []


def test_page_titles_name_the_project_once(index_site):
    root = index_site.parent.name
    titles = {page: parse(index_site / page).find("title").text() for page in ("index.html", "runs.html")}
    assert titles == {"index.html": root, "runs.html": f"All runs · {root}"}


@pytest.fixture(scope="module")
def repeats_site(tmp_path_factory) -> Path:
    """Two arms, three repeats: on s both arms answer "7" every time; on m both answer "7" most of
    the time (mean score 0.67 for a) but a said "8" once and b "9" once."""
    root = tmp_path_factory.mktemp("repeats")
    (root / "data").mkdir()
    answers = {"a": {"s": ["7", "7", "7"], "m": ["7", "8", "7"]}, "b": {"s": ["7", " 7", "7"], "m": ["7", "7", "9"]}}
    for minute, (arm, items) in enumerate(answers.items()):
        cases = [case(item, output=out, repeat=r, expected="7", passed=out.strip() == "7", score=float(out.strip() == "7"))
                 for item, outs in items.items() for r, out in enumerate(outs)]
        write_run(root / "runs", f"20260101T00{minute:02d}00Z-{arm}-0001", cases, arm=arm)
    build_site(find_project(root))
    return root / "site"


def test_the_matrix_says_same_only_when_every_repeat_agrees(browser, repeats_site):
    load(browser, (repeats_site / paths.experiment("exp")).as_uri())
    drawn(browser, "#matrix-table tbody tr")
    rows = browser.execute_script(
        "return Object.fromEntries([...document.querySelectorAll('#matrix-table tbody tr')]"
        ".map(tr => [tr.cells[0].textContent, tr.cells[tr.cells.length - 1].textContent]));")
    assert rows == {"s": "same", "m": "3 distinct"}  # m: every arm's most common answer is "7", but not every repeat's
    legend = browser.find_element("css selector", ".matrix-legend").text
    assert "every repeat of every arm gave the identical output" in legend
    assert problems_in(browser, repeats_site) == []


def test_a_redacted_item_index_shows_no_input(tmp_path):
    (tmp_path / "data").mkdir()
    write_run(tmp_path / "runs", "20260101T000000Z-a-0001", [case("i1", input="secret question")])
    build_site(find_project(tmp_path), redact=True)
    script = (tmp_path / "site" / paths.item_index_data(DATASET, 0)).read_text()
    assert '"i1"' in script and "secret" not in script
