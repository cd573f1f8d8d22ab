"""A promptfoo file read by two processes (shared_reading: most runs of results decoded and mapped
by a second one) imports as one process imports it: the same runs byte for byte, the same
warning, or the same one-line error naming the same first culprit in file order."""

from __future__ import annotations

import copy
import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest
from import_support import PROMPTFOO, import_outcome, second_process_dies, two_processes

from evalsite import forked
from evalsite.errors import SourceError
from evalsite.execute.importers import shared_reading
from evalsite.execute.importers.source_records import SourceCase, SourceItem, SourceScore
from evalsite.execute.importers.writer import CasePreparer, SourceImport
from evalsite.project import Project


def _document(source: Path = PROMPTFOO / "results.json", copies: int = 4) -> dict[str, Any]:
    """The fixture with its results ``copies`` times (new test ids), so there are many runs."""
    document = json.loads(source.read_text())
    results = document["results"]["results"]
    document["results"]["results"] = [
        {
            **copy.deepcopy(result),
            "testIdx": result["testIdx"] + n * 1000,
            "vars": {**result["vars"], "id": f"{result['vars'].get('id')}-{n}"},
        }
        for n in range(copies)
        for result in results
    ]
    return document


def _write(tmp_path: Path, document: dict[str, Any] | str, name: str = "results.json") -> Path:
    path = tmp_path / name
    path.write_text(document if isinstance(document, str) else json.dumps(document, indent=2), encoding="utf-8")
    return path


@pytest.fixture
def mapped(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Two processes for any file, runs of ~3 results; the count of results the second one mapped."""
    return two_processes(monkeypatch, 12_000)


def _both(tmp_path: Path, source: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[object, object]:
    shared = import_outcome(tmp_path / "shared", "promptfoo", source)
    with monkeypatch.context() as patch:
        patch.setattr(shared_reading, "MIN_BYTES", 1 << 62)
        alone = import_outcome(tmp_path / "alone", "promptfoo", source)
    return shared, alone


@pytest.mark.parametrize("fixture", ["results.json", "results-repeat.json"])
def test_two_processes_import_what_one_imports(
    tmp_path: Path, mapped: list[int], monkeypatch: pytest.MonkeyPatch, fixture: str
):
    source = _write(tmp_path, _document(PROMPTFOO / fixture))
    shared, alone = _both(tmp_path, source, monkeypatch)
    assert shared == alone and isinstance(shared, tuple)
    cases = sum(len(files["cases.jsonl"].splitlines()) for files in shared[0].values())
    assert cases / 2 < len(mapped) < cases  # most, not all, by the second process


@pytest.mark.parametrize("sent", [0, 3])
def test_a_second_process_killed_midway_leaves_the_rest_to_this_one(
    tmp_path: Path, mapped: list[int], monkeypatch: pytest.MonkeyPatch, sent: int
):
    """The second process dies (as by the out-of-memory killer) after ``sent`` runs' messages: this
    process reads the rest of the document alone, and the import is the one-process import."""
    second_process_dies(monkeypatch, sent)
    source = _write(tmp_path, _document(PROMPTFOO / "results.json"))
    shared, alone = _both(tmp_path, source, monkeypatch)
    assert shared == alone and isinstance(shared, tuple)


@pytest.mark.parametrize("sent", [0, 3])
def test_a_second_process_stuck_midway_is_stopped_and_this_one_reads_on(
    tmp_path: Path, mapped: list[int], monkeypatch: pytest.MonkeyPatch, sent: int
):
    """The second process blocks for good after ``sent`` runs' messages (as on a lock it inherited
    at the fork): this process stops it once it has used no CPU for the stall time, reads the rest
    alone, and the import is the one-process import."""
    original = shared_reading.WorkerShare._send
    messages: list[int] = []
    stopped: list[int] = []

    def send_then_hang(share: shared_reading.WorkerShare, values: list[Any] | None) -> None:
        if len(messages) == sent:
            threading.Event().wait()  # only the second process sends
        messages.append(1)
        original(share, values)

    def stop(child: forked.Child) -> None:
        stopped.append(child.pid)
        stop_child(child)

    stop_child = forked.Child.stop
    monkeypatch.setattr(shared_reading.WorkerShare, "_send", send_then_hang)
    monkeypatch.setattr(forked.Child, "stop", stop)
    monkeypatch.setattr(forked, "STALL_SECONDS", 0.3)
    monkeypatch.setattr(forked, "_POLL_SECONDS", 0.05)
    source = _write(tmp_path, _document(PROMPTFOO / "results.json"))
    shared, alone = _both(tmp_path, source, monkeypatch)
    assert shared == alone and isinstance(shared, tuple)
    assert len(stopped) == 1
    with pytest.raises(ProcessLookupError):
        os.kill(stopped[0], 0)  # stopped and reaped


def _broken(document: dict[str, Any], index: int, change: str) -> dict[str, Any]:
    result = document["results"]["results"][index]
    if change == "no provider":
        result["provider"] = {}
    elif change == "not an object":
        document["results"]["results"][index] = [1]
    elif change == "cost text":
        result["latencyMs"] = 1e300
    elif change == "components":
        result["gradingResult"]["componentResults"] = "x"
    return document


@pytest.mark.parametrize(
    "changes",
    [
        [(40, "no provider")],
        [(41, "no provider"), (90, "components")],
        [(2, "cost text"), (70, "not an object")],
        [(95, "not an object"), (30, "cost text")],
        [(80, "components")],
        [(0, "no provider")],
    ],
)
def test_the_first_bad_result_in_file_order_is_the_error(
    tmp_path: Path, mapped: list[int], monkeypatch: pytest.MonkeyPatch, changes: list[tuple[int, str]]
):
    document = _document()
    for index, change in changes:
        document = _broken(document, index, change)
    shared, alone = _both(tmp_path, _write(tmp_path, document), monkeypatch)
    assert isinstance(shared, str) and shared == alone
    assert f"results.results[{min(index for index, _ in changes)}]" in shared


@pytest.mark.parametrize(
    "edit", ["nan", "long integer", "truncated", "wrong indentation", "bad json", "flat tail", "surrogate"]
)
def test_text_the_runs_cannot_take_reads_as_one_process_reads_it(
    tmp_path: Path, mapped: list[int], monkeypatch: pytest.MonkeyPatch, edit: str
):
    text = json.dumps(_document(), indent=2)
    marker = '"latencyMs": '
    at = [i for i in range(len(text)) if text.startswith(marker, i)]
    middle = at[len(at) // 2] + len(marker)
    end = text.index(",", middle)
    if edit == "nan":
        text = text[:middle] + "NaN" + text[end:]
    elif edit == "long integer":
        text = text[:middle] + "123456789012345678901234567890" + text[end:]
    elif edit == "truncated":
        text = text[: at[-5]]
    elif edit == "bad json":
        text = text[:middle] + "nope" + text[end:]
    elif edit == "surrogate":
        text = text[:middle] + '"\\ud800"' + text[end:]
    elif edit == "wrong indentation":  # an object inside a result closing at the results' indentation
        closing = text.index("\n        }", middle)
        text = text[:closing] + "\n      }" + text[closing + len("\n        }") :]
    elif edit == "flat tail":  # the rest of the results on one line each
        start = text.index("\n      {", middle)
        stop = text.index("\n    ],", start)
        tail = json.loads("[" + text[start:stop] + "]")
        text = text[:start] + "\n" + ",\n".join(json.dumps(result) for result in tail) + text[stop:]
    shared, alone = _both(tmp_path, _write(tmp_path, text), monkeypatch)
    assert shared == alone


_CASES = [
    SourceCase("run", SourceItem(None, {"a": [1, 2.5, None, True]}, "x", 3.0, "k")),
    SourceCase(
        "r\u00e9",
        SourceItem("id", "in\U0001f600", None, None),
        None,
        [{"role": "user", "content": "hi"}],
        {"text": "out", "n": -0.0},
        "boom",
        12.5,
        3,
        4,
        1e-9,
        "stop",
        "2024-01-01T00:00:00Z",
        [
            SourceScore(
                "exact", 1.0, True, "l", "d", None, "promptfoo:equals", {"type": "equals", "value": 1}, 2.0
            ),
            SourceScore("b", None),
        ],
        0.5,
        False,
    ),
    SourceCase("run", SourceItem("x", "y"), scores=[SourceScore("c", 0.25, kind="k", identity={"v": None})]),
]


def test_a_prepared_case_crosses_as_orjson_and_is_added_as_the_case_is(tmp_path: Path):
    """What the second process prepares (CasePreparer), through orjson, makes the same run drafts
    (items, repeats, tallies, spooled lines) as the case added here; the second time a tally is
    known, it is not sent again."""
    import orjson

    (tmp_path / "data").mkdir()
    project, source = Project(tmp_path), tmp_path / "results.json"
    source.write_text("{}")
    here, there = SourceImport(project, source, "promptfoo"), SourceImport(project, source, "promptfoo")
    preparer, sent = CasePreparer(), []
    for case in [*_CASES, *_CASES]:  # again: the second arrival is repeat 1
        here.add_case(case)
        sent.append(orjson.loads(orjson.dumps(preparer.prepared(case))))
        there.add_prepared(sent[-1])
    assert [len(prepared[5]) for prepared in sent] == [0, 2, 1, 0, 0, 0]  # the tallies sent: news only
    for mine, theirs in zip(here.drafts(), there.drafts(), strict=True):
        mine.spool.seek(0)
        theirs.spool.seek(0)
        assert mine.spool.read() == theirs.spool.read()
        assert (mine.key, mine.items, mine.arrivals, mine.cases, mine.repeats) == (
            theirs.key, theirs.items, theirs.arrivals, theirs.cases, theirs.repeats)
        assert repr(mine.evaluators) == repr(theirs.evaluators)
    here.close()
    there.close()


def test_explicit_repeats_are_numbered_and_refused_twice_as_add_case_does(tmp_path: Path):
    """A source's own repeats travel with the prepared case: the same drafts as the case added
    here, and a repeat recorded twice is the same error, after the same item check."""
    import orjson

    (tmp_path / "data").mkdir()
    project, source = Project(tmp_path), tmp_path / "rows.jsonl"
    source.write_text("{}")
    here, there = SourceImport(project, source, "jsonl"), SourceImport(project, source, "jsonl")
    preparer = CasePreparer()
    cases = [SourceCase("run", SourceItem("x", "in"), repeat, scores=[SourceScore("s", 1.0)])
             for repeat in (2, 3, None, None, 5)]  # (by arrival: 0 and 1)
    for case in cases:
        here.add_case(case)
        there.add_prepared(orjson.loads(orjson.dumps(preparer.prepared(case))))
    (mine,), (theirs,) = here.drafts(), there.drafts()
    assert (mine.explicit, mine.arrivals, mine.repeats, mine.cases) == ({("x", 2), ("x", 3), ("x", 5)}, {"x": 2}, 6, 5)
    assert (mine.explicit, mine.arrivals, mine.repeats, mine.cases) == (
        theirs.explicit, theirs.arrivals, theirs.repeats, theirs.cases)
    errors = []
    for bad in (SourceCase("run", SourceItem("x", "in"), 2), SourceCase("run", SourceItem("x", "other"), 2)):
        with pytest.raises(SourceError) as error_here:
            here.add_case(bad)
        with pytest.raises(SourceError) as error_there:
            there.add_prepared(orjson.loads(orjson.dumps(preparer.prepared(bad))))
        errors.append((error_here.value.message, error_there.value.message))
    assert [mine for mine, theirs in errors if mine == theirs] == [  # other inputs: the item's error first
        f"{source}: item 'x' repeat 2 is recorded twice",
        f"{source}: item 'x' is recorded with two different inputs or expected values",
    ]
    here.close()
    there.close()


def test_a_value_neither_0_nor_1_is_news_once_even_when_the_rest_is_known():
    preparer = CasePreparer()
    identity = {"type": "similar", "threshold": 0.8}
    cases = [SourceCase("run", SourceItem(str(n), "in"), scores=[SourceScore("s", value, kind="k", identity=identity)])
             for n, value in enumerate([1.0, 0.0, 0.5, 0.7, None])]
    news = [preparer.prepared(case)[5] for case in cases]
    assert news == [[["s", "k", None, '{"type":"similar","threshold":0.8}', identity, None]], [],
                    [["s", "k", None, None, None, 0.5]], [], []]
