"""Long lists on a terminal show their head and how many more: ``evalsite compare``'s report (every
entry with ``--all``; ``--json`` and ``--output`` always hold them all), ``evalsite show``'s critical
failures and ``evalsite run``'s warnings, through one helper (``evalsite.cli.output.first``)."""

from __future__ import annotations

from pathlib import Path

from compare_support import run_arm, run_ids, write_dataset, write_manifest

from evalsite.cli.run_report import listing


def test_run_warnings_name_twenty_items_then_how_many_more():
    ids = [f"q{n}" for n in range(1234)]
    assert listing(ids[:3]) == "q0, q1, q2"
    assert listing(ids[:20]) == ", ".join(ids[:20])
    assert listing(ids[:21]) == ", ".join(ids[:20]) + ", … and 1 more"
    assert listing(ids) == ", ".join(ids[:20]) + ", … and 1,214 more"


# `evalsite compare` ---------------------------------------------------------------------------------

MORE = "(all of them: --all, --json or --output FILE.json)"


def many_items(project: Path, count: int) -> list[str]:
    """The golden project with ``count`` critical questions instead of twelve; their ids."""
    ids = [f"g{n:02d}" for n in range(1, count + 1)]
    write_dataset(project, [{"id": i, "input": f"Q{i[1:]}", "expected": f"A{i[1:]}", "metadata": {"critical": True}}
                            for i in ids])
    return ids


def block(output: str, heading: str) -> list[str]:
    """The lines under ``heading`` (a line of its own) up to the next blank line."""
    lines = output.splitlines()
    start = lines.index(heading) + 1
    return lines[start:lines.index("", start)]


def line_of(output: str, start: str) -> str:
    (found,) = [line for line in output.splitlines() if line.startswith(start)]
    return found


def test_each_long_list_shows_its_first_twenty_then_how_many_more(golden_project, cli):
    ids = many_items(golden_project, 45)
    baseline = run_arm(cli, golden_project, params={"wrong": ["g01", "g02"]})
    worse = ["g02", *ids[10:35]]  # 25 regress and newly fail; g01 improves; g02 still fails
    current = run_arm(cli, golden_project, params={"wrong": worse})

    report = cli.json("compare", current, "--baseline", baseline)["regression"]
    regressed = [i for i in report["items"] if i["classification"] == "regressed"]
    assert len(regressed) == 25 and report["evaluators"][0]["newly_failing"] == ids[10:35], "--json holds them all"
    assert report["critical_newly_failing"] == ids[10:35]

    shown = cli("compare", current, "--baseline", baseline)
    assert shown.exit_code == 0, shown.output
    out = shown.stdout
    lines = block(out, "regressed (25):")
    assert [line.split()[0] for line in lines[:-1]] == [i["item_id"] for i in regressed[:20]]  # all Δ -1: item order
    assert lines[-1] == f"  … and 5 more {MORE}"
    first_twenty = ", ".join(ids[10:30])
    assert line_of(out, "  newly failing") == f"  newly failing (25): {first_twenty}, … and 5 more {MORE}"
    assert line_of(out, "critical rows newly failing") == f"critical rows newly failing (25): {first_twenty}, … and 5 more {MORE}"
    # short lists are whole, with no "more"
    assert block(out, "improved (1):") == ["  g01  0.000 → 1.000  Δ +1.000"]
    assert line_of(out, "  newly passing") == "  newly passing (1): g01"
    assert line_of(out, "  still failing") == "  still failing (1): g02"
    assert out.count(" more ") == 3


def test_a_list_of_twenty_is_whole_and_one_of_twenty_one_is_cut(golden_project, cli):
    ids = many_items(golden_project, 30)
    baseline = run_arm(cli, golden_project)
    twenty = cli("compare", run_arm(cli, golden_project, params={"wrong": ids[:20]}), "--baseline", baseline).stdout
    assert len(block(twenty, "regressed (20):")) == 20
    assert line_of(twenty, "  newly failing") == f"  newly failing (20): {', '.join(ids[:20])}"
    assert "more" not in twenty
    more = cli("compare", run_arm(cli, golden_project, params={"wrong": ids[:21]}), "--baseline", baseline).stdout
    assert block(more, "regressed (21):")[20:] == [f"  … and 1 more {MORE}"]
    assert line_of(more, "  newly failing") == f"  newly failing (21): {', '.join(ids[:20])}, … and 1 more {MORE}"


def test_all_lists_every_entry(golden_project, cli):
    ids = many_items(golden_project, 45)
    baseline = run_arm(cli, golden_project)
    current = run_arm(cli, golden_project, params={"wrong": ids[:40]})
    shown = cli("compare", current, "--baseline", baseline, "--all")
    assert shown.exit_code == 0, shown.output
    assert [line.split()[0] for line in block(shown.stdout, "regressed (40):")] == ids[:40]
    assert line_of(shown.stdout, "  newly failing") == f"  newly failing (40): {', '.join(ids[:40])}"
    assert line_of(shown.stdout, "critical rows newly failing") == f"critical rows newly failing (40): {', '.join(ids[:40])}"
    assert "more" not in shown.stdout


def test_run_with_a_baseline_cuts_its_lists_and_names_the_compare_that_lists_them(golden_project, cli):
    ids = many_items(golden_project, 30)
    baseline = run_arm(cli, golden_project)
    before = run_ids(golden_project)
    done = cli("run", write_manifest(golden_project, params={"wrong": ids[:25]}), "--baseline", baseline)
    (current,) = run_ids(golden_project) - before
    rest = f"(all of them: --json, or evalsite compare {current} --baseline {baseline} --all)"
    assert block(done.stdout, "regressed (25):")[20:] == [f"  … and 5 more {rest}"]
    assert line_of(done.stdout, "  newly failing") == f"  newly failing (25): {', '.join(ids[:20])}, … and 5 more {rest}"
    assert len(block(cli("compare", current, "--baseline", baseline, "--all").stdout, "regressed (25):")) == 25


def test_a_cut_list_of_items_shows_the_largest_changes_first(golden_project, cli):
    ids = many_items(golden_project, 30)
    baseline = run_arm(cli, golden_project, repeat=2)
    half, whole = ids[:15], ids[15:25]  # wrong in one repeat of two (Δ -0.5), in both (Δ -1)
    current = run_arm(cli, golden_project, repeat=2, params={"wrong": whole, "wrong_in_repeat": {"0": half}})
    lines = block(cli("compare", current, "--baseline", baseline).stdout, "regressed (25):")
    assert [line.split()[0] for line in lines[:-1]] == whole + half[:10]  # ties in item order
    assert lines[-1] == f"  … and 5 more {MORE}"


def test_show_names_twenty_critical_failures_then_how_many_more(golden_project, cli):
    ids = many_items(golden_project, 30)
    run = run_arm(cli, golden_project, params={"wrong": ids[:25]})
    assert cli.json("show", run)["critical_failures"] == ids[:25]
    assert line_of(cli("show", run).stdout, "critical_failures") == (
        f"critical_failures     {', '.join(ids[:20])}, … and 5 more (all of them: --json)")
    few = run_arm(cli, golden_project, params={"wrong": ids[:2]})
    assert line_of(cli("show", few).stdout, "critical_failures") == f"critical_failures     {ids[0]}, {ids[1]}"


def test_job_summaries_name_ten_ids_then_how_many_more(golden_project, cli, monkeypatch):
    """A step summary holds at most 1 MiB: `run --summary`'s critical rows and `compare --summary`'s
    newly failing items are cut after ten."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    ids = many_items(golden_project, 30)
    baseline = run_arm(cli, golden_project)
    before = run_ids(golden_project)
    cli("run", write_manifest(golden_project, params={"wrong": ids[:25]}), "--summary", str(golden_project / "run.md"))
    (current,) = run_ids(golden_project) - before
    assert f"- main: critical rows failed: {', '.join(ids[:10])}, … and 15 more" in (golden_project / "run.md").read_text()
    cli("compare", current, "--baseline", baseline, "--summary", str(golden_project / "compare.md"))
    assert f"newly fails on 25 items: {', '.join(ids[:10])}, … and 15 more" in (golden_project / "compare.md").read_text()
    cli("run", write_manifest(golden_project, params={"wrong": ids[:2]}), "--summary", str(golden_project / "few.md"))
    assert f"- main: critical rows failed: {ids[0]}, {ids[1]}\n" in (golden_project / "few.md").read_text() + "\n", "two: whole"


def test_every_cut_list_says_how_many_more_in_the_same_words():
    """Messages, terminal lines and summaries name a long list's head, then ``… and N more``
    (``evalsite.errors.listed``): a refused lock, a plan's changes, a promotion's failed rows."""
    from evalsite.errors import listed

    assert listed([], 3) == "" and listed(["a"], 3) == "a"
    assert listed(["a", "b", "c"], 3, "; ") == "a; b; c"
    assert listed(["a", "b", "c", "d"], 3, "; ") == "a; b; c; … and 1 more"
    assert listed([str(n) for n in range(2003)], 2) == "0, 1, … and 2,001 more"
