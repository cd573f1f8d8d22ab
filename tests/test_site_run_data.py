"""A run's data scripts (evalsite.site.casedata.run_data) against the cases written, field by field,
and their parts' string tables and splits against the rules docs/reference/site.md#data-scripts and
the module state: strings numbered by first appearance, case by case; a bucket's next part starts
at the first case after its part's strings passed ``part_chars`` characters."""

from __future__ import annotations

import json
import math
import random
import struct

import numpy as np
import orjson
import pytest
from sitedata import decode
from sitekit import case, write_run

from evalsite.analysis.case_scan import scan_cases
from evalsite.runlog.rows import item_order
from evalsite.site import paths
from evalsite.site.casedata import ITEM_TEXT, SMALLEST_ALIKE, _written_alike, run_data
from evalsite.site.safe_text import display

LIMIT, BUDGET = 40, 60
RUN = "20260101T000000Z-a-0001"


def seeded_cases(seed: int) -> list[dict]:
    """Items asked one to three times, some differently, with long, structured and missing texts,
    errors, critical flags and up to two scores with labels, details and errors."""
    rng = random.Random(seed)
    cases = []
    for n in range(60):
        item = rng.choice([f"q{n}", f"Item {n}", f"{n:03d}"])
        for repeat in range(rng.randrange(1, 4)):
            record = case(
                item,
                repeat=repeat,
                score=rng.choice([1.0, 0.0, None]),
                passed=rng.choice([True, False, None]),
                output=rng.choice(["ok", "x" * rng.randrange(80), None]),
                input=rng.choice(
                    [f"Q{n}", f"Q{n} asked again {repeat}", "long " * 20, [{"role": "user", "content": f"hi {n}"}]]
                ),
                expected=rng.choice([f"E{n}", {"a": n}, None]),
                error=rng.choice([None, None, "boom"]),
                detail=rng.choice([None, "d", "y" * 60]),
            )
            record["scores"] += [
                {
                    "evaluator": "judge",
                    "version": "v",
                    "score": 0.5,
                    "passed": None,
                    "label": rng.choice(["good", None]),
                    "detail": None,
                    "error": rng.choice([None, "oops"]),
                    "skipped": False,
                }
            ] * rng.randrange(2)
            record["critical"] = rng.choice([True, False, None])
            cases.append(record)
    rng.shuffle(cases)
    return cases


@pytest.fixture(params=[1, 2, 3])
def written(tmp_path, request):
    cases = seeded_cases(request.param)
    write_run(tmp_path / "runs", RUN, cases)
    scanned = scan_cases(tmp_path / "runs" / RUN, texts=True)
    data = run_data(
        RUN,
        scanned.columns,
        scanned.texts,
        limit=LIMIT,
        redact=False,
        item_pages=True,
        part_chars=BUDGET,
        item_texts="ds@1",
    )
    parts = {path: _payload(script) for path, script in data.files.items()}
    return cases, data, parts


def _payload(script: bytes):
    text = script.decode()
    return json.loads(text[text.index(",") + 1 : -3])


def _shown(value):
    found = display(value, LIMIT)
    return None if found is None else found.text


def test_every_case_is_in_its_bucket_s_parts_as_written(written):
    cases, data, parts = written
    index = parts[paths.run_data_index(RUN)]
    decoded = []
    for bucket, count in index["parts"].items():
        for n in range(count):
            part = parts[paths.run_data(RUN, bucket, n)]
            decoded += [dict(found, bucket=bucket) for found in decode(part, parts.get(part.get("it")))]
    decoded.sort(key=lambda found: found["ord"])
    ordered = sorted(cases, key=lambda c: (item_order(c["item_id"]), c["repeat"]))
    assert [(c["item_id"], c["repeat"]) for c in decoded] == [(c["item_id"], c["repeat"]) for c in ordered]
    for found, written_case in zip(decoded, ordered):
        assert found["bucket"] == paths.item_bucket(written_case["item_id"])
        assert found["anchor"] == paths.item_anchor(written_case["item_id"])  # "Item 3": an anchor the slug changes
        for field in ("input", "expected", "output"):
            assert found[field] == _shown(written_case[field])
            omitted = display(written_case[field], LIMIT)
            assert found["cut"].get({"input": "in", "expected": "exp", "output": "out"}[field]) == (
                omitted.omitted if omitted and omitted.omitted else None
            )
        assert found["error"] == written_case["error"]
        assert found["critical"] == written_case["critical"]
        status = (
            "errored"
            if written_case["error"]
            else {True: "passed", False: "failed", None: "unscored"}[written_case["passed"]]
        )
        assert found["status"] == status
        assert [(s["evaluator"], s["label"], s["detail"], s["error"]) for s in found["scores"]] == [
            (s["evaluator"], s["label"], _shown(s["detail"]), s["error"]) for s in written_case["scores"]
        ]
    assert data.counts["all"] == len(cases) and data.counts["critical"] == sum(c["critical"] is True for c in cases)


def test_a_part_numbers_its_strings_by_first_appearance_and_splits_past_the_budget(written):
    _, _, parts = written
    index = parts[paths.run_data_index(RUN)]
    split = 0
    for bucket, count in index["parts"].items():
        for n in range(count):
            part = parts[paths.run_data(RUN, bucket, n)]
            strings = part["s"]
            expected: dict[str, None] = {}
            for row in range(len(part["item"])):
                assert row == 0 or sum(map(len, expected)) <= BUDGET, "a case joined a part already past the budget"
                texts = [
                    part["item"][row],
                    *(None if part[key][row] == ITEM_TEXT else part[key][row] for key in ("in", "exp")),
                    *(part[key][row] for key in ("out", "err", "fin", "cache", "tr")),
                    *(i for score in part["sc"][row] for i in score[3:6]),
                    part["anc"][row],
                ]
                expected.update(dict.fromkeys(strings[i] for i in texts if i is not None))
            assert strings == list(expected)
            assert n == count - 1 or sum(map(len, strings)) > BUDGET, "a part closed before it passed the budget"
        split += count - 1
    assert split > 0, "the budget is small enough that some bucket is split"


def test_orjson_is_trusted_only_with_floats_it_writes_as_json_does():
    """The sizes :func:`~evalsite.site.casedata._written_alike` lets orjson write, against the
    standard library's text, over random bit patterns (every exponent) and the edges."""
    rng = random.Random(7)
    edges = [0.0, -0.0, 1e-4, -1e-4, 9.999999999999999e-05, 5e-324, 1e16, 9999999999999998.0, 1.7976931348623157e308,
             0.1, 1 / 3, 123456.789, 1e-05]
    floats = edges + [struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0] for _ in range(50_000)]
    floats += [rng.uniform(-1, 1) * 10.0 ** rng.randint(-8, 20) for _ in range(50_000)]
    trusted = 0
    for value in filter(math.isfinite, floats):
        alike = orjson.dumps(value).decode() == json.dumps(value)
        if _written_alike(np.array([value])):
            assert alike, value
            trusted += 1
        else:
            assert 0 < abs(value) < SMALLEST_ALIKE  # refused only where orjson writes otherwise
    assert trusted > 50_000
    assert not _written_alike(np.array([1.0, math.inf])) and _written_alike(np.array([1.0, math.nan]))


@pytest.mark.parametrize("small", [False, True])
def test_every_part_is_the_standard_library_s_json_of_itself(tmp_path, small):
    """Scores, latencies and costs as orjson writes otherwise (``1e-05``) or alike: each script's
    JSON text is what ``json`` writes of it, whichever writer each field took."""
    tiny = [1e-05, 5e-324, 9.99e-05, 2.5e-07] if small else [0.25, 12.0, 1e16, 0.0001]
    cases = []
    for n in range(40):
        record = case(f"q{n}", score=tiny[n % 4] if n % 3 else 1.0, latency_ms=tiny[(n + 1) % 4] * 1e3 if small else 10.5,
                      cost_usd=tiny[(n + 2) % 4])
        record["scores"][0]["score"] = tiny[(n + 3) % 4]
        cases.append(record)
    write_run(tmp_path / "runs", RUN, cases)
    scanned = scan_cases(tmp_path / "runs" / RUN, texts=True)
    data = run_data(RUN, scanned.columns, scanned.texts, limit=LIMIT, redact=False, item_pages=True, part_chars=BUDGET)
    for path, script in data.files.items():
        text = script.decode()
        text = text[text.index(",") + 1 : -3]
        assert text == json.dumps(json.loads(text), ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c"), path
