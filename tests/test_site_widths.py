"""The site's tables at a phone's and at desktop widths, in real headless Chromium: no page scrolls
sideways; at 1280-1920 px the runs tables and the leaderboard fit their column (the "when" column
on one line, "vs baseline" on screen) and hidden columns do not stretch rows; at 390 px the
leaderboard's verdict columns come first and a table wider than the screen scrolls in its own
box, with a cue."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from browser_support import load, needs_browser
from example_support import run_example

from evalsite.execute.runner import execute_plan
from evalsite.experiment.manifest import load_manifest
from evalsite.experiment.plan import build_plan
from evalsite.project import find_project
from evalsite.site import build_site

pytestmark = needs_browser

DATASET_PAGE = "datasets/arithmetic-854dec43a471.html"
PAGES = ("index.html", "runs.html", DATASET_PAGE)
#: The tables that must fit a desktop screen without scrolling.
MUST_FIT = {"index.html": ("recent-runs",), "runs.html": ("runs",), DATASET_PAGE: ("leaderboard-1", "runs")}
KEY_COLUMNS = ("rank", "arm", "mean score", "group")

TABLES = """
return [...document.querySelectorAll('.table-block')].filter(b => b.querySelector('table')).map(block => {
  const box = block.querySelector('.scroll'), table = box.querySelector('table'), cue = block.querySelector('.scroll-cue');
  return {id: block.id, table: table.scrollWidth, box: box.clientWidth, overflow: getComputedStyle(box).overflowX,
          shadows: getComputedStyle(box).backgroundImage.includes('gradient'), cue: !!cue && !cue.hidden && cue.offsetParent !== null};
});
"""

#: The page's width, the viewport's (the window less a vertical scrollbar), and what sticks out furthest
#: past the viewport's right edge (its box, or text of its own that overflows it) with no box around it
#: that scrolls or clips it: the first in document order, so a table rather than its cells.
OVERHANG = """
const edge = document.documentElement.clientWidth, clipped = el => {
  for (let box = el.parentElement; box && box !== document.body; box = box.parentElement) {
    if (getComputedStyle(box).overflowX !== 'visible') return true;
  }
  return false;
};
const reach = el => Math.max(el.getBoundingClientRect().right, ...[...el.childNodes].filter(n => n.nodeType === Node.TEXT_NODE)
  .map(text => { const range = document.createRange(); range.selectNodeContents(text); return range.getBoundingClientRect().right; }));
let out = null;
for (const el of document.body.querySelectorAll('*')) {
  const right = reach(el) + window.scrollX;
  if (right <= edge || (out && right <= out.right) || clipped(el)) continue;
  out = {right, el};
}
const name = out && out.el.tagName.toLowerCase() + (out.el.id ? '#' + out.el.id : '')
  + [...out.el.classList].map(c => '.' + c).join('');
return [document.documentElement.scrollWidth, edge, out && `${name} (${Math.round(out.el.getBoundingClientRect().width)} px wide,`
  + ` reaching ${Math.round(out.right)} px): ${JSON.stringify(out.el.textContent.trim().replace(/\\s+/g, ' ').slice(0, 80))}`];
"""


def assert_no_sideways_scroll(browser, page: str) -> int:
    """The page is no wider than the viewport (its width returned); if it is, the message names what sticks out."""
    page_width, inner, widest = browser.execute_script(OVERHANG)
    assert page_width <= inner, f"{page}: {page_width} px wide in a {inner} px viewport; sticking out: {widest or 'nothing found'}"
    return int(inner)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The example project (one repeat) with a second sampler run, so runs link a compare page."""
    root = run_example(tmp_path_factory.mktemp("widths"), repeat=1)
    project = find_project(root)
    execute_plan(project, build_plan(project, load_manifest(root / "experiments/arithmetic.yaml"), arm_ids=("sampler",), repeat=1))
    build_site(project)
    return root / "site"


def open_at(browser, site: Path, page: str, width: int) -> None:
    browser.set_window_size(width, 900)
    load(browser, (site / page).as_uri())  # measured before it loads, a page is unstyled


@pytest.fixture
def sized(browser):
    yield browser
    browser.set_window_size(1400, 1000)


@pytest.mark.parametrize("width", [390, 1280, 1920])
@pytest.mark.parametrize("page", PAGES)
def test_no_page_scrolls_sideways_and_no_table_is_clipped(sized, site, page, width):
    open_at(sized, site, page, width)
    assert_no_sideways_scroll(sized, page)
    tables = sized.execute_script(TABLES)
    assert tables
    for table in tables:
        wider = table["table"] > table["box"]
        assert table["cue"] == wider, table  # the cue says exactly when the table scrolls
        assert table["overflow"] == "auto" and table["shadows"], table
        if width >= 1280 and table["id"] in MUST_FIT[page]:
            assert not wider, f"{page} at {width} px: {table}"


@pytest.mark.parametrize("width", [1280, 1920])
def test_runs_tables_show_when_on_one_line_and_vs_baseline_on_screen(sized, site, width):
    for page, table_id in (("index.html", "recent-runs"), ("runs.html", "runs")):
        open_at(sized, site, page, width)
        lines = sized.execute_script(
            "return [...document.querySelectorAll('#' + arguments[0] + ' td.when')].map(td => {"
            " const r = document.createRange(); r.selectNodeContents(td); return new Set([...r.getClientRects()].map(x => x.top)).size; })",
            table_id)
        assert lines and set(lines) == {1}, f"{page}: the when column takes {lines} lines"
        right, inner = sized.execute_script(
            "const th = [...document.querySelectorAll('#' + arguments[0] + ' th')].find(th => th.textContent.trim() === 'vs baseline');"
            " return [th.getBoundingClientRect().right, document.documentElement.clientWidth];", table_id)
        assert right <= inner


def test_hidden_columns_do_not_stretch_leaderboard_rows(sized, site):
    open_at(sized, site, DATASET_PAGE, 1280)
    before, after, hidden = sized.execute_script("""
      const table = document.querySelector('#leaderboard-1 table');
      const heights = () => [...table.tBodies[0].rows].map(r => r.getBoundingClientRect().height);
      const secondary = [...table.querySelectorAll('[data-secondary]')];
      const hidden = secondary.every(cell => getComputedStyle(cell).display === 'none');
      const before = heights();
      secondary.forEach(cell => cell.remove());
      return [before, heights(), hidden && secondary.length > 0];
    """)
    assert hidden
    assert before == after


def test_a_phone_shows_the_verdict_columns_first_and_a_scroll_cue(sized, site):
    open_at(sized, site, DATASET_PAGE, 390)
    right_edge, headers = sized.execute_script("""
      const block = document.getElementById('leaderboard-1'), box = block.querySelector('.scroll');
      return [box.getBoundingClientRect().right,
              [...block.querySelectorAll('thead th')].filter(th => th.offsetParent).map(th => [th.textContent.trim(), th.getBoundingClientRect().right])];
    """)
    assert [name for name, _ in headers[:4]] == list(KEY_COLUMNS)
    assert all(right <= right_edge for _, right in headers[:4]), headers
    cues = sized.execute_script("return [...document.querySelectorAll('.scroll-cue')].filter(c => !c.hidden).length")
    assert cues >= 1  # the leaderboard (and others) scroll at 390 px, and say so


@pytest.mark.parametrize("width", [390, 1280])
def test_the_compare_and_run_pages_do_not_scroll_sideways(sized, site, width):
    pages = [next((site / "compare").rglob("*.html")), next((site / "runs").glob("*sampler*.html"))]
    for page in pages:
        open_at(sized, site, str(page.relative_to(site)), width)
        assert_no_sideways_scroll(sized, page.name)


@pytest.mark.parametrize("width", [390, 1280, 1920])
def test_the_item_index_does_not_scroll_sideways_and_fits_a_desktop(sized, site, width):
    from browser_support import drawn

    open_at(sized, site, "items/arithmetic-854dec43a471/index.html", width)
    drawn(sized, "#item-index-table tbody tr")
    inner = assert_no_sideways_scroll(sized, "item index")
    table, box, overflow, right = sized.execute_script(
        "const box = document.querySelector('#item-index-table-block > .scroll');"
        " return [box.querySelector('table').scrollWidth, box.clientWidth, getComputedStyle(box).overflowX,"
        " box.getBoundingClientRect().right];")
    assert overflow == "auto" and right <= inner  # a wider table scrolls in its own box, never the page
    if width >= 1280:
        assert table <= box, f"item index at {width} px: table {table} px in a {box} px box"


def test_the_width_check_fails_on_a_page_that_scrolls_and_names_what_sticks_out(sized, site, tmp_path):
    style = next((site / "static").glob("style.*.css")).as_uri()
    wide_table = f'<table class="data"><tr><td>{"7" * 120}</td></tr></table>'
    pages = {"boxed": (f'<div class="scroll">{wide_table}</div>', None),  # scrolls in its own box: fine
             "table": (wide_table, "table.data"),
             "text": (f'<p id="long" style="white-space: nowrap">{"a word " * 60}</p>', "p#long"),
             # narrower than the window but not than the viewport beside a vertical scrollbar
             "scrollbar": ('<div id="tall" style="width: 380px; height: 2000px"></div>', "div#tall")}
    for name, (body, sticking_out) in pages.items():
        (tmp_path / f"{name}.html").write_text(f'<!doctype html><link rel="stylesheet" href="{style}"><main>{body}</main>')
        open_at(sized, tmp_path, f"{name}.html", 390)
        if name == "scrollbar" and sized.execute_script("return window.innerWidth === document.documentElement.clientWidth"):
            continue  # overlay scrollbars take no room: nothing to tell apart
        if sticking_out is None:
            assert_no_sideways_scroll(sized, name)
        else:
            with pytest.raises(AssertionError, match=rf"px viewport; sticking out: {re.escape(sticking_out)} \("):
                assert_no_sideways_scroll(sized, name)
