"""``evalsite validate`` reads a large run's cases as columns, every line checked by DuckDB (the
footer's sha256 not trusted: it is what validate tests), and in Python only when a line needs a
warning: the same problems as reading every line in Python, for any case line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hostile_support import make_project
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalsite.analysis import run_views
from evalsite.project import Project
from evalsite.validate import check_runs

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.integers(2**63 - 2, 2**64 + 2) | st.floats(allow_nan=True)
    | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
CASE_KEYS = st.sampled_from(["item_id", "repeat", "scores", "score", "passed", "error", "latency_ms", "input_tokens",
                             "cost_usd", "output", "critical", "item_sha"])


@pytest.fixture(scope="module")
def undamaged(cli, tmp_path_factory) -> Path:
    return make_project(cli, tmp_path_factory.mktemp("columns") / "p")


def problems(project: Path, monkeypatch, *, columns: bool) -> list[str]:
    monkeypatch.setattr(run_views, "COLUMNAR_MIN_BYTES", 0 if columns else 1 << 60)
    return check_runs(Project(project))


def both_ways(project: Path, monkeypatch) -> list[str]:
    by_lines = problems(project, monkeypatch, columns=False)
    assert problems(project, monkeypatch, columns=True) == by_lines
    return by_lines


def copy_of(undamaged: Path, tmp_path: Path) -> tuple[Path, Path]:
    project = tmp_path / "p"
    shutil.copytree(undamaged, project)
    return project, sorted((project / "runs").iterdir())[0]


def lines_of(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "cases.jsonl").read_text().splitlines()]


def write_lines(folder: Path, lines: list[str]) -> None:
    (folder / "cases.jsonl").write_text("".join(line + "\n" for line in lines))


def test_the_checked_columns_find_what_the_python_reader_finds(undamaged, tmp_path, monkeypatch):
    project, folder = copy_of(undamaged, tmp_path)
    assert both_ways(project, monkeypatch) == []
    cases = lines_of(folder)
    footer = json.loads((folder / "end.json").read_text())
    footer["totals"]["cases"] += 5
    (folder / "end.json").write_text(json.dumps(footer))  # a footer that claims another count
    write_lines(folder, [json.dumps(case) for case in cases] + [json.dumps(cases[0]), "[1, 2]", "{not json",
                json.dumps({**cases[1], "score": "high"}), json.dumps({**cases[2], "latency_ms": 1e999}).replace("Infinity", "1e999"),
                json.dumps({**cases[3], "input_tokens": 10**30}), '{"item_id": "q9", "repeat": 0, "scores": [], "score": NaN}'])
    found = both_ways(project, monkeypatch)
    assert len(found) >= 7 and any("totals.cases is" in line for line in found), found


def test_a_vouched_run_is_still_checked_line_by_line(undamaged, tmp_path, monkeypatch):
    """Its cases edited, the footer's sha256 brought up to date: the file is not trusted."""
    import hashlib

    project, folder = copy_of(undamaged, tmp_path)
    cases = lines_of(folder)
    write_lines(folder, [json.dumps({**cases[0], "score": "high"}), *map(json.dumps, cases[1:])])
    footer = json.loads((folder / "end.json").read_text())
    footer["cases_sha256"] = hashlib.sha256((folder / "cases.jsonl").read_bytes()).hexdigest()
    (folder / "end.json").write_text(json.dumps(footer))
    found = both_ways(project, monkeypatch)
    assert any("line 1: score must be a number" in line for line in found), found


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(key=CASE_KEYS, value=JSON, line=JSON)
def test_fuzzed_case_lines_give_the_same_problems_either_way(undamaged, tmp_path_factory, monkeypatch, key, value, line):
    project, folder = copy_of(undamaged, tmp_path_factory.mktemp("fuzz"))
    first, *rest = lines_of(folder)
    write_lines(folder, [json.dumps({**first, key: value}), json.dumps(line), *map(json.dumps, rest)])
    both_ways(project, monkeypatch)
