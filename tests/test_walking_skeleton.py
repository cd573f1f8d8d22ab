"""The whole slice end to end: run the example, list runs, query, build the site."""

from __future__ import annotations

import json
from pathlib import Path

from sitekit import parse

from evalsite.runlog.store import read_run


def run_dirs(project: Path) -> list[Path]:
    return sorted(p for p in (project / "runs").iterdir() if p.is_dir())


def test_run_writes_one_run_per_arm_with_header_cases_and_footer(example_project, cli):
    result = cli("run", "experiments/arithmetic.yaml", "--repeat", "1")
    assert result.exit_code == 1, "every arm fails some items, so the all-or-nothing verdict fails"
    runs = [read_run(d) for d in run_dirs(example_project)]
    assert sorted(r.header.arm_id for r in runs) == ["careful", "left_to_right", "sampler"]
    for run in runs:
        assert run.header.format_version == 1
        assert run.header.dataset.items == 60
        assert run.footer.status == "completed"
        assert len(run.cases) == 60
        assert {c["item_id"] for c in run.cases} == {f"q{i:03d}" for i in range(60)}
    careful = next(r for r in runs if r.header.arm_id == "careful")
    # careful writes thousands with a comma: exactly the products >= 1000 fail
    rows = [json.loads(line) for line in (example_project / "data/arithmetic.jsonl").read_text().splitlines()]
    big = {r["id"] for r in rows if int(r["expected"]) >= 1000}
    failed = {c["item_id"] for c in careful.cases if not c["passed"]}
    assert failed == big and big


def test_running_twice_makes_new_runs_and_overwrites_nothing(example_project, cli):
    cli("run", "experiments/arithmetic.yaml", "--repeat", "1", "--arm", "careful")
    first = run_dirs(example_project)
    before = {p: (p / "cases.jsonl").read_bytes() for p in first}
    cli("run", "experiments/arithmetic.yaml", "--repeat", "1", "--arm", "careful")
    second = run_dirs(example_project)
    assert len(second) == 2 and set(first) < set(second)
    assert all((p / "cases.jsonl").read_bytes() == data for p, data in before.items())


def test_sampler_spreads_across_repeats(example_project, cli):
    cli("run", "experiments/arithmetic.yaml", "--arm", "sampler", "--repeat", "3")
    (run,) = [read_run(d) for d in run_dirs(example_project)]
    means = [
        sum(c["score"] for c in run.cases if c["repeat"] == r) / 60 for r in range(3)
    ]
    assert len(set(means)) > 1


def test_runs_and_query_read_the_views(example_project, cli):
    cli("run", "experiments/arithmetic.yaml", "--repeat", "1")
    listing = cli("runs", "--json")
    rows = json.loads(listing.output)
    assert {r["arm"] for r in rows} == {"careful", "left_to_right", "sampler"}
    assert all(r["cases"] == 60 for r in rows)
    query = cli("query", "select count(*) as n from scores where evaluator = 'exact'", "--json")
    assert json.loads(query.output) == [{"n": 180}]


def test_build_renders_leaderboard_and_a_page_per_run_with_working_links(example_project, cli):
    cli("run", "experiments/arithmetic.yaml", "--repeat", "1")
    result = cli("build")
    assert result.exit_code == 0, result.output
    site = example_project / "site"
    index = (site / "index.html").read_text()
    assert "careful" in index and "0.933" in index
    pages = list((site / "runs").glob("*.html"))
    assert len(pages) == 3
    for page in [site / "index.html", *pages]:
        links = [node.attrs[name] for node in parse(page).iter() for name in ("href", "src") if node.attrs.get(name)]
        assert links, page.name
        for link in links:
            assert not link.startswith(("/", "http:", "https:")), link
            target = link.partition("#")[0] or page.name  # an anchor names a place on the linked page
            assert (page.parent / target).resolve().exists(), f"{page.name}: broken link {link}"


def test_unknown_command_and_bad_arguments_are_usage_errors(cli):
    assert cli("frobnicate").exit_code == 2
    assert cli("run", "experiments/x.yaml", "--repeat", "zero").exit_code == 2


def test_help_lists_commands_with_one_line_each(cli):
    result = cli("--help")
    for command in ("run", "runs", "show", "query", "build"):
        assert f"  {command} " in result.output


def test_missing_manifest_is_one_line_error(example_project, cli):
    result = cli("run", "experiments/missing.yaml")
    assert result.exit_code == 1
    assert result.output.strip() == "Error: experiments/missing.yaml: manifest not found"
