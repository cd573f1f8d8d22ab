"""What a run page shows of each case, read as columns (analysis.case_texts through DuckDB) equals
what the Python reader's case records give: the same texts, the same error panel, the same case
order and the same data scripts, byte for byte; and a build of runs evalsite wrote makes no case
record at all."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from case_lines_support import good_case, summary_text, write_lines
from example_support import run_example

from evalsite.analysis import case_scan
from evalsite.analysis.case_columns import natural_order
from evalsite.analysis.case_scan import cases_in_hand, scan_cases
from evalsite.analysis.case_texts import texts_of_cases
from evalsite.analysis.parquet import as_written
from evalsite.analysis.run_views import top_errors, top_errors_of
from evalsite.project import find_project
from evalsite.runlog.rows import case_order
from evalsite.runlog.store import CASES_FILE, RunWriter, read_cases
from evalsite.site import build_site
from evalsite.site.casedata import run_data
from evalsite.site.itemindex import input_snippets

MESSAGES = [{"role": "system", "content": "be brief"}, {"role": "user", "content": [{"type": "text", "text": "hi"}]}]


def shown_case(rng: random.Random, item: int) -> dict:
    """A well-formed line whose shown fields take every shape a page handles."""
    case = good_case(rng, item)
    case["item_id"] = rng.choice([f"q{item}", f"q0{item}", f"{item}"])  # "q01" and "q1" tie in natural order
    case["input"] = rng.choice(["What is 2 + 2?", MESSAGES, None, {"question": 2, "x": [1.5, 1e-05]}, "\u00fc" * 900])
    case["output"] = rng.choice(["4", None, "long " * 600, ["a", 3], ""])
    case["finish_reason"] = rng.choice([None, "stop", "length"])
    for name, values in (("cache", ["hit", {"k": 1}, None]), ("turns", [["first", "second"], None]),
                         ("transcript", [MESSAGES + [{"role": "assistant", "content": "yo", "latency_ms": 3}], None]),
                         ("turn_figures", [[{"latency_ms": 2.5, "input_tokens": 3}], None])):
        if rng.random() < 0.3:
            case[name] = rng.choice(values)
    for score in case.get("scores") or []:
        score["detail"] = rng.choice([None, "why", "x" * 3000])
        score["error"] = rng.choice([None, "judge failed\nat line 2", "boom"])
    return case


def shown_run(folder: Path, seed: int) -> Path:
    """A run of such lines as a hand or another tool wrote them: no footer vouches for them."""
    rng = random.Random(seed)
    lines = [json.dumps(case, ensure_ascii=rng.random() < 0.5) for case in shown_cases(rng)]  # \\u escapes included
    return write_lines(folder, lines)


def shown_cases(rng: random.Random) -> list[dict]:
    drawn = [shown_case(rng, rng.randint(0, 25)) for _ in range(rng.randint(5, 70))]
    return list({(case["item_id"], case["repeat"]): case for case in drawn}.values())


def written_run(runs: Path, seed: int) -> Path:
    """A run of such cases as evalsite writes it: its footer's ``cases_sha256`` vouches for every line."""
    writer = RunWriter.create(runs, "arm", {"arm_id": "arm", "dataset": {"path": "data/x.jsonl", "items": 26}})
    for case in shown_cases(random.Random(seed)):
        writer.append_case(case)
    writer.finish({"status": "completed"})
    return writer.directory


@pytest.mark.parametrize("written", [False, True], ids=["checked", "written"])
@pytest.mark.parametrize("seed", range(8))
def test_texts_read_through_duckdb_equal_the_python_readers(tmp_path, seed, written):
    folder = written_run(tmp_path / "runs", seed) if written else shown_run(tmp_path / "run", seed)
    assert as_written(folder, folder / CASES_FILE) == written
    scanned = scan_cases(folder, texts=True)
    assert scanned._cases is None and scanned.texts is not None  # the DuckDB path, not the fallback
    assert summary_text(scanned.columns) == summary_text(read_cases(folder / CASES_FILE))
    cases = read_cases(folder / CASES_FILE)
    python = texts_of_cases(cases)
    for name in ("input", "expected", "output", "cache", "error", "finish_reason", "detail", "score_error"):
        assert getattr(scanned.texts, name) == getattr(python, name), name
    for row, case in enumerate(cases):
        for name in ("transcript", "turns", "turn_figures"):
            assert scanned.texts.whole(row, name) == case.get(name), (row, name)
    columns = scanned.columns
    assert top_errors_of(columns, scanned.texts.error, scanned.texts.score_error) == top_errors(cases)
    assert [cases[row].key for row in natural_order(columns).tolist()] == [c.key for c in sorted(cases, key=case_order)]
    assert input_snippets(columns, scanned.texts) == input_snippets(cases_in_hand(cases).columns, python)
    for redact in (False, True):
        options = {"limit": 500, "redact": redact, "item_pages": True, "part_chars": 2000}
        assert run_data("r", columns, scanned.texts, **options) == run_data("r", cases_in_hand(cases).columns, python, **options)


def test_a_line_duckdb_is_not_trusted_on_gives_the_readers_texts_and_warnings(tmp_path):
    folder = shown_run(tmp_path / "run", 3)
    lines = (folder / CASES_FILE).read_text().splitlines()
    (folder / CASES_FILE).write_text("\n".join([lines[0], '{"item_id": broken', *lines[1:]]) + "\n")
    scanned = scan_cases(folder, texts=True)
    warnings: list[str] = []
    cases = read_cases(folder / CASES_FILE, warnings)
    assert scanned._cases is not None and scanned.warnings == warnings == ["run/cases.jsonl: line 2 is not valid JSON; skipped"]
    assert scanned.texts == texts_of_cases(cases)


def test_a_build_of_runs_evalsite_wrote_makes_no_case_record(tmp_path, monkeypatch):
    project = find_project(run_example(tmp_path / "p", repeat=1))

    def refuse(*args, **kwargs):
        raise AssertionError("the build read a run's cases as records")

    monkeypatch.setattr(case_scan, "read_cases", refuse)
    report = build_site(project)
    assert report.rendered > 0 and not report.warnings
