"""Every model output, input and detail reaches the page as text: nothing in a run can add markup."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sitedata import run_cases
from sitekit import case, parse, write_run

from evalsite.project import find_project
from evalsite.site import build_site

PAYLOADS = [
    "<script>window.__xss=1</script>",
    '<img src=x onerror="window.__xss=2">',
    "</textarea><script>window.__xss=3</script><textarea>",
    '"><svg onload=window.__xss=4>',
    "'><iframe src=javascript:window.__xss=5></iframe>",
]
EVIL = " ".join(PAYLOADS)


def write_hostile_project(root: Path) -> Path:
    """A project whose every run-controlled string carries the payloads."""
    (root / "experiments").mkdir(parents=True)
    (root / "experiments/evil.yaml").write_text(
        "name: evil\ndescription: |\n  Look " + EVIL.replace("\n", " ") + "\n  [click](javascript:window.__xss=6)\n"
        "dataset:\n  path: data/d.jsonl\narms:\n  - id: a\n    target: none\n")
    runs = root / "runs"
    hostile = [
        case(f"item{n}{payload}", input=payload, expected=payload, output=f"{payload} answer {n}", detail=payload,
             error=payload if n == 0 else None, passed=n % 2 == 0, score=float(n % 2 == 0), cost_usd=0.001 * (n + 1))
        for n, payload in enumerate(PAYLOADS)
    ]
    for index, arm in enumerate(["plain", PAYLOADS[1]]):
        cases = [dict(c, output=c["output"] + ("" if index == 0 else " differs"), finish_reason=PAYLOADS[3]) for c in hostile]
        for c in cases:
            c["scores"][0]["label"] = PAYLOADS[0]
        write_run(runs, f"20260101T00000{index}Z-arm{index}-000{index}", cases, arm=arm, experiment="evil",
                  dataset_id="evil@000000000000", evaluators={"exact": {"type": "exact", "version": "v1"}})
    (runs / "decisions.jsonl").write_text(json.dumps({
        "decision": "promote", "run_id": "20260101T000000Z-arm0-0000", "reason": EVIL, "dataset_id": PAYLOADS[2],
        "inputs_id": None, "arm_id": PAYLOADS[1], "at": "2026-01-02T00:00:00Z", "by": PAYLOADS[0],
        "fingerprint_hash": PAYLOADS[4]}) + "\n")
    return root


@pytest.fixture(scope="module")
def hostile_site(tmp_path_factory) -> Path:
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
