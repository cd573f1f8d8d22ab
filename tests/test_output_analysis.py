"""``-o FILE`` on family-test, bootstrap, rank-stability and noise: the file holds the command's
``--json`` data, and its CSV table the same figures, one row per record."""

from __future__ import annotations

import csv
import json

import pytest


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
