"""Reviewer-facing page contents checked without a browser: the run page's error panel and badge,
and the "edited since this run" marks when a manifest changes after its runs."""

from __future__ import annotations

from example_support import run_example
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


def test_editing_an_arms_params_after_its_run_marks_it_edited_since_this_run(tmp_path):
    root = run_example(tmp_path / "example", repeat=1)
    project = find_project(root)
    build_site(project)
    site = root / "site"
    assert "edited since" not in (site / "experiments/arithmetic.html").read_text()
    assert "badge-completed" in str(parse(site / "experiments/arithmetic.html").find("h1").find("span").attrs)
    manifest = root / "experiments/arithmetic.yaml"
    manifest.write_text(manifest.read_text().replace("accuracy: 0.67", "accuracy: 0.9"))
    build_site(project)
    page = parse(site / "experiments/arithmetic.html")
    assert "edited" in page.find("h1").text()
    assert "edited since the latest run of sampler" in " ".join(page.find("p", class_="drift").text().split())
    sampler = next(p for p in (site / "runs").glob("*sampler*.html"))
    careful = next(p for p in (site / "runs").glob("*careful*.html"))
    assert "edited since this run" in sampler.read_text() and "edited since this run" not in careful.read_text()


def test_the_matrix_marks_no_winner_on_a_sub_millisecond_lead(tmp_path):
    root = tmp_path / "p"
    (root / "data").mkdir(parents=True)
    write_run(root / "runs", "20260101T000000Z-a-0001", [case(f"i{n}", latency_ms=10.0) for n in range(4)], arm="a")
    write_run(root / "runs", "20260101T000001Z-b-0002", [case(f"i{n}", latency_ms=10.4) for n in range(4)], arm="b")
    write_run(root / "runs", "20260101T000002Z-c-0003", [case(f"i{n}", latency_ms=30.0) for n in range(4)], arm="c")
    build_site(find_project(root))
    page = (root / "site/experiments/exp.html").read_text()
    assert 'title="fastest"' not in page and 'title="fastest median"' not in page  # a leads b by 0.4 ms only
