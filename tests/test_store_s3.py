"""Runs on object storage: `compact --to s3://…` and reading commands over a local S3 (moto).

Needs the extras `evalsite[s3]` (fsspec, s3fs) and moto[server] (in the test extra); skipped
with the reason when they are not installed.
"""

from __future__ import annotations

import pytest

pytest.importorskip("s3fs", reason="the S3 store needs the optional extra: pip install 'evalsite[s3]'")


def test_leaderboard_and_query_read_compacted_runs_from_s3(cli, example_with_runs, s3, monkeypatch):
    local_board = cli.json("leaderboard")
    local_count = cli.json("query", "SELECT run_id, count(*) AS n FROM cases GROUP BY ALL ORDER BY ALL")
    uploaded = cli.json("compact", "--to", s3)
    assert len(uploaded) == 3 and all(row["parquet"].startswith(f"{s3}/dataset=") for row in uploaded)
    shutil_runs = example_with_runs / "runs"
    for folder in shutil_runs.iterdir():  # nothing local left to read: only the store has the cases
        (folder / "cases.jsonl").unlink()
    monkeypatch.setenv("EVALSITE_RUNS", s3)
    remote_board = cli.json("leaderboard")
    assert remote_board["arms"] == local_board["arms"] and remote_board["verdict"] == local_board["verdict"]
    assert cli.json("query", "SELECT run_id, count(*) AS n FROM cases GROUP BY ALL ORDER BY ALL") == local_count


def test_the_store_in_evalsite_toml_and_a_missing_bucket_is_one_line(cli, example_with_runs, s3):
    (example_with_runs / "evalsite.toml").write_text(f'[store]\nruns = "{s3}"\n')
    cli.json("compact", "--to", s3)
    assert len(cli.json("runs")) == 3
    (example_with_runs / "evalsite.toml").write_text('[store]\nruns = "s3://no-such-bucket/x"\n')
    result = cli("runs")
    assert result.exit_code == 1 and "no-such-bucket" in result.output


def test_the_global_runs_option_reads_the_store_in_a_fresh_process(cli, example_with_runs, s3):
    import json
    import os
    import subprocess
    import sys

    cli.json("compact", "--to", s3)
    result = subprocess.run([sys.executable, "-m", "evalsite", "--runs", s3, "runs", "--json"],
                            capture_output=True, text=True, env={**os.environ}, cwd=example_with_runs)
    assert result.returncode == 0, result.stderr
    assert len(json.loads(result.stdout)) == 3
    refused = subprocess.run([sys.executable, "-m", "evalsite", "--runs", s3, "run", "experiments/arithmetic.yaml"],
                             capture_output=True, text=True, cwd=example_with_runs)
    assert refused.returncode == 1 and "only `evalsite compact --to` writes" in refused.stderr
