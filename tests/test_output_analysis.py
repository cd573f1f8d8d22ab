"""``-o FILE`` on family-test, bootstrap, rank-stability, noise, holdout and query: the file holds
the command's ``--json`` data, and its CSV table the same figures, one row per record."""

from __future__ import annotations

import csv
import json

import pytest
from analysis_support import ARMS, new_run, unpin_dataset


def read_csv(path) -> list[dict]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def test_bootstrap_noise_family_and_stability_write_their_tables(cli, example_with_runs):
    for name, args in {"bootstrap": ("careful@latest",), "noise": ("sampler@latest",),
                       "family-test": ("careful@latest", "--vs", "sampler@latest"), "rank-stability": ()}.items():
        data = cli.json(name, *args)
        for extension in ("json", "csv", "md", "html"):
            result = cli(name, *args, "-o", f"{name}.{extension}")
            assert result.exit_code == 0, result.output
        assert json.loads((example_with_runs / f"{name}.json").read_text()) == data
        rows = read_csv(example_with_runs / f"{name}.csv")
        if name == "bootstrap":
            assert [r["statistic"] for r in rows] == ["mean", "pass_rate"]
            assert float(rows[0]["value"]) == data["mean"]["value"] == cli.json("show", "careful@latest")["mean_score"]
            assert (float(rows[0]["ci_low"]), float(rows[0]["ci_high"])) == (data["mean"]["interval"]["low"], data["mean"]["interval"]["high"])
        elif name == "noise":
            assert [r["item_id"] for r in rows] == [i["item_id"] for i in data["items"]] and len(rows) == 60
            assert all(float(r["wilson_low"]) == i["wilson"][0] and int(r["passed"]) == i["passed"] for r, i in zip(rows, data["items"]))
        elif name == "family-test":
            (row,) = rows
            comparison = data["comparisons"][0]
            assert row["vs"] == "sampler" and float(row["holm_p"]) == comparison["holm_p"]
            assert float(row["mean_diff"]) == pytest.approx(comparison["mean_diff"], abs=0) and row["verdict"] == comparison["verdict"]
        else:
            assert [(r["arm"], json.loads(r["places"]), r["group"]) for r in rows] == [(a["label"], a["places"], a["letters"]) for a in data["arms"]]
        assert (example_with_runs / f"{name}.md").read_text().startswith("###")


def test_an_output_format_the_command_does_not_write_is_refused_before_work(cli, example_with_runs):
    result = cli("bootstrap", "careful@latest", "-o", "x.junit.xml")
    assert result.exit_code == 1 and "bootstrap does not write .junit.xml" in result.output


def test_holdout_writes_one_row_per_arm_with_its_means_and_ranks(cli, example_with_runs):
    data = example_with_runs / "data" / "arithmetic.jsonl"
    rows = [json.loads(line) for line in data.read_text().splitlines()]
    for index, row in enumerate(rows):
        row["metadata"]["split"] = "pilot" if index % 3 else "holdout"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    unpin_dataset(example_with_runs)
    runs = {arm: new_run(cli, example_with_runs, "experiments/arithmetic.yaml", "--arm", arm, "--repeat", "1") for arm in ARMS}
    dataset = cli.json("show", runs["careful"])["dataset_id"]
    report = cli.json("holdout", "--dataset", dataset)
    for extension in ("json", "csv", "md", "html"):
        result = cli("holdout", "--dataset", dataset, "-o", f"holdout.{extension}")
        assert result.exit_code == 0, result.output
    assert json.loads((example_with_runs / "holdout.json").read_text()) == report
    table = read_csv(example_with_runs / "holdout.csv")
    assert [(r["arm"], r["run_id"]) for r in table] == [(arm, runs[arm]) for arm in report["labels"]]
    check = report["check"]
    for index, row in enumerate(table):
        assert (float(row["pilot_mean"]), float(row["holdout_mean"])) == (check["pilot_means"][index], check["holdout_means"][index])
    for split in ("pilot", "holdout"):
        by_rank = sorted(table, key=lambda r: int(r[f"{split}_rank"]))
        assert [report["labels"].index(r["arm"]) for r in by_rank] == check[f"{split}_order"]
        assert sorted(int(r[f"{split}_rank"]) for r in table) == [1, 2, 3]
    assert "| careful | careful |" in (example_with_runs / "holdout.md").read_text()


def test_query_writes_its_rows_as_json_and_the_csv_it_prints(cli, example_with_runs):
    sql = "SELECT item_id, score, [repeat, 1] AS pair, NULL AS nothing FROM cases WHERE repeat = 0 ORDER BY run_id, item_id"
    rows = cli.json("query", sql)
    for extension in ("json", "csv", "md", "html"):
        result = cli("query", sql, "-o", f"query.{extension}")
        assert result.exit_code == 0, result.output
    assert json.loads((example_with_runs / "query.json").read_text()) == rows and len(rows) == 180
    printed = cli("query", sql, "--csv").stdout
    assert (example_with_runs / "query.csv").read_text() == printed
    table = read_csv(example_with_runs / "query.csv")
    assert [(r["item_id"], float(r["score"]), json.loads(r["pair"]), r["nothing"]) for r in table] == [
        (r["item_id"], r["score"], r["pair"], "") for r in rows]
    assert cli("query", sql, "-o", "q.junit.xml").exit_code == 1
