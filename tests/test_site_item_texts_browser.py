"""An item's input and expected value are written once per dataset (``data/items/<dataset>/texts/``,
shared by the runs that show the same texts) and joined to each run's cases in the browser: the run
page, the item page, the matrix's side-by-side view and the search show the texts the runs recorded,
escaped, including a text one run asked differently and a text cut to ``max_field_chars``."""

from __future__ import annotations

from pathlib import Path

import pytest
from browser_support import drawn, load, needs_browser, problems_in
from sitedata import payload, run_cases
from sitekit import case, write_run

from evalsite.project import find_project
from evalsite.site import build_site, paths

pytestmark = needs_browser

DATASET = "data@000000000000"
RUNS = {"a": "20260101T000000Z-a-0001", "b": "20260101T000100Z-b-0001"}
ITEMS = 40
LIMIT = 80


def asked(arm: str, n: int) -> str:
    """Item n's input: markup that must stay text, one item asked differently by arm b, one cut."""
    if n == 7 and arm == "b":
        return "asked differently by b"
    if n == 9:
        return "long " * 30  # 150 characters: cut to LIMIT
    return f"<b>question {n}</b> & <script>window.pwned = 1</script>" + (" flamingo" if n == 12 else "")


def expected(n: int) -> str:
    return f"answer {n} <i>&amp;</i>"


@pytest.fixture(scope="module")
def texts_site(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("item-texts")
    (root / "data").mkdir()
    (root / "evalsite.toml").write_text(f"[site]\nmax_field_chars = {LIMIT}\n")
    for arm, run_id in RUNS.items():
        cases = [case(f"i{n:02d}", input=asked(arm, n), expected=expected(n), output=f"{arm} says {n}")
                 for n in range(ITEMS)]
        write_run(root / "runs", run_id, cases, arm=arm)
    build_site(find_project(root))
    return root / "site"


def shown(arm: str, n: int) -> tuple[str, str]:
    text = asked(arm, n)
    return (text[:LIMIT], expected(n))


def test_the_runs_share_one_item_texts_file_per_bucket_and_decode_to_their_own_texts(texts_site):
    files = sorted((texts_site / "data/items" / paths.slug(DATASET) / "texts").glob("*.js"))
    buckets = {paths.item_bucket(f"i{n:02d}") for n in range(ITEMS)}
    # one file a bucket, except the bucket where b asked item 7 differently: a file each run
    assert len(files) == len(buckets) + 1
    for arm, run_id in RUNS.items():
        cases = run_cases(texts_site, run_id)
        assert [(c["input"], c["expected"]) for c in cases] == [shown(arm, n) for n in range(ITEMS)]
        assert cases[9]["cut"] == {"in": 150 - LIMIT}  # a cut text stays in the run's own part
    part = payload(texts_site / paths.run_data(RUNS["a"], paths.item_bucket("i00"), 0))
    assert "question 0" not in "".join(part["s"]) and part["it"].startswith(f"data/items/{paths.slug(DATASET)}/texts/")


def test_the_run_page_shows_each_cases_input_and_expected_value(browser, texts_site):
    for arm, run_id in RUNS.items():
        load(browser, (texts_site / paths.run(run_id)).as_uri())
        drawn(browser, "#cases-table tbody tr")
        rows = browser.execute_script(
            "return [...document.querySelectorAll('#cases-table tbody tr')].map(tr =>"
            " [...tr.querySelectorAll('td pre.text')].slice(0, 2).map(pre => pre.textContent));")
        assert rows == [list(shown(arm, n)) for n in range(ITEMS)]
        assert browser.execute_script("return window.pwned === undefined")
        assert problems_in(browser, texts_site) == []


def test_the_item_page_shows_the_input_and_expected_value(browser, texts_site):
    for n in (0, 7, 9):
        item_id = f"i{n:02d}"
        page = paths.item_page(DATASET, paths.item_bucket(item_id))
        load(browser, (texts_site / page).as_uri() + "#" + paths.item_anchor(item_id))
        drawn(browser, "section.item .item-texts pre.text")
        texts = browser.execute_script(
            "return [...document.getElementById(arguments[0]).querySelectorAll('.item-texts pre.text')]"
            ".slice(0, 2).map(pre => pre.textContent);", paths.item_anchor(item_id))
        # the newest run's texts (b asked item 7 its own way)
        assert texts == list(shown("b", n))
        assert browser.execute_script("return window.pwned === undefined")
    assert problems_in(browser, texts_site) == []


def test_the_matrix_side_by_side_view_shows_the_input_and_expected_value(browser, texts_site):
    from selenium.webdriver.common.by import By

    load(browser, (texts_site / paths.experiment("exp")).as_uri())
    rows = drawn(browser, "#matrix-table tbody tr")
    rows[0].find_element(By.PARTIAL_LINK_TEXT, " distinct").click()
    drawn(browser, "tr.diff-row .item-texts pre.text")
    texts = browser.execute_script(
        "return [...document.querySelectorAll('tr.diff-row .item-texts pre.text')].map(pre => pre.textContent);")
    item = browser.execute_script("return document.querySelector('tr.diff-row code').textContent;")
    assert texts == list(shown("b", int(item[1:]))) or texts == list(shown("a", int(item[1:])))
    assert problems_in(browser, texts_site) == []


def test_search_finds_an_item_by_a_word_of_its_shared_input(browser, texts_site):
    from selenium.webdriver.support.ui import WebDriverWait

    load(browser, (texts_site / "index.html").as_uri())
    browser.find_element("css selector", "form.site-search input").send_keys("flaming")
    snippets = WebDriverWait(browser, 10).until(lambda d: d.execute_script(
        "const found = [...document.querySelectorAll('ol.search-results li .search-snippet')].map(s => s.textContent);"
        " return found.length ? found : null;"))
    assert snippets == ["…/b> & <script>window.pwned = 1</script> flamingo answer 12 <i>&amp;</i> b says 12"]  # input, expected, output
    assert browser.execute_script("return window.pwned === undefined")
    assert problems_in(browser, texts_site) == []
