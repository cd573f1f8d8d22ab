"""``grounding``: extracted values checked against the row's source document."""

from __future__ import annotations

import asyncio
import json

from evalsite.scoring.evaluators import CaseView, build_evaluators

INVOICE = "ACME Corp.\nInvoice  No. INV-0042\nDate: 2026-03-01\nTotal due: $1,299.00 (VAT 20%)"


def score(output, row=None, **params):
    (evaluator,) = build_evaluators([{"type": "grounding", **params}])
    view = CaseView(input="", output=output, expected=None, row=row if row is not None else {"source": INVOICE})
    return asyncio.run(evaluator.aevaluate(view))


def test_every_value_found_passes_and_numbers_match_however_written():
    result = score(json.dumps({"vendor": "acme corp.", "invoice": "INV-0042", "total": 1299, "vat": 20.0, "paid": False}))
    assert (result.score, result.passed, result.detail) == (1.0, True, None)  # the boolean is not checked


def test_the_score_is_the_share_found_and_the_detail_names_the_rest():
    result = score(json.dumps({"vendor": "ACME Corp.", "invoice": "INV-0043", "lines": [{"total": 1300}, {"date": "2026-03-01"}]}))
    assert result.score == 2 / 4 and result.passed is False
    assert result.detail == "not in the source: invoice='INV-0043', lines.0.total=1300"


def test_fields_source_and_case_are_params():
    row = {"doc": {"text": "Paid to Beta  GmbH"}}
    output = '```json\n{"payee": "beta gmbh", "note": "invented"}\n```'
    assert score(output, row, source="doc.text", fields=["payee"]).passed is True
    strict = score(output, row, source="doc.text", fields=["payee"], ignore_case=False)
    assert strict.passed is False and strict.detail == "not in the source: payee='beta gmbh'"


def test_what_cannot_be_checked_is_said():
    assert score("not json").detail.startswith("the output is not JSON:")
    assert score("not json").score == 0.0
    assert score('{"paid": true}').skipped is True
    missing = score('{"a": "b"}', {"input": "x"})
    assert missing.error == "the row has no source document at 'source' (params.source) to check against"


def test_the_documented_detail_is_the_one_given():
    from example_support import REPO

    result = score(json.dumps({"vendor": "ACME Corp.", "invoice": "INV-0043", "lines": [{"total": 1300}]}))
    assert f"`{result.detail}`" in (REPO / "docs/reference/evaluators.md").read_text()
