"""The experiment matrix's data scripts, joined from per-run texts, are the bytes of the rows the
matrix data format documents (``evalsite.site.matrixdata``), written by ``json.dumps``; a run's
matrix part comes back from the site cache as it was stored, and a damaged entry is computed again.

The reference builds each row from :func:`evalsite.analysis.matrix.comparison_matrix` (one object
per cell) by the documented rules and encodes it with :func:`evalsite.site.casedata.data_script`.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
from matrix_support import make_run, random_runs
from sitekit import case, tree_bytes, write_run

from evalsite.analysis.matrix import comparison_matrix, decide_rows, run_column
from evalsite.project import find_project
from evalsite.site import build, build_site, itemindex, matrixdata, paths
from evalsite.site.casedata import data_script
from evalsite.site.figures import MATRIX_SUFFIX, TEXTS_SUFFIX, RunFigures, SiteCache
from evalsite.site.matrixdata import matrix_part, matrix_scripts

BITS = {"best": 2, "fastest": 4, "cheapest": 8, "fewest_tokens": 16}


def reference_rows(runs) -> list[list]:
    """``[item id, anchor or null, bucket, outputs, cells]`` per row, cells ``[score, passed, tint,
    flags, latency, tokens, cost]``, as the module docstring and static/matrix.js read them."""
    def finite(value):
        return None if value is None or not math.isfinite(value) else value

    def tint(cell):
        if cell.passed is None:
            return matrixdata.TINTS.index("missing")
        return matrixdata.TINTS.index("pass" if cell.passed else "mixed" if cell.score else "fail")

    rows = []
    for row in comparison_matrix(runs).rows:
        cells = []
        for cell in row.cells:
            if cell is None:
                cells.append(None)
                continue
            flags = (1 if cell.outlier and not cell.passed else 0) + sum(
                bit for name, bit in BITS.items() if cell.run_id in getattr(row, name))
            cells.append([cell.score, None if cell.passed is None else int(cell.passed), tint(cell), flags,
                          finite(cell.latency_ms), finite(cell.tokens), finite(cell.cost_usd)])
        anchor = paths.item_anchor(row.item_id)
        rows.append([row.item_id, None if anchor == f"item-{row.item_id}" else anchor, paths.item_bucket(row.item_id),
                     row.outputs, cells])
    return rows


def expected_scripts(name: str, rows: list[list], per_part: int) -> dict[str, bytes]:
    parts = max(1, -(-len(rows) // per_part))
    return {paths.matrix_data(name, n): data_script(paths.matrix_data(name, n), rows[n * per_part:(n + 1) * per_part])
            for n in range(parts)}


def odd_runs():
    """Ids a slug changes (a space, ``<``, non-ASCII), ids in natural order (q2 before q10), an item one run
    lacks, unknown costs and tokens, non-ASCII outputs."""
    ids = ["q10", "q2", "a b", "x<y</script>", "ü-1"]
    first = {item: [(f"Antwort {item} é", 1.0 if n % 2 else 0.5, 10.0 + n, None if n % 3 else 0.25, None if n == 1 else 7)]
             for n, item in enumerate(ids)}
    second = {item: [("Antwort", 0.0 if n % 2 else 1.0, 30.5 - n, 0.125, 9)] for n, item in enumerate(ids[:-1])}
    return [make_run("r1", "one", first), make_run("r2", "two", second)]


@pytest.mark.parametrize("seed", range(16))
def test_the_joined_scripts_are_the_bytes_of_the_documented_rows(seed, monkeypatch):
    runs = odd_runs() if seed == 0 else random_runs(seed)
    monkeypatch.setattr(matrixdata, "MATRIX_PART_ROWS", 3)  # several parts
    parts = [matrix_part(run_column(run)) for run in runs]
    written = matrix_scripts("exp", decide_rows([part.column for part in parts]), parts)
    assert written == expected_scripts("exp", reference_rows(runs), 3)


def test_a_matrix_part_comes_back_from_the_cache_as_it_was_stored(tmp_path):
    cache = SiteCache(tmp_path / "cache")
    figures = RunFigures(5, 0.5, 0.4, 0, None, None, ("0a",))
    for run in odd_runs():
        part = matrix_part(run_column(run))
        cache.put(run.run_id, run.run_id, figures, part)
        found = cache.get(run.run_id, matrix=True)
        assert found is not None and found.figures == figures and found.matrix is not None
        kept = found.matrix
        assert (kept.column.run_id, kept.column.item_ids) == (run.run_id, part.column.item_ids)
        for name in ("score", "passed", "latency_ms", "tokens", "cost_usd", "answers"):
            assert np.array_equal(getattr(kept.column, name), getattr(part.column, name), equal_nan=name != "answers")
        assert (kept.items, kept.heads, kept.tails) == (part.items, part.heads, part.tails)
        assert cache.get(run.run_id, matrix=False).matrix is None  # figures alone never read the matrix part
        (tmp_path / "cache" / f"{run.run_id}{MATRIX_SUFFIX}").write_bytes(b"not a numpy file")
        assert cache.get(run.run_id, matrix=True) is None  # computed again


def test_a_damaged_matrix_entry_is_computed_again_and_the_site_is_unchanged(tmp_path, monkeypatch):
    root = tmp_path / "p"
    items = [f"i{n}" for n in range(6)]
    for run_id, arm, failing in (("20260101T000001Z-a-0001", "a", {"i1"}), ("20260101T000002Z-b-0001", "b", {"i2", "i3"})):
        write_run(root / "runs", run_id, [case(item, passed=item not in failing, score=0.0 if item in failing else 1.0,
                                               output="no" if item in failing else "ok") for item in items], arm=arm)
    project = find_project(root)
    build_site(project)
    for entry in (root / ".evalsite" / "site-cache").glob(f"*{MATRIX_SUFFIX}"):
        entry.write_bytes(entry.read_bytes()[:40])  # cut short, as by a full disk
    write_run(root / "runs", "20260101T000003Z-c-0001", [case(item, output="ok") for item in items], arm="c")
    reads: list[str] = []
    original = build.scan_cases
    monkeypatch.setattr(build, "scan_cases", lambda directory, **options: reads.append(directory.name) or original(directory, **options))
    build_site(project)
    assert len(reads) == 3  # the new run, and the two whose matrix parts could not be read
    shutil.rmtree(root / ".evalsite")
    build_site(project, tmp_path / "fresh")
    assert tree_bytes(root / "site") == tree_bytes(tmp_path / "fresh")


def test_the_runs_of_a_dataset_keep_their_shared_texts_once(tmp_path, monkeypatch):
    """Item ids, row starts and snippets, the same in every run of the dataset, are one cache file,
    read once a build (every run's part gets the same lists); a damaged one is written again."""
    root = tmp_path / "p"
    items = [f"i{n}" for n in range(6)]
    for run_id, arm in (("20260101T000001Z-a-0001", "a"), ("20260101T000002Z-b-0001", "b"), ("20260101T000003Z-c-0001", "c")):
        write_run(root / "runs", run_id, [case(item, output=f"{arm} {item}", input=f"question {item}") for item in items], arm=arm)
    write_run(root / "runs", "20260101T000004Z-d-0001", [case(item, input=f"asked otherwise {item}") for item in items], arm="d")
    project = find_project(root)
    build_site(project)
    folder = root / ".evalsite" / "site-cache"
    assert len(list(folder.glob(f"*{MATRIX_SUFFIX}"))) == 4 and len(list(folder.glob(f"*{TEXTS_SUFFIX}"))) == 2
    cache = SiteCache(folder, root=root)
    parts = [cache.get(entry.name.split(".")[0], matrix=True).matrix for entry in sorted(folder.glob(f"*{MATRIX_SUFFIX}"))]
    assert len({id(part.snippets) for part in parts}) == 2 and len({id(part.items) for part in parts}) == 2
    assert all(part.column.item_ids == tuple(items) for part in parts)
    entry = folder / (next(folder.glob(f"*{MATRIX_SUFFIX}")).name.split(".")[0] + ".json")  # naming a file outside the cache:
    data = json.loads(entry.read_text())
    entry.write_text(json.dumps({**data, "texts": "../" + data["texts"]}))
    shutil.copy(folder / f"{data['texts']}{TEXTS_SUFFIX}", folder.parent)  # a readable file there
    assert SiteCache(folder, root=root).get(entry.name.split(".")[0], matrix=True) is None  # refused, not followed
    entry.write_text(json.dumps(data))
    for entry in folder.glob(f"*{TEXTS_SUFFIX}"):
        entry.write_bytes(entry.read_bytes()[:40])  # cut short, as by a full disk
    write_run(root / "runs", "20260101T000005Z-e-0001", [case(item, input=f"question {item}") for item in items], arm="e")
    reads: list[str] = []
    original = build.scan_cases
    monkeypatch.setattr(build, "scan_cases", lambda directory, **options: reads.append(directory.name) or original(directory, **options))
    build_site(project)
    # the new run, and the first run of each damaged file, which writes it again for the runs after it
    assert sorted(reads) == ["20260101T000001Z-a-0001", "20260101T000004Z-d-0001", "20260101T000005Z-e-0001"]
    reads.clear()
    (root / "runs" / "20260101T000005Z-e-0001" / "end.json").unlink()  # the new run changes: read again, alone
    build_site(project)
    assert reads == ["20260101T000005Z-e-0001"]
    shutil.rmtree(root / "runs" / "20260101T000004Z-d-0001")  # the one run asked otherwise: its texts go with it
    build_site(project)
    assert len(list(folder.glob(f"*{TEXTS_SUFFIX}"))) == 1 and len(list(folder.glob(f"*{MATRIX_SUFFIX}"))) == 4
    shutil.rmtree(root / ".evalsite")
    build_site(project, tmp_path / "fresh")
    assert tree_bytes(root / "site") == tree_bytes(tmp_path / "fresh")


def test_a_run_that_has_recorded_no_case_yet_is_an_empty_column(tmp_path):
    runs = [make_run("r1", "a", {"i1": [("4", 1.0, 10, 0.1, 2)], "i2": [("5", 0.0, 10, 0.1, 2)]}), make_run("r2", "b", {})]
    marks = decide_rows([run_column(run) for run in runs])
    assert marks.item_ids == ("i1", "i2") and marks.present.tolist() == [[True, False], [True, False]]
    assert not marks.divergent.any() and not marks.outlier.any()
    root = tmp_path / "p"
    write_run(root / "runs", "20260101T000001Z-a-0001", [case("i1"), case("i2")], arm="a")
    write_run(root / "runs", "20260101T000002Z-b-0001", [], arm="b", status=None)  # started, nothing written yet
    report = build_site(find_project(root))  # used to stop the whole build: "no item is scored in every run"
    assert (root / "site" / paths.run("20260101T000002Z-b-0001")).is_file() and report.pages > 0


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("redact", [False, True])
def test_the_item_index_joins_columns_of_the_same_items_as_the_union_of_items_would(seed, redact):
    """Columns holding the same items are joined in their own (natural) order from the kept texts:
    the rows the general path writes, which sorts the union of every column's items."""
    items = [f"i{n}" for n in (10, 2, 1, 30, 3)]
    runs = [make_run(f"r{n}", f"arm{n}", {item: [("4", 1.0 if (seed + n + k) % 3 else 0.0, 10, 0.1, 2)] for k, item in enumerate(items)})
            for n in range(1 + seed % 4)]
    parts = [matrix_part(run_column(run), {} if n == 0 else {item: f"input {item} of {n}" for item in items[seed % 3:]})
             for n, run in enumerate(runs)]
    shared = itemindex._rows_of_shared_items(parts, redact=redact)
    assert shared is not None and shared == itemindex._rows(parts, redact=redact)
    texts = matrixdata.SharedTexts()  # equal snippets as one list, as a build holds them
    assert itemindex._rows_of_shared_items([texts.of(part) for part in parts], redact=redact) == shared
    assert itemindex._rows_of_shared_items([*parts, matrix_part(run_column(make_run("x", "x", {"i1": [("4", 1.0, 1, 0.1, 2)]})))],
                                           redact=redact) is None


def test_the_parts_of_runs_of_the_same_items_share_one_copy_of_their_texts():
    shared = matrixdata.SharedTexts()
    cells = {f"i{n}": [("4", 1.0, 10, 0.1, 2)] for n in range(5)}
    first, second = (matrix_part(run_column(make_run(f"r{n}", f"a{n}", cells)), {"i1": "input 1"}) for n in range(2))
    other = matrix_part(run_column(make_run("r2", "a2", cells)), {"i1": "another input"})
    kept = [shared.of(part) for part in (first, second, other)]
    assert kept == [first, second, other]  # the same values
    assert kept[1].items is kept[0].items and kept[1].column.item_ids is kept[0].column.item_ids
    assert kept[1].snippets is kept[0].snippets and kept[2].snippets is not kept[0].snippets
    fewer = matrix_part(run_column(make_run("r3", "a3", dict(list(cells.items())[:3]))))
    assert shared.of(fewer) == fewer


def test_a_part_of_items_another_part_holds_takes_its_row_starts():
    shared = matrixdata.SharedTexts()
    cells = {f"i{n}": [("4", 1.0, 10, 0.1, 2)] for n in range(5)}
    first = shared.of(matrix_part(run_column(make_run("r0", "a0", cells))))
    column = run_column(make_run("r1", "a1", cells))
    assert shared.row_starts(column.item_ids) is first.items
    assert shared.row_starts(run_column(make_run("r2", "a2", dict(list(cells.items())[:3]))).item_ids) is None
    reused = matrix_part(column, None, shared.row_starts(column.item_ids))
    assert reused == matrix_part(column) and reused.items is first.items


@pytest.mark.parametrize("text", ["plain-item-7", 'a "quoted" \\ back\\slash', "tab\tnew\nline\r\x00\x1f\x7f",
                                  "naïve 東京 😀", "line\u2028separator\u2029", "lone \ud800 surrogate", ""])
def test_a_matrix_text_is_written_as_json_dumps_writes_it(text: str) -> None:
    assert matrixdata._text(text) == json.dumps(text, ensure_ascii=False)


SNIPPET_INPUTS = ["short", "x" * itemindex.SNIPPET_CHARS, "y" * (itemindex.SNIPPET_CHARS + 1),
                  "  spaced \t out\n\nlines  " * 20, "naïve 東京 😀 " * 30, "", {"q": "an object"},
                  [{"role": "user", "content": "hi " * 100}], None]


def test_an_input_snippet_is_its_input_as_display_shows_it_on_one_line():
    """Whatever the input (text up to and past the limit, whitespace, an object, a conversation,
    none), the snippet is display()'s text with its whitespace runs made single spaces, and … when cut."""
    from evalsite.analysis.case_columns import case_columns
    from evalsite.analysis.case_texts import texts_of_cases
    from evalsite.runlog.records import Case
    from evalsite.site.safe_text import display

    cases = [Case.from_json({"item_id": f"i{n}", "repeat": 0, "input": value, "output": "o"}, "cases.jsonl")
             for n, value in enumerate(SNIPPET_INPUTS)]
    expected = {}
    for n, value in enumerate(SNIPPET_INPUTS):
        shown = display(value, itemindex.SNIPPET_CHARS)
        if shown is not None:
            expected[f"i{n}"] = " ".join(shown.text.split()) + ("…" if shown.omitted else "")
    assert itemindex.input_snippets(case_columns(cases), texts_of_cases(cases)) == expected


_ROWS_OF_OTHER_ITEMS = """
import numpy as np
from evalsite.analysis.case_columns import case_columns
from evalsite.analysis.matrix import RunColumn, decide_rows
from evalsite.analysis.summary import summarise_run
from evalsite.site.itemindex import _rows
from evalsite.site.matrixdata import matrix_part

def column(run_id, ids):
    n, none = len(ids), np.full(len(ids), np.nan)
    return RunColumn(run_id, tuple(ids), none, none, none, none, none, np.zeros((n, 2), dtype=np.uint64),
                     np.zeros((n, 3), dtype=np.uint64))

columns = [column("a", ["q1", "x", "b2"]), column("b", ["q01", "x", "b02"]), column("c", ["q001", "b2"])]
print(decide_rows(columns).item_ids)
print([row.split(",")[0] for row in _rows([matrix_part(c) for c in columns], redact=False)])
failing = [{"item_id": item_id, "critical": True, "scores": [{"evaluator": "exact", "score": 0.0, "passed": False}]}
           for item_id in ["q1", "x", "q01", "b2", "q001", "b02"]]
print(summarise_run(case_columns(failing)).evaluators["exact"].critical_failures)
"""


def test_rows_of_columns_of_other_items_keep_one_order_whatever_the_hash_seed():
    """Ids of equal natural keys (q1, q01, q001): the matrix's rows and the item index's over
    columns of different items, and a run's critical failures, come first seen first in every
    process (a sorted set of the ids would follow each process's string hashes)."""
    printed = {subprocess.run([sys.executable, "-c", _ROWS_OF_OTHER_ITEMS], env={**os.environ, "PYTHONHASHSEED": str(seed)},
                              capture_output=True, text=True, check=True).stdout for seed in range(8)}
    assert printed == {"('b2', 'b02', 'q1', 'q01', 'q001', 'x')\n['[\"b2\"', '[\"b02\"', '[\"q1\"', '[\"q01\"', '[\"q001\"', '[\"x\"']\n"
                       "('b2', 'b02', 'q1', 'q01', 'q001', 'x')\n"}
