"""The site build: pages, leaderboards, determinism, incremental builds, links, downloads, budgets."""

from __future__ import annotations

import csv
import io
import json
import shutil
from dataclasses import fields, is_dataclass
from pathlib import Path

import pytest
from example_support import REPO
from sitedata import matrix_rows, payload, run_cases
from sitekit import case, parse, table_rows, tree_bytes, write_run

from evalsite.errors import ProjectError, SiteError
from evalsite.project import Project, find_project
from evalsite.site import build_site, paths
from evalsite.site.pages import PageContext, common, compare, datasets, decisions, experiments, home, reports, runs
from evalsite.site.pages.runs import CASE_VIEWS


@pytest.fixture
def site_project(example_runs, tmp_path) -> Project:
    """A private copy of the example project with its runs (as a Project), so a test may add to it."""
    shutil.copytree(example_runs, tmp_path / "p")
    return find_project(tmp_path / "p")


def html_files(site: Path) -> list[Path]:
    return sorted(site.rglob("*.html"))


def test_example_site_has_every_page_family(site_project):
    report = build_site(site_project)
    site = site_project.root / "site"
    run_ids = sorted(p.name for p in site_project.runs_dir.iterdir())
    assert (site / "index.html").is_file() and (site / "runs.html").is_file() and (site / "decisions.html").is_file()
    assert (site / "experiments/arithmetic.html").is_file()
    assert len(list((site / "datasets").glob("*.html"))) == 1
    for run_id in run_ids:
        assert (site / "runs" / f"{run_id}.html").is_file()
    assert report.pages == len(html_files(site)) and report.rendered == report.kept + report.rendered


def test_leaderboard_groups_careful_alone_and_the_close_arms_together(site_project):
    build_site(site_project)
    page = parse(next((site_project.root / "site/datasets").glob("*.html")))
    table = page.find("div", id="leaderboard-1").find("table")
    header = [" ".join(th.text().split()) for th in table.find("thead").find_all("th")]
    rows = [dict(zip(header, row)) for row in table_rows(table)]
    by_arm = {row["arm"]: row for row in rows}
    assert rows[0]["arm"] == "careful"
    assert by_arm["careful"]["group"] == "a"
    assert by_arm["left_to_right"]["group"] == by_arm["sampler"]["group"] == "b"
    assert "0.933" in by_arm["careful"]["mean score"] and "[" in by_arm["careful"]["mean score"]  # with its interval
    assert by_arm["careful"]["cost"] == "unknown" and by_arm["sampler"]["cost"].startswith("$")  # unknown, never $0
    assert float(by_arm["sampler"]["noise ±"]) > 0  # sampler's score moves between repeats
    text = page.text()
    assert "Friedman omnibus test" in text and "careful is ahead of every other arm" in text
    assert "the separated pairs (careful > left_to_right, careful > sampler" in text
    assert page.find_all("svg", class_="chart")


def test_runs_on_other_evaluator_versions_get_their_own_leaderboard_and_left_out_runs_say_why(site_project):
    runs_dir = site_project.runs_dir
    dataset_id = json.loads(next(runs_dir.glob("*careful*/run.json")).read_text())["dataset"]["dataset_id"]
    write_run(runs_dir, "20990101T000000Z-other-0001", [case("q000")], arm="other", dataset_id=dataset_id,
              evaluators={"exact": {"type": "exact", "version": "changed"}})
    write_run(runs_dir, "20990101T000001Z-broken-0002", [case("q000")], arm="broken", dataset_id=dataset_id, status=None)
    build_site(site_project)
    page = parse(next((site_project.root / "site/datasets").glob("*.html")))
    assert len(page.find_all("section", class_="leaderboard")) == 2
    assert "changed" in page.find("section", id="leaderboard-1").text()
    left_out = {row[1]: row[2] for row in table_rows(page.find("div", id="left-out").find("table"))}
    assert left_out == {"broken": "status interrupted"}


def test_build_twice_gives_byte_identical_trees(site_project, tmp_path):
    build_site(site_project, tmp_path / "one")
    build_site(site_project, tmp_path / "two")
    one, two = tree_bytes(tmp_path / "one"), tree_bytes(tmp_path / "two")
    assert one.keys() == two.keys() and one == two
    assert not any(b"T0" in content and name.endswith(".html") and b"built at" in content for name, content in one.items())


def test_incremental_build_renders_only_what_changed_and_equals_a_full_build(site_project, tmp_path):
    site = site_project.root / "site"
    build_site(site_project)
    assert build_site(site_project).rendered == 0
    write_run(site_project.runs_dir, "20990101T000000Z-extra-0001", [case("x1"), case("x2", passed=False, score=0.0)],
              arm="extra", dataset_id="other@111111111111", experiment="extra-exp")
    second = build_site(site_project)
    # rendered: home, runs list, decisions, the new run, its dataset, its experiment, its items, the search
    # documents of pages; kept: the three example runs, the example dataset, its items, the example experiment
    # and the judges page (no rated run changed)
    assert (second.rendered, second.kept) == (8, 7)
    build_site(site_project, tmp_path / "fresh")
    assert tree_bytes(site) == tree_bytes(tmp_path / "fresh")
    shutil.rmtree(site_project.runs_dir / "20990101T000000Z-extra-0001")
    build_site(site_project)
    assert not (site / "runs/20990101T000000Z-extra-0001.html").exists()
    assert not (site / "experiments/extra-exp.html").exists()


def test_every_internal_link_and_anchor_resolves(site_project):
    build_site(site_project)
    site = site_project.root / "site"
    ids: dict[Path, set[str]] = {}
    for page in html_files(site):
        for node in parse(page).iter():
            link = node.attrs.get("href") or node.attrs.get("src")
            if not link or link.startswith("data:"):
                continue
            assert not link.startswith(("/", "http:", "https:", "//")), f"{page}: non-relative link {link}"
            target, _, fragment = link.partition("#")
            resolved = (page.parent / target).resolve() if target else page
            assert resolved.is_file(), f"{page.relative_to(site)}: broken link {link}"
            if fragment and resolved.suffix == ".html":
                if resolved not in ids:
                    ids[resolved] = drawn_anchors(site, resolved) | {n.attrs["id"] for n in parse(resolved).iter() if "id" in n.attrs}
                assert fragment in ids[resolved], f"{page.relative_to(site)}: missing anchor {link}"


def drawn_anchors(site: Path, page: Path) -> set[str]:
    """The anchors a page's script draws: the filters of a case listing or matrix (#cases-failed,
    #matrix-divergent), and on an item page the items its runs' data holds for its bucket."""
    tree = parse(page)
    anchors = {f"cases-{name}" for name, _ in CASE_VIEWS if tree.find_all("div", class_="case-listing")}
    anchors |= {"matrix-all", "matrix-divergent"} if tree.find_all("div", class_="matrix-view") else set()
    for shell in tree.find_all("div", class_="item-page"):
        for run in json.loads(shell.attrs["data-runs"]):
            anchors |= {c["anchor"] for c in run_cases(site, run["run"]) if c["bucket"] == shell.attrs["data-bucket"]}
    return anchors


def test_every_table_has_csv_and_json_downloads_that_match_it(site_project):
    build_site(site_project)
    site = site_project.root / "site"
    checked = 0
    for page in html_files(site):
        tree = parse(page)
        for block in tree.find_all("div", class_="table-block"):
            links = [a.attrs["href"] for a in block.find("p", class_="downloads").find_all("a")]
            csv_path, json_path = ((page.parent / link).resolve() for link in links)
            records = json.loads(json_path.read_text())
            rows = list(csv.reader(io.StringIO(csv_path.read_text())))
            shown = block.find_all("tbody")
            assert len(records) == len(rows) - 1 == (len(shown[0].find_all("tr")) if shown else 0)
            checked += 1
    assert checked > 15


def test_the_run_page_counts_its_cases_and_its_data_holds_every_case_once(site_project):
    build_site(site_project)
    careful = next(site_project.runs_dir.glob("*careful*")).name
    page = parse(site_project.root / f"site/runs/{careful}.html")
    views = page.find("nav", class_="pager").find("p", class_="views").text()
    assert "all (180)" in views and "failed (12)" in views and "errored (0)" in views  # readable without JavaScript
    cases = run_cases(site_project.root / "site", careful)
    assert len({(c["item_id"], c["repeat"]) for c in cases}) == len(cases) == 180
    assert sum(c["status"] == "failed" for c in cases) == 12
    recorded = [json.loads(line) for line in (site_project.runs_dir / careful / "cases.jsonl").read_text().splitlines()]
    assert {(c["item_id"], c["repeat"], c["output"]) for c in cases} == {(c["item_id"], c["repeat"], c["output"]) for c in recorded}


def test_a_ten_thousand_case_run_is_split_into_small_data_files(tmp_path):
    root = tmp_path / "big"
    (root / "data").mkdir(parents=True)
    cases = [case(f"i{n}", output="word " * 40, passed=n % 3 > 0, score=float(n % 3 > 0)) for n in range(10_000)]
    write_run(root / "runs", "20260101T000000Z-big-0001", cases)
    report = build_site(find_project(root))
    site = root / "site"
    assert len(run_cases(site, "20260101T000000Z-big-0001")) == 10_000
    assert len(list((site / "data/runs/20260101T000000Z-big-0001").glob("*.js"))) == 257  # 256 item buckets and the index
    sizes = [p.stat().st_size for p in site.rglob("*") if p.is_file()]
    assert max(sizes) < 2 * 1024 * 1024 and report.warnings == []
    assert sum(sizes) < 12 * 1024 * 1024  # about one copy of the cases' text (2.6 MB of outputs), not four


def test_long_fields_are_cut_and_the_budget_splits_data_files(tmp_path):
    root = tmp_path / "long"
    (root / "data").mkdir(parents=True)
    (root / "evalsite.toml").write_text("[site]\nmax_field_chars = 1000\npage_budget_kb = 2\n")
    write_run(root / "runs", "20260101T000000Z-long-0001", [case("i1", output=str(r) * 5000, repeat=r) for r in range(4)])
    build_site(find_project(root))
    cases = run_cases(root / "site", "20260101T000000Z-long-0001")
    assert [c["cut"] for c in cases] == [{"out": 4000}] * 4 and {len(c["output"]) for c in cases} == {1000}
    index = payload(root / "site" / paths.run_data_index("20260101T000000Z-long-0001"))
    assert index["parts"] == {paths.item_bucket("i1"): 2}  # 2 kB of text a file: one item's repeats over two


def test_a_file_above_the_hard_limit_is_refused_by_name(tmp_path, monkeypatch):
    monkeypatch.setattr("evalsite.site.output.HARD_FILE_LIMIT_BYTES", 100_000)  # above the largest static asset
    root = tmp_path / "huge"
    (root / "data").mkdir(parents=True)
    (root / "evalsite.toml").write_text("[site]\nwarn_file_mb = 0.001\nmax_field_chars = 200000\n")
    write_run(root / "runs", "20260101T000000Z-huge-0001", [case("i1", output="y" * 150_000)])
    with pytest.raises(SiteError, match=r"runs/20260101T000000Z-huge-0001.*above the 100 MB limit"):
        build_site(find_project(root))


def test_redact_leaves_inputs_and_outputs_out_of_every_file(tmp_path):
    root = tmp_path / "secret"
    (root / "data").mkdir(parents=True)
    (root / "evalsite.toml").write_text("[site]\nredact = true\n")
    write_run(root / "runs", "20260101T000000Z-a-0001", [case("i1", input="SECRET-INPUT", output="SECRET-OUTPUT",
              expected="SECRET-EXPECTED", detail="SECRET-DETAIL")])
    write_run(root / "runs", "20260101T000000Z-b-0002", [case("i1", output="SECRET-OTHER")], arm="b")
    build_site(find_project(root))
    for name, content in tree_bytes(root / "site").items():
        assert b"SECRET" not in content, name
    assert "redacted" in parse(root / "site/index.html").text()


def test_project_templates_and_static_files_override_the_theme_file_by_file(site_project):
    (site_project.root / "templates").mkdir()
    (site_project.root / "templates/run.html").write_text(
        '{% extends "builtin/run.html" %}{% block title %}CUSTOM {{ super() }}{% endblock %}')
    (site_project.root / "static").mkdir()
    (site_project.root / "static/style.css").write_text("body { color: rebeccapurple; }\n")
    build_site(site_project)
    site = site_project.root / "site"
    run_page = next((site / "runs").glob("*.html"))
    assert parse(run_page).find("title").text().startswith("CUSTOM Run")
    assert not parse(site / "index.html").find("title").text().startswith("CUSTOM")
    styles = list((site / "static").glob("style.*.css"))
    assert len(styles) == 1 and "rebeccapurple" in styles[0].read_text()
    assert list((site / "static").glob("site.*.js"))  # the built-in script is still there


def test_decisions_show_reasons_newest_first_and_baselines_on_home(site_project):
    from dataclasses import asdict

    from evalsite.analysis.baselines import Decision

    run_ids = sorted(p.name for p in site_project.runs_dir.iterdir())
    header = json.loads((site_project.runs_dir / run_ids[0] / "run.json").read_text())

    def promotion(run_id: str, arm: str, reason: str, fingerprint: str = header["fingerprint_hash"]) -> str:
        return json.dumps(asdict(Decision(run_id=run_id, dataset_id="d", inputs_id=None, arm_id=arm,
                                          fingerprint_hash=fingerprint, reason=reason, at="2026-01-01T00:00:00Z", by="ann")))

    lines = [
        promotion("20000101T000000Z-gone-0000", "gone", "old"),
        promotion(run_ids[0], "careful", "first **choice**"),
        promotion(run_ids[0], "careful", "better <script>alert(1)</script>"),
        promotion(run_ids[1], "left_to_right", "edited since", fingerprint="0" * 16),
    ]
    (site_project.runs_dir / "decisions.jsonl").write_text("\n".join(lines) + "\nnot json\n{}\n")
    build_site(site_project)
    site = site_project.root / "site"
    page = parse(site / "decisions.html")
    articles = page.find_all("article", class_="decision")
    assert [a.find("div", class_="reason").text().strip() for a in articles] == [
        "edited since", "better <script>alert(1)</script>", "first choice", "old"]
    assert articles[2].find("strong").text() == "choice"
    checks = [a.find("span", class_="badge").text() for a in articles]
    assert checks == ["fingerprint changed", "ok", "ok", "run missing"]
    assert "line 5 is not valid JSON" in page.text() and "line 6: run_id is missing" in page.text()
    baselines = table_rows(parse(site / "index.html").find("div", id="baselines").find("table"))
    assert [row[4] for row in baselines] == ["left_to_right", "careful", "gone"] and "better" in baselines[1][7]


def test_experiment_page_renders_the_description_arms_and_matrix_with_diffs(site_project):
    build_site(site_project)
    page = parse(site_project.root / "site/experiments/arithmetic.html")
    description = page.find("div", class_="description")
    assert [c.text() for c in description.find_all("code")][:2] == ["careful", "left_to_right"]
    assert len(page.find("table", class_="arms").find("tbody").find_all("tr")) == 3
    matrix = page.find("table", id="matrix-table")
    header = [th.text() for th in matrix.find("thead").find_all("th")]
    assert header[1:4] == ["careful", "left_to_right", "sampler"]
    assert len(matrix.find("tfoot").find_all("td", class_="num")) == 3  # the aggregate row reads without JavaScript
    rows = matrix_rows(site_project.root / "site", "arithmetic")
    assert len(rows) == 60 and [row[0] for row in rows][:2] == ["q000", "q001"]
    divergent = [row for row in rows if row[3] > 1]
    assert divergent and all(len(row[4]) == 3 for row in rows)
    assert "outputs differ (" + str(len(divergent)) + ")" in page.find("div", class_="matrix-view").text()
    assert json.loads(page.find("div", class_="matrix-view").attrs["data-runs"])[0]["label"] == "careful"  # the diff reads each arm's run data


def test_unreadable_runs_and_bad_settings_are_reported_not_crashing(site_project):
    broken = site_project.runs_dir / "20990101T000000Z-bad-0000"
    broken.mkdir()
    (broken / "run.json").write_text("{not json")
    report = build_site(site_project)
    assert any("20990101T000000Z-bad-0000" in reason for reason in report.skipped_runs)
    assert "run.json: not valid JSON" in parse(site_project.root / "site/index.html").text()
    (site_project.root / "evalsite.toml").write_text("[site]\ncases_per_pag = 3\nredact = 'yes'\n")
    with pytest.raises(ProjectError, match=r"unknown key 'cases_per_pag'; did you mean 'cases_per_page'\?.*redact: needs true or false"):
        build_site(find_project(site_project.root))


def test_refuses_to_overwrite_a_folder_it_did_not_build(site_project):
    out = site_project.root / "elsewhere"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    with pytest.raises(SiteError, match="not empty and was not built by evalsite"):
        build_site(site_project, out)
    assert (out / "notes.txt").read_text() == "mine"


def test_build_command_prints_json(example_runs, cli, monkeypatch, tmp_path):
    monkeypatch.chdir(example_runs)
    result = cli("build", "--out", str(tmp_path / "s"), "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["pages"] > 5 and report["files"] > report["pages"] and len(report["input_hash"]) == 16


CONTEXT_MODULES = (common, compare, datasets, decisions, experiments, home, reports, runs)


def test_every_page_context_field_is_documented():
    classes = {obj for module in CONTEXT_MODULES for obj in vars(module).values()
               if isinstance(obj, type) and is_dataclass(obj) and obj.__module__ == module.__name__
               and not obj.__name__.startswith("_")}
    classes.add(PageContext)
    assert len(classes) > 15
    for cls in classes:
        for item in fields(cls):
            assert item.metadata.get("help"), f"{cls.__name__}.{item.name} has no help"


def test_the_reference_docs_hold_the_current_settings_and_contexts():
    from evalsite.site.reference import context_reference, settings_reference

    docs = (REPO / "docs/reference/site.md").read_text()
    assert settings_reference() in docs and context_reference() in docs, "run python -m evalsite.site.reference"


def test_a_repeated_run_shows_its_noise_and_flaky_items(site_project):
    build_site(site_project)
    sampler = parse(next((site_project.root / "site/runs").glob("*sampler*.html")))
    assert "Noise across repeats" in sampler.text()
    flaky = table_rows(sampler.find("div", id="flaky").find("table"))
    assert flaky and all(0 < int(row[2]) < int(row[1]) for row in flaky)  # passed in some repeats, not all


def test_arms_the_data_cannot_separate_share_one_group_and_no_order_is_claimed(tmp_path):
    root = tmp_path / "tie"
    (root / "data").mkdir(parents=True)
    for index, arm in enumerate(["x", "y", "z"]):
        cases = [case(f"i{n}", passed=(n + index) % 2 == 0, score=float((n + index) % 2 == 0)) for n in range(20)]
        write_run(root / "runs", f"20260101T00000{index}Z-{arm}-000{index}", cases, arm=arm)
    build_site(find_project(root))
    page = parse(root / "site/datasets/data-000000000000.html")
    groups = [row[3] for row in table_rows(page.find("div", id="leaderboard-1").find("table"))]  # rank, arm, mean, group, Δ
    assert groups == ["a", "a", "a"]
    verdict = page.find("p", class_="verdict").text()
    assert verdict.startswith("no arm is ahead of every other at α = 0.05: x is not separated from y, z")
    assert "supported" not in page.text().replace("not supported", "")


def test_critical_rows_have_their_own_filter_while_the_dataset_still_matches_the_run(tmp_path):
    from evalsite.experiment.datasets import load_dataset

    root = tmp_path / "critical"
    (root / "data").mkdir(parents=True)
    rows = [{"id": "a", "input": "q", "expected": "x", "metadata": {"critical": True}},
            {"id": "b", "input": "q", "expected": "x"},
            {"id": "c", "input": "q", "expected": "x", "metadata": {"critical": True}}]
    data = root / "data/d.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    write_run(root / "runs", "20260101T000000Z-a-0001", [case("a", passed=False, score=0.0), case("b"), case("c")],
              dataset_id=load_dataset(data).dataset_id, dataset_path="data/d.jsonl")
    build_site(find_project(root))
    page = parse(root / "site/runs/20260101T000000Z-a-0001.html")
    assert "critical rows (2)" in page.find("nav", class_="pager").text()
    numbers = dict(zip([dt.text() for dt in page.find("dl", class_="numbers").find_all("dt")],
                       [dd.text() for dd in page.find("dl", class_="numbers").find_all("dd")]))
    assert numbers["critical failures"] == "1"
    critical = [c["item_id"] for c in run_cases(root / "site", "20260101T000000Z-a-0001") if c["critical"]]
    assert critical == ["a", "c"]
    data.write_text(data.read_text().replace('"x"}', '"y"}', 1))  # the dataset changed since the run
    build_site(find_project(root))
    page = parse(root / "site/runs/20260101T000000Z-a-0001.html")
    assert "critical rows (0)" in page.find("nav", class_="pager").text()
    assert "unknown" in page.find("dl", class_="numbers").text()


def test_a_numeric_parameter_the_configs_vary_gets_a_score_chart(tmp_path):
    root = tmp_path / "sweep"
    (root / "data").mkdir(parents=True)
    for index, temperature in enumerate([0.0, 0.5, 1.0]):
        cases = [case(f"i{n}", passed=n > index, score=float(n > index)) for n in range(6)]
        write_run(root / "runs", f"20260101T00000{index}Z-t{index}-000{index}", cases, arm=f"t{index}",
                  config={"arm_id": f"t{index}", "params": {"temperature": temperature, "model": "m"}})
    build_site(find_project(root))
    page = parse(root / "site/experiments/exp.html")
    titles = [svg.find("title").text() for svg in page.find_all("svg", class_="chart")]
    assert titles == ["Mean score against temperature"]


def test_a_critical_flag_recorded_in_the_cases_is_used_without_the_dataset(tmp_path):
    root = tmp_path / "recorded"
    (root / "data").mkdir(parents=True)
    cases = [dict(case("a", passed=False, score=0.0), critical=True), dict(case("b"), critical=False)]
    write_run(root / "runs", "20260101T000000Z-a-0001", cases)
    build_site(find_project(root))
    page = parse(root / "site/runs/20260101T000000Z-a-0001.html")
    assert "critical rows (1)" in page.find("nav", class_="pager").text()
    assert "criticalfailures1" in "".join(page.find("dl", class_="numbers").text().split())


def test_csv_cells_a_spreadsheet_would_run_as_formulas_are_quoted_and_json_keeps_them():
    from evalsite.site.tables import Column, Table

    table = Table("t", [Column("output", "output"), Column("score", "score")],
                  [{"output": '=HYPERLINK("http://x","y")', "score": -0.5}, {"output": "-1 apples", "score": 1}])
    rows = list(csv.reader(io.StringIO(table.to_csv())))
    assert rows[1] == ["'=HYPERLINK(\"http://x\",\"y\")", "-0.5"]
    assert rows[2] == ["'-1 apples", "1"]
    assert json.loads(table.to_json())[0]["output"] == '=HYPERLINK("http://x","y")'
