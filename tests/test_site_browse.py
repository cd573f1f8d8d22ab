"""Browsing the site in headless Chromium from file://: the word diff of two long answers (jsdiff's
Myers diff, no size limit a reader meets), and the matrix's "same / N distinct outputs" column
counting every repeat's output."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from browser_support import drawn, needs_browser, problems_in
from sitekit import case, write_run

from evalsite.project import find_project
from evalsite.site import build_site, paths

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
    browser.get(page.as_uri())
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
