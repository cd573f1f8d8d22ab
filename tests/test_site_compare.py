"""Compare pages: a run against its resolved baseline, and pairs asked for in [site] compare."""

from __future__ import annotations

import json
import shutil

import pytest
from example_support import run_example
from sitedata import payload
from sitekit import case, parse, table_rows, write_run

from evalsite.errors import SiteError
from evalsite.execute.runner import execute_plan
from evalsite.experiment.manifest import load_manifest
from evalsite.experiment.plan import build_plan
from evalsite.project import find_project
from evalsite.site import build_site, paths


@pytest.fixture(scope="module")
def rerun(tmp_path_factory):
    """The example (3 repeats), then sampler once more with one repeat: its item means move."""
    root = run_example(tmp_path_factory.mktemp("compare"))
    project = find_project(root)
    plan = build_plan(project, load_manifest(root / "experiments/arithmetic.yaml"), arm_ids=("sampler",), repeat=1)
    execute_plan(project, plan)
    return root


@pytest.fixture
def rerun_project(rerun, tmp_path):
    """A private copy of ``rerun`` (as a Project), so a test may add to it."""
    shutil.copytree(rerun, tmp_path / "p")
    return find_project(tmp_path / "p")


def test_a_rerun_is_compared_with_its_prior_run(rerun_project):
    build_site(rerun_project)
    site = rerun_project.root / "site"
    pages = list((site / "compare").glob("*.html"))
    assert len(pages) == 1
    page = parse(pages[0])
    samplers = [p.name for p in sorted(rerun_project.runs_dir.glob("*sampler*"),
                                       key=lambda p: json.loads((p / "run.json").read_text())["started_at"])]
    assert pages[0].name == f"{samplers[1]}--{samplers[0]}.html"
    text = " ".join(page.text().split())
    assert "Baseline chosen as: prior" in text and "paired sign-flip test p =" in text
    assert page.find("h2").text() == "Fingerprint diff"  # the diff comes first
    items = table_rows(page.find("div", id="items").find("table"))  # the changed items; the unchanged ones are data
    unchanged = payload(site / paths.compare_data(samplers[1], samplers[0], "unchanged-0"))
    assert len(items) + len(unchanged) == 60 and {row[4] for row in items} == {"improved", "regressed"}
    assert f"also show the {len(unchanged)} unchanged items" in text
    charts = [svg.find("title").text() for svg in page.find_all("svg", class_="chart")]
    assert charts == ["Items improved, unchanged, regressed", "Items that changed"]
    run_page = parse(site / "runs" / f"{samplers[1]}.html")
    assert run_page.find("p", class_="compare-link").find("a").attrs["href"] == f"../compare/{pages[0].name}"
    recent = parse(site / "index.html").find("div", id="recent-runs")
    assert any(a.attrs["href"] == f"compare/{pages[0].name}" for a in recent.find_all("a"))


def test_a_pair_on_different_datasets_shows_the_reason_and_nothing_else(rerun_project):
    write_run(rerun_project.runs_dir, "20990101T000000Z-other-0001", [case("x")], arm="other", dataset_id="other@111111111111")
    careful = next(rerun_project.runs_dir.glob("*careful*")).name
    (rerun_project.root / "evalsite.toml").write_text(f'[site]\ncompare = [["20990101T000000Z-other", "{careful}"]]\n')
    build_site(find_project(rerun_project.root))
    page = parse(rerun_project.root / f"site/compare/20990101T000000Z-other-0001--{careful}.html")
    assert "Not comparable" in page.find("p", class_="not-comparable").text()
    assert [h.text() for h in page.find_all("h2")] == ["Fingerprint diff"]
    assert "Baseline chosen as: explicit" in " ".join(page.text().split())


def test_an_unknown_run_in_the_compare_setting_is_a_one_line_error(rerun_project):
    (rerun_project.root / "evalsite.toml").write_text('[site]\ncompare = [["nosuchrun", "alsonot"]]\n')
    with pytest.raises(SiteError, match=r"\[site\] compare: no run matches 'nosuchrun'"):
        build_site(find_project(rerun_project.root))


def test_the_site_resolves_every_baseline_as_evalsite_compare_does(rerun_project):
    from dataclasses import asdict

    from evalsite.analysis.baselines import Decision, resolve_baseline
    from evalsite.site.inputs import scan_project

    sampler = sorted(rerun_project.runs_dir.glob("*sampler*"), key=lambda p: p.name)[0]
    header = json.loads((sampler / "run.json").read_text())
    careful = json.loads(next(rerun_project.runs_dir.glob("*careful*/run.json")).read_text())
    write_run(rerun_project.runs_dir, "20990101T000000Z-sampler-aaaa", [case("q000")], arm="sampler", status=None,
              dataset_id=header["dataset"]["dataset_id"])
    write_run(rerun_project.runs_dir, "20990101T000001Z-careful-bbbb", [case("q000")], arm="careful",
              dataset_id="elsewhere@000000000000")
    write_run(rerun_project.runs_dir, "20990101T000002Z-careful-cccc", [case("q000")], arm="careful",
              dataset_id=careful["dataset"]["dataset_id"])
    promotion = Decision(run_id=sampler.name, dataset_id=header["dataset"]["dataset_id"], inputs_id=None,
                         arm_id=header["arm_id"], fingerprint_hash=header["fingerprint_hash"], reason="r", at="t", by=None)
    (rerun_project.runs_dir / "decisions.jsonl").write_text(json.dumps(asdict(promotion)) + "\n")
    inputs = scan_project(rerun_project)
    sources = set()
    for run in inputs.runs:
        mine, theirs = inputs.baseline_choice(run.run_id), resolve_baseline(rerun_project, run.header)
        assert (mine.directory, mine.source) == (theirs.directory, theirs.source), run.run_id
        sources.add(mine.source)
    assert sources == {"promoted", "prior", "none"}


def _promote(project, run_dir) -> None:
    from dataclasses import asdict

    from evalsite.analysis.baselines import Decision

    header = json.loads((run_dir / "run.json").read_text())
    promotion = Decision(run_id=run_dir.name, dataset_id=header["dataset"]["dataset_id"], inputs_id=None,
                         arm_id=header["arm_id"], fingerprint_hash=header["fingerprint_hash"], reason="r", at="t", by=None)
    (project.runs_dir / "decisions.jsonl").write_text(json.dumps(asdict(promotion)) + "\n")


def test_an_older_run_gets_no_compare_page_against_a_later_promoted_baseline(rerun_project):
    older, newer = sorted(rerun_project.runs_dir.glob("*sampler*"),
                          key=lambda p: json.loads((p / "run.json").read_text())["started_at"])
    _promote(rerun_project, newer)
    build_site(find_project(rerun_project.root))
    site = rerun_project.root / "site"
    assert not (site / paths.compare(older.name, newer.name)).exists()  # `compare` would resolve it; the site does not build it
    assert parse(site / "runs" / f"{older.name}.html").find_all("p", class_="compare-link") == []
    assert all(not a.attrs.get("href", "").endswith(f"{older.name}--{newer.name}.html")
               for a in parse(site / "runs.html").find_all("a"))


def test_a_listed_pair_against_a_later_baseline_says_so(rerun_project):
    older, newer = sorted(rerun_project.runs_dir.glob("*sampler*"),
                          key=lambda p: json.loads((p / "run.json").read_text())["started_at"])
    (rerun_project.root / "evalsite.toml").write_text(f'[site]\ncompare = [["{older.name}", "{newer.name}"]]\n')
    build_site(find_project(rerun_project.root))
    site = rerun_project.root / "site"
    later = parse(site / paths.compare(older.name, newer.name))
    assert "against a later baseline" in " ".join(later.find("h1").text().split())
    assert "Against a later baseline" in later.find("p", class_="notice").text()
    assert "a later baseline" in later.find("title").text()
    earlier = parse(site / paths.compare(newer.name, older.name))  # the newer run against its prior run: no label
    assert "later baseline" not in earlier.text()
