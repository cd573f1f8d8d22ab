"""A block of prepared cases (PreparedBlock: the plain format's rows as the second process sends a
run of them) added at once makes exactly what adding each prepared case in turn makes: the same
drafts (spooled bytes, items, repeats, tallies) or the same first error, wherever in the block the
failing case sits; and it crosses between processes as its JSON columns and raw bytes unchanged."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalsite.errors import SourceError
from evalsite.execute.importers.source_records import SourceCase, SourceItem, SourceScore
from evalsite.execute.importers.writer import CasePreparer, PreparedBlock, SourceImport, spooled_body
from evalsite.project import Project

_SCORES = st.lists(st.builds(SourceScore, st.sampled_from(["s", "t"]), st.sampled_from([0.0, 1.0, 0.5, None]),
                             kind=st.just("k")), max_size=2)
_CASES = st.builds(
    SourceCase,
    st.sampled_from(["a", "b"]),
    st.builds(SourceItem, st.sampled_from(["x", "y", None]), st.sampled_from(["in", "other"]),
              order=st.sampled_from([None, None, 2.0, 1.0])),
    st.one_of(st.none(), st.none(), st.integers(0, 2)),  # explicit repeats: some recorded twice
    output=st.sampled_from(["out", "line\nbreak\r", math.nan, None]),  # NaN: a line the standard encoder writes
    scores=_SCORES,
)


def _outcome(source: SourceImport, add: Any) -> tuple[object, ...]:
    """The first error's message, or the drafts as they stand (every spooled line written)."""
    try:
        add()
    except SourceError as exc:
        return (exc.message,)
    return tuple((draft.key, draft.spool.seek(0) or draft.spool.read(), draft.items, draft.arrivals, draft.explicit,
                  draft.cases, draft.repeats, repr(draft.evaluators)) for draft in source.drafts())


def _sent(block: PreparedBlock) -> PreparedBlock:
    """The block as the main process remakes it from a message."""
    return PreparedBlock(bytes(block.lines), *orjson.loads(orjson.dumps(block.columns())))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_CASES, max_size=12), st.integers(0, 3), st.integers(0, 12))
def test_a_block_adds_what_its_cases_add_one_at_a_time(tmp_path_factory: Any, cases: list[SourceCase], lane: int,
                                                        cut: int):
    """Cases before ``cut`` added one at a time, the rest as one block (and, every ``lane``-th
    case, its body as the plain lane gives it, bytes): the same as each added in turn."""
    tmp = tmp_path_factory.mktemp("blocks")
    project, path = Project(tmp), tmp / "rows.jsonl"
    one, block = SourceImport(project, path, "jsonl", "0" * 64), SourceImport(project, path, "jsonl", "0" * 64)
    preparer = CasePreparer()
    prepared = [orjson.loads(orjson.dumps(preparer.prepared(case))) for case in cases]
    for index, entry in enumerate(prepared):
        if lane and index % lane == 0:
            entry[-1] = entry[-1].encode()

    def each() -> None:
        for entry in prepared:
            one.add_prepared(entry)

    def blocks() -> None:
        for entry in prepared[:cut]:
            block.add_prepared(entry)
        block.add_block(_sent(PreparedBlock.of(prepared[cut:])))

    try:
        assert _outcome(block, blocks) == _outcome(one, each)
    finally:
        one.close()
        block.close()


def test_a_block_cuts_its_bodies_after_their_bracket_and_sends_only_the_news():
    """The block's columns: the item key only when it is not the id, orders and repeats only when
    some case has one, the tallies of the cases with news, the lines the standard encoder wrote."""
    preparer = CasePreparer()
    cases = [SourceCase("a", SourceItem("x", "in"), scores=[SourceScore("s", 1.0, kind="k")]),
             SourceCase("a", SourceItem(None, "in"), output=math.nan, scores=[SourceScore("s", 0.0, kind="k")]),
             SourceCase("b", SourceItem("x", "in"), scores=[SourceScore("s", 1.0, kind="k")])]
    block = PreparedBlock.of([preparer.prepared(case) for case in cases])
    assert (block.runs, block.keys[0], block.keys[1].startswith("#"), block.orders, block.repeats) == (
        ["a", "a", "b"], None, True, None, None)
    assert block.news == [[0, [["s", "k", None, None, None, None]]], [2, [["s", "k", None, None, None, None]]]]
    assert block.marked == [1]
    bodies = [spooled_body([key, None, output, *[None] * 7, [[name, value, None, None, None, None]], None, None])
              for key, output, name, value in (("x", None, "s", 1.0), (block.keys[1], math.nan, "s", 0.0),
                                               ("x", None, "s", 1.0))]
    assert block.lines == b"".join(body[body.index(b"[") + 1:] for body in bodies)
    assert len(PreparedBlock.of([])) == 0


def test_an_empty_run_of_blank_lines_is_an_empty_block(tmp_path: Path):
    project, path = Project(tmp_path), tmp_path / "rows.jsonl"
    source = SourceImport(project, path, "jsonl", "0" * 64)
    source.add_block(_sent(PreparedBlock.of([])))
    assert source.drafts() == []
