"""Every model output, input and detail reaches the page as text: nothing in a run can add markup."""

from __future__ import annotations

from pathlib import Path

import pytest
from sitedata import run_cases
from sitekit import PAYLOADS, parse, write_hostile_project

from evalsite.project import find_project
from evalsite.site import build_site


@pytest.fixture(scope="module")
def hostile_site(tmp_path_factory) -> Path:
    """The site built from ``write_hostile_project``."""
    root = write_hostile_project(tmp_path_factory.mktemp("hostile"))
    build_site(find_project(root))
    return root / "site"


def test_no_payload_becomes_an_element_an_event_handler_or_a_javascript_link(hostile_site):
    pages = sorted(hostile_site.rglob("*.html"))
    assert len(pages) >= 6
    for page in pages:
        for node in parse(page).iter():
            assert node.tag not in ("img", "iframe", "textarea"), f"{page.name}: injected <{node.tag}>"
            if node.tag == "script":
                assert node.attrs.get("src", "").endswith(".js") and not node.text().strip(), f"{page.name}: inline script"
            for name, value in node.attrs.items():
                assert not name.startswith("on"), f"{page.name}: <{node.tag} {name}=…>"
                assert not (value or "").strip().lower().startswith("javascript:"), f"{page.name}: javascript link"


def test_the_payloads_are_shown_as_text(hostile_site):
    run_page = hostile_site / "runs/20260101T000000Z-arm0-0000.html"
    source = run_page.read_text()
    assert "&lt;script&gt;window.__xss=1&lt;/script&gt;" in source  # the error panel
    assert PAYLOADS[0] in parse(run_page).text()
    for script in (hostile_site / "data").rglob("*.js"):  # data is JSON in a call: no markup, nothing ends a script
        assert "<" not in script.read_text(), script
    experiment = parse(hostile_site / "experiments/evil.html")
    assert PAYLOADS[1] in experiment.find("div", class_="description").text()
    assert "&lt;img src=x onerror" in (hostile_site / "decisions.html").read_text()


def test_the_data_carries_the_raw_text_unchanged(hostile_site):
    records = run_cases(hostile_site, "20260101T000000Z-arm0-0000")
    assert {r["input"] for r in records} == set(PAYLOADS)
    assert {r["scores"][0]["label"] for r in records} == {PAYLOADS[0]}
