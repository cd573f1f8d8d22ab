"""``SourceImport.add_case`` tallies a case's scores (each evaluator's kind and weight, its distinct
identities, whether every value is 0 or 1) as tallying every score in turn does, though a case
whose scores have identities adds only the tallies that are news (``CasePreparer.news``)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalsite.execute.importers import writer
from evalsite.execute.importers.source_records import SourceCase, SourceItem, SourceScore
from evalsite.execute.importers.writer import SourceImport
from evalsite.project import Project

# identities orjson writes alike but Python finds equal (1, 1.0, True), one with a null and one
# with NaN (keyed by repr), a lone surrogate (orjson refuses it), none
_IDENTITIES = st.sampled_from([None, {"v": 1}, {"v": 1.0}, {"v": True}, {"v": None}, {"v": math.nan},
                               {"v": "\ud800"}, ["a", 2]])
_SCORES = st.lists(st.builds(SourceScore, st.sampled_from(["s", "t"]), st.sampled_from([0.0, 1.0, 0.5, 0.25, None]),
                             kind=st.sampled_from(["k", "j"]), identity=_IDENTITIES,
                             weight=st.sampled_from([None, 1.0, 2.0])), max_size=3)
_CASES = st.builds(SourceCase, st.sampled_from(["a", "b"]), st.builds(SourceItem, st.sampled_from(["x", "y"]),
                                                                     st.just("in")), scores=_SCORES)


def _source(root: Path) -> SourceImport:
    return SourceImport(Project(root), root / "results.json", "promptfoo", "0" * 64)


def _tallied_in_turn(cases: list[SourceCase]) -> dict[str, str]:
    """Each run's tallies made score by score (an identity key per score), as add_case once did."""
    drafts: dict[str, Any] = {}
    for case in cases:
        draft = drafts.setdefault(case.run, writer._RunDraft(case.run, None))  # type: ignore[arg-type]
        for score in case.scores:
            writer._tally(draft, score.evaluator, score.kind, score.weight, writer._identity_key(score.identity),
                          score.identity, score.value)
    return {run: repr(draft.evaluators) for run, draft in drafts.items()}


@pytest.mark.parametrize("kept", [writer.SIGNATURES_KEPT, 1])  # 1: past the signatures kept
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cases=st.lists(_CASES, max_size=12))
def test_add_case_tallies_what_every_score_in_turn_tallies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          kept: int, cases: list[SourceCase]):
    monkeypatch.setattr(writer, "SIGNATURES_KEPT", kept)
    source = _source(tmp_path)
    try:
        for case in cases:
            source.add_case(case)
        assert {draft.key: repr(draft.evaluators) for draft in source.drafts()} == _tallied_in_turn(cases)
    finally:
        source.close()


def test_a_case_whose_scores_a_case_before_had_computes_no_identity_key(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch):
    """Three cases of the same three scorers: their identities are keyed for the first case only."""
    keyed: list[Any] = []
    original = writer._identity_key
    monkeypatch.setattr(writer, "_identity_key", lambda identity: keyed.append(identity) or original(identity))
    identities = [{"type": "equals", "value": "{{expected}}"}, {"type": "contains"}, {"type": "starts-with", "weight": 2}]
    source = _source(tmp_path)
    try:
        for n in range(3):
            source.add_case(SourceCase("a", SourceItem(str(n), "in"), scores=[
                SourceScore(f"s{index}", float(n % 2), kind="k", identity=identity)
                for index, identity in enumerate(identities)]))
        assert keyed == identities
        (draft,) = source.drafts()
        assert {name: list(tally.identities) for name, tally in draft.evaluators.items()} == {
            f"s{index}": [original(identity)] for index, identity in enumerate(identities)}
    finally:
        source.close()


def test_a_preparer_keeps_a_bounded_number_of_case_signatures(monkeypatch: pytest.MonkeyPatch):
    """Cases whose every scorer is their own (an assertion's value per test) are not all remembered."""
    monkeypatch.setattr(writer, "SIGNATURES_KEPT", 5)
    preparer = writer.CasePreparer()
    cases = [SourceCase("a", SourceItem(str(n), "in"), scores=[SourceScore("s", 1.0, kind="k", identity={"v": n})])
             for n in range(20)]
    news = [preparer.prepared(case)[5] for case in cases]
    assert len(preparer._signatures) == 5
    assert all(len(entry) == 1 for entry in news)  # each a new identity: news every time
    assert preparer.prepared(cases[2])[5] == [] and preparer.prepared(cases[12])[5] == []  # known either way
