"""The common writer: a reader's cases and run descriptions become ordinary evalsite runs.

A :class:`SourceImport` collects one source file. While the reader streams, each case goes to a
temporary spool file per run (so memory holds only the items' identity rows and a few counters),
and the writer learns each run's items, evaluators and repeats. Only when the whole source has
been read does :func:`write_runs` create run directories, through :class:`evalsite.runlog.store.RunWriter`
like any run, inside a :class:`StagedRuns` folder beside ``runs/`` that is renamed into it only
once every run of the import is whole: a source that fails to parse, or a write that fails midway
(a full disk, a number the summary refuses), leaves nothing in ``runs/``.

What the writer decides, the same for every format:

- the dataset: one identity row ``{id, input, expected}`` per item, in the source's order,
  through :func:`evalsite.experiment.datasets.item_identity` and :func:`~evalsite.experiment.datasets.dataset_id`, so two
  tools' results on the same items get the same ``dataset_id``;
- repeats: numbered by arrival per item when the source has no repeat field;
- evaluator versions: a hash of the source tool and its version, the scorer's identity in the
  source (type, params, templates) and the ``--scorer-file`` hash, so scores from different
  scorers are never comparable;
- a case the source marks as failed scores 0 on every evaluator of its run, with the reason.
"""

from __future__ import annotations

import json
import math
import os
import secrets
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from itertools import accumulate, islice, repeat
from operator import attrgetter
from pathlib import Path
from typing import IO, Any

import orjson

from evalsite import __version__
from evalsite.analysis.case_columns import batch_columns
from evalsite.analysis.summary import summarise_run
from evalsite.errors import ProjectError, RunLogError, SourceError
from evalsite.execute.importers.source_records import ImportOptions, SourceCase, SourceItem, SourceRun, SourceScore
from evalsite.experiment.datasets import Dataset, Item, RowHashes, item_identity, row_hashes
from evalsite.forked import Halving, WorkerLost, forked, halving
from evalsite.project import Project
from evalsite.runlog.builders import (
    DatasetRecord,
    FooterRecord,
    HeaderRecord,
    PlanRecord,
    SourceOutcome,
    imported_case_json,
    score_json,
)
from evalsite.runlog.fingerprint import dataset_identity
from evalsite.runlog.hashing import file_sha256, sha256_json, short_hash
from evalsite.runlog.records import (
    BATCH_CASE_RANGES,
    CASE_TYPES,
    SCORE_RANGES,
    SCORE_TYPES,
    BatchFields,
    Fields,
    fields_hold,
)
from evalsite.runlog.secrets import redact_secrets
from evalsite.runlog.store import RunWriter, iso, lock_is_held, utc_now
from evalsite.runlog.totals import RunTotals

try:
    import fcntl
except ImportError:  # not POSIX: no lock, so the next import removes every staging folder it finds
    fcntl = None  # type: ignore[assignment]

DEFAULT_DATASET_NAME = "imported"
STAGING_MARK = "-importing-"
STAGING_LOCK = ".lock"
_UNKNOWN_ORDER = float("inf")
_ORDER = attrgetter("order")
WRITE_BATCH = 1000  # case lines per write
#: spooled case lines a run's draft holds before it writes them in one call (a write a line cost ~1 µs)
SPOOL_BATCH = 1000
#: the fewest cases the second process's runs must hold for write_runs to start one (a fork of a
#: process holding a large import's items costs ~10-30 ms; its runs take ~25 µs a case to write)
PARALLEL_MIN_CASES = 20_000
#: the fewest items whose hashes are computed in part by a second process (~5 µs an item, against the fork)
PARALLEL_MIN_ITEMS = 20_000
#: the share of a first run's rows this process hashes, the rest by a child (:meth:`_ItemsMemo.items_by_key`):
#: it orders and checks them first, about as long as hashing half of them
HASHED_HERE = 0.25
_STDLIB_MARK = b"J"
#: the most case signatures a CasePreparer remembers (CasePreparer.news): a source's cases share a
#: few (promptfoo's: one per provider and prompt); one whose every case has scorers of its own
#: (an assertion's value written out per test) would otherwise keep one per case, to no gain
SIGNATURES_KEPT = 4096
#: what orjson writes of an identity (_identity_key): only JSON values, the rest refused
_IDENTITY_OPTIONS = orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME


@dataclass
class _ItemSlot:
    row: dict[str, Any]
    order: tuple[float, int]


@dataclass
class _EvaluatorTally:
    kind: str
    weight: float | None = None
    identities: dict[str, object] = field(default_factory=dict)  # by _identity_key: hashed once, at the end
    binary: bool = True  # every value seen is 0 or 1, so a value says pass or fail

    @property
    def variants(self) -> list[str]:
        return sorted({short_hash(identity) for identity in self.identities.values()})


@dataclass
class _RunDraft:
    key: str
    spool: IO[bytes]
    items: dict[str, _ItemSlot] = field(default_factory=dict)
    evaluators: dict[str, _EvaluatorTally] = field(default_factory=dict)
    arrivals: dict[str, int] = field(default_factory=dict)
    explicit: set[tuple[str, int]] = field(default_factory=set)
    cases: int = 0
    repeats: int = 0
    description: SourceRun | None = None
    pending: list[bytes] = field(default_factory=list)  # spooled lines not yet written (_spool)


@dataclass(frozen=True)
class ImportedRun:
    """One run written by an import."""

    run_id: str
    arm_id: str
    experiment: str
    tool: str
    source: str
    status: str
    dataset_id: str
    summary: RunTotals


class SourceImport:
    """One source file being read: the reader adds cases and describes runs; nothing is written yet."""

    def __init__(self, project: Project, path: Path, format_name: str, sha256: str | Callable[[], str] | None = None):
        """``sha256``: the file's, or a function that gives it when first asked (a hash still being
        computed while the file is read); by default computed here."""
        self.project = project
        self.path = Path(path)
        self.label = str(path)
        self.format_name = format_name
        self._sha256 = sha256 or file_sha256(self.path)
        self._other_files: list[dict[str, str]] = []
        self.warnings: list[str] = []
        self._drafts: dict[str, _RunDraft] = {}
        self._preparer = CasePreparer()  # add_case's: the tallies of its cases' scores, news only

    @property
    def sha256(self) -> str:
        if not isinstance(self._sha256, str):
            self._sha256 = self._sha256()
        return self._sha256

    @property
    def files(self) -> list[dict[str, str]]:
        """The files this source was read from, each with its sha256: ``path`` first."""
        return [{"path": self.project.relative(self.path), "sha256": self.sha256}, *self._other_files]

    def warn(self, message: str) -> None:
        self.warnings.append(f"{self.label}: {message}")

    def add_file(self, path: Path) -> None:
        """Record another file this source was read from (lm-eval's samples file)."""
        self._other_files.append({"path": self.project.relative(path), "sha256": file_sha256(path)})

    @property
    def run_keys(self) -> list[str]:
        return list(self._drafts)

    def add_case(self, case: SourceCase) -> None:
        draft = self._drafts.get(case.run) or self._draft(case.run)
        item = case.item
        key, row, order = _item_entry(item)
        self._add_item(draft, item.id, key, row, order)
        repeat = self._repeat(draft, key, case.repeat)
        self._tally_scores(draft, case)
        try:
            body = _spooled_body(key, case)
        except UnicodeEncodeError as exc:  # a "\ud800" escape in the source: no UTF-8 file can hold it
            raise SourceError(f"{self.label}: item {key!r} repeat {repeat} holds a lone surrogate {_surrogate(exc)} "
                              "(not valid Unicode text)") from None
        _spool(draft, repeat, *_cut(body))

    def _tally_scores(self, draft: _RunDraft, case: SourceCase) -> None:
        """The tallies of ``case``'s scores: of a case whose scores have identities, only those that
        are news (:meth:`CasePreparer.news`: most cases' scores are those of a case before them,
        told at once by one orjson text, not an identity key per score); else each score's."""
        scores = case.scores
        if scores and scores[0].identity is not None:
            for tally in self._preparer.news(case.run, scores):
                _tally(draft, *tally)
            return
        for score in scores:
            _tally(draft, score.evaluator, score.kind, score.weight, _identity_key(score.identity), score.identity,
                   score.value)

    def add_prepared(self, prepared: list[Any]) -> None:
        """Add the case :meth:`CasePreparer.prepared` gave ``prepared`` for (in another process, or
        :func:`assembled` for a plain row in this one): the steps of :meth:`add_case` that depend on
        the cases before it, in the same order (the item checked, the repeat numbered or checked,
        the tallies), the rest done there."""
        run, key, row, order, repeat, tallies, body = prepared
        draft = self._add_row(run, key, row, order, repeat, *_cut(body if type(body) is bytes else body.encode()))
        for tally in tallies:
            _tally(draft, *tally)

    def add_block(self, block: PreparedBlock) -> None:
        """Add a block of prepared cases, as :meth:`add_prepared` adds each in turn (the same drafts,
        the same first error), without a message, a list or a decoded body per case: their items
        and repeats in order, then the tallies of the few cases that carry news (only the
        evaluators' tallies read those, once the source is read)."""
        tails = block.lines.splitlines(keepends=True)  # (JSON text holds no raw line break or carriage return)
        heads: Any = repeat(b"[")
        if block.marked:
            heads = [b"["] * len(tails)
            for index in block.marked:
                heads[index] = _STDLIB_MARK + b"["
        nones = repeat(None)
        for run, key, row, order, repeated, head, tail in zip(
                block.runs, block.keys, block.rows, block.orders or nones, block.repeats or nones, heads, tails):
            self._add_row(run, key, row, order, repeated, head, tail)
        for index, tallies in block.news:
            draft = self._drafts[block.runs[index]]
            for tally in tallies:
                _tally(draft, *tally)

    def evaluators(self, key: str) -> list[str]:
        """The evaluators of run ``key``'s scores so far, in the order they first came."""
        return list(self._drafts[key].evaluators)

    def describe(self, key: str, run: SourceRun) -> None:
        self._drafts[key].description = run

    def close(self) -> None:
        """Close the spools and let go of the drafts: called while the import still holds the
        collector paused (:func:`~evalsite.collector.collector_paused`), so their objects (a large
        import's items, rows and tallies) are freed before the collector runs again, not walked by
        its first collection (every object made while it was paused is in its youngest generation:
        ~0.2 s for 200,000 promptfoo cases) and freed after."""
        for draft in self._drafts.values():
            draft.spool.close()
        self._drafts.clear()

    def drafts(self) -> list[_RunDraft]:
        """The runs' drafts, each spool holding every case added (the lines still pending written)."""
        for draft in self._drafts.values():
            _write_pending(draft)
        return list(self._drafts.values())

    def _add_row(self, run: str, key: str | None, row: dict[str, Any], order: float | None, repeated: int | None,
                 head: bytes, tail: bytes) -> _RunDraft:
        """A prepared case's item checked, its repeat numbered or checked and its line spooled
        (``head`` and ``tail``: its body cut where the repeat goes, :func:`_cut`); its draft."""
        item_id: Any = row.get("id")
        item_key = item_id if key is None else key  # (one string for both, as add_case has it)
        draft = self._drafts.get(run) or self._draft(run)
        self._add_item(draft, item_id, item_key, row, order)
        _spool(draft, self._repeat(draft, item_key, repeated), head, tail)
        return draft

    def _draft(self, key: str) -> _RunDraft:
        """Run ``key``'s draft, made when its first case arrives."""
        if key not in self._drafts:
            self._drafts[key] = _RunDraft(key, tempfile.TemporaryFile("w+b"))
        return self._drafts[key]

    def _add_item(self, draft: _RunDraft, item_id: str | None, key: str, row: dict[str, Any],
                  order: float | None) -> None:
        slot = draft.items.get(key)
        if slot is None:
            draft.items[key] = _ItemSlot(row, (_UNKNOWN_ORDER if order is None else order, len(draft.items)))
        elif slot.row != row:
            raise SourceError(
                f"{self.label}: item {item_id!r} is recorded with two different inputs or expected values"
            )
        elif order is not None:  # (without one, the place it came first stays the smaller)
            slot.order = min(slot.order, (order, len(draft.items)))

    def _repeat(self, draft: _RunDraft, key: str, repeat: int | None) -> int:
        """The case's repeat: the source's, or (None) the next number by arrival for its item. A
        number given twice, or given and also reached by arrival, is refused: two cases of one
        (item, repeat) would both be written."""
        explicit = draft.explicit
        if repeat is None:
            repeat = draft.arrivals.get(key, 0)
            draft.arrivals[key] = repeat + 1
            if not explicit or (key, repeat) not in explicit:
                return repeat
            by_arrival = True
        elif (key, repeat) in explicit:
            by_arrival = False
        elif repeat < draft.arrivals.get(key, 0):
            by_arrival = True
        else:
            explicit.add((key, repeat))
            return repeat
        raise SourceError(f"{self.label}: item {key!r} repeat {repeat} is recorded twice" + (
            " (once without a repeat, numbered by arrival: give every case of an item its repeat, or none)"
            if by_arrival else ""))


class CasePreparer:
    """The second process's side of :meth:`SourceImport.add_prepared`: each case as plain JSON
    values (:meth:`prepared`), for a case read from JSON by orjson (no NaN, no integer past 64
    bits, no lone surrogate).

    A score's tally goes along only when it tells the main process something new (the run's first
    score of that evaluator, an identity not sent before, the evaluator's first value other than 0
    or 1): its tallies are the same, without decoding three tallies a case (two thirds of a
    promptfoo message's cost). Safe because every case this process prepares is either sent or,
    when its run's message is not taken (:mod:`~evalsite.execute.importers.shared_reading`),
    added by the main process itself, in its place: what was sent or added before stays known there.
    :meth:`SourceImport.add_case` keeps one of its own for the same filter (:meth:`news`), whose
    news it tallies at once."""

    def __init__(self) -> None:
        self._evaluators: set[tuple[str, str]] = set()
        self._identities: set[tuple[str, str, str]] = set()
        self._not_binary: set[tuple[str, str]] = set()
        self._signatures: set[bytes] = set()  # of cases whose tallies were sent (news)

    def prepared(self, case: SourceCase) -> list[Any]:
        """Its item's key (None when it is the row's id), row and order, its repeat as the source
        gave it (None: numbered by arrival), the news of its tallies and its spooled line but for
        the repeat: the order-independent part of :meth:`SourceImport.add_case`."""
        item = case.item
        key, row, order = _item_entry(item)
        return assembled(case.run, item.id, key, row, order, case.repeat, self.news(case.run, case.scores),
                         _spooled_body(key, case).decode("utf-8"))

    def news(self, run: str, scores: list[SourceScore]) -> list[list[Any]]:
        """The tallies of a case's scores the main process may not know: none, at once, when
        the run, its evaluators and their identities are those of a case seen before (the same
        orjson text, without a null: the same identity keys) and each value is 0 or 1 or seen
        to be neither before."""
        try:
            signature = orjson.dumps([run, [[s.evaluator, s.identity] for s in scores]], default=_refuse,
                                     option=_IDENTITY_OPTIONS)
        except TypeError:
            signature = b"null"
        if signature in self._signatures and all(s.value is None or s.value in (0.0, 1.0)
                                                 or (run, s.evaluator) in self._not_binary for s in scores):
            return []
        if b"null" not in signature and len(self._signatures) < SIGNATURES_KEPT:
            self._signatures.add(signature)
        news = [self._score_news(run, s.evaluator, s.kind, s.weight, s.identity, s.value) for s in scores]
        return [entry for entry in news if entry is not None]

    def news_without_identities(self, run: str, kind: str, scores: list[list[Any]]) -> list[list[Any]]:
        """:meth:`news` of scores of one ``kind`` without an identity or a weight (a plain file's),
        each given as its spooled ``[evaluator, value, ...]``, and the same state kept: such
        scores' signature holds a null, so it is neither known nor remembered and each score is
        judged by itself."""
        if not scores:
            return self.news(run, [])
        news = [self._score_news(run, score[0], kind, None, None, score[1]) for score in scores]
        return [entry for entry in news if entry is not None]

    def _score_news(self, run: str, evaluator: str, kind: str, weight: float | None, identity: Any,
                    value: float | None) -> list[Any] | None:
        """One score's tally when it is news (see :meth:`news`), else None."""
        slot = (run, evaluator)
        identity_key = None if identity is None else _identity_key(identity)
        new_identity = identity_key is not None and (*slot, identity_key) not in self._identities
        new_value = value is not None and value not in (0.0, 1.0) and slot not in self._not_binary
        if not (new_identity or new_value or slot not in self._evaluators):
            return None
        self._evaluators.add(slot)
        if new_identity:
            self._identities.add((*slot, identity_key))  # type: ignore[arg-type]
        if new_value:
            self._not_binary.add(slot)
        return [evaluator, kind, weight, identity_key if new_identity else None, identity if new_identity else None,
                value if new_value else None]


def assembled(run: str, item_id: str | None, key: str, row: dict[str, Any], order: float | None, repeat: int | None,
              news: list[list[Any]], body: bytes | str) -> list[Any]:
    """A prepared case (:meth:`CasePreparer.prepared`) from its parts, as
    :meth:`SourceImport.add_prepared` takes it: made there, or by a reader's own way to the parts
    (the plain format's lane, :mod:`~evalsite.execute.importers.plain_lane`). ``body``: its spooled
    line but for the repeat, as bytes, or as text to cross between processes as JSON."""
    return [run, None if item_id is not None else key, row, order, repeat, news, body]


@dataclass(slots=True)
class PreparedBlock:
    """Prepared cases (:func:`assembled`) in columns, as :meth:`SourceImport.add_block` takes them:
    made by :meth:`of` in one process, sent as its :meth:`columns` (JSON) and :attr:`lines`
    (bytes, never decoded or encoded again), remade by ``PreparedBlock(lines, *columns)``."""

    lines: bytes  # each case's spooled body after its "[" (:func:`_cut`), one a line
    runs: list[str]
    keys: list[str | None]  # None: the item's id
    rows: list[dict[str, Any]]
    orders: list[float | None] | None  # None: no case has an order
    repeats: list[int | None] | None  # None: every repeat numbered by arrival
    news: list[list[Any]]  # [index, tallies] of each case whose tallies are news, in order
    marked: list[int]  # the cases whose lines the standard encoder wrote (_STDLIB_MARK before their "[")

    @classmethod
    def of(cls, prepared: list[list[Any]]) -> PreparedBlock:
        if not prepared:
            return cls(b"", [], [], [], None, None, [], [])
        runs, keys, rows, orders, repeats, news, bodies = map(list, zip(*prepared))
        joined = b"".join(body if type(body) is bytes else body.encode() for body in bodies)
        marked = []
        if joined.startswith(_STDLIB_MARK) or b"\n" + _STDLIB_MARK in joined:  # (as _spooled_batch tells them)
            cuts = [_cut(line) for line in joined.splitlines(keepends=True)]
            marked = [index for index, (head, _) in enumerate(cuts) if head != b"["]
            lines = b"".join(tail for _, tail in cuts)
        else:  # every body "[...]\n": each "[" after a line break or at the start is one to cut
            lines = joined[1:].replace(b"\n[", b"\n")
        return cls(lines, runs, keys, rows, orders if any(order is not None for order in orders) else None,
                   repeats if any(repeated is not None for repeated in repeats) else None,
                   [[index, tallies] for index, tallies in enumerate(news) if tallies], marked)

    def columns(self) -> list[Any]:
        """Everything but :attr:`lines`, as JSON values."""
        return [self.runs, self.keys, self.rows, self.orders, self.repeats, self.news, self.marked]

    def __len__(self) -> int:
        return len(self.runs)


def _item_entry(item: SourceItem) -> tuple[str, dict[str, Any], float | None]:
    """The item's key in its run, its identity row and its place in the source's order."""
    row = item.row()
    return item.id if item.id is not None else item.key or content_key(row), row, item.order


def content_key(row: dict[str, Any]) -> str:
    """The key of an item without an id or a source's own key: its identity row's hash."""
    return f"#{sha256_json(row)}"


def _tally(draft: _RunDraft, evaluator: str, kind: str, weight: float | None, identity_key: str | None,
           identity: Any, value: float | None) -> None:
    """One score's part in its evaluator's tally: the kind and weight of its first score, each
    distinct identity (``identity_key``: :func:`_identity_key`), whether every value is 0 or 1."""
    tally = draft.evaluators.get(evaluator)
    if tally is None:  # (setdefault would build a tally for every score)
        tally = draft.evaluators[evaluator] = _EvaluatorTally(kind, weight)
    if identity_key is not None:
        tally.identities.setdefault(identity_key, identity)
    if value is not None and value not in (0.0, 1.0):
        tally.binary = False


def _identity_key(identity: Any) -> str | None:
    """A key that tells a scorer's identities apart: two identities with the same key have the same
    hash (:func:`~evalsite.runlog.hashing.short_hash`), so one of each key is hashed, at the end.
    orjson's text (three times as fast as ``repr``), unless it holds a null (orjson writes NaN as
    null too) or orjson refuses it: then the ``repr``, behind a mark no JSON text starts with.
    An identity is a JSON value as a reader decoded it (subclasses, dates and dataclasses are
    refused here and keyed by ``repr``; an ``Enum`` would be written as its value)."""
    if identity is None:
        return None
    try:
        text = orjson.dumps(identity, default=_refuse, option=_IDENTITY_OPTIONS)
    except TypeError:
        text = b"null"
    return f"\0{identity!r}" if b"null" in text else text.decode("utf-8")


def _cut(body: bytes) -> tuple[bytes, bytes]:
    """A spooled body (:func:`_spooled_body`) cut after its ``[``, where :func:`_spool` puts the repeat."""
    start = body.index(b"[") + 1
    return body[:start], body[start:]


def _spool(draft: _RunDraft, repeat: int, head: bytes, tail: bytes) -> None:
    """Spool a case's line: its body (:func:`_cut` into ``head`` and ``tail``) with ``repeat`` put
    first; written with the lines before it, :data:`SPOOL_BATCH` at a time."""
    pending = draft.pending
    pending.append(b"%b%d,%b" % (head, repeat, tail))
    if len(pending) >= SPOOL_BATCH:
        _write_pending(draft)
    draft.cases += 1
    if repeat >= draft.repeats:
        draft.repeats = repeat + 1


def _write_pending(draft: _RunDraft) -> None:
    draft.spool.write(b"".join(draft.pending))
    draft.pending.clear()


def _spooled_body(key: str, case: SourceCase) -> bytes:
    """The case as its spooled line holds it, but for the repeat (:func:`_spool` adds it)."""
    return spooled_body([
        key, case.input, case.output, case.error, case.latency_ms, case.input_tokens, case.output_tokens,
        case.cost_usd, case.finish_reason, case.started_at,
        [[s.evaluator, s.value, s.passed, s.label, s.detail, s.error] for s in case.scores],
        case.score, case.passed,
    ])


def spooled_body(record: list[Any]) -> bytes:
    """A spooled line but for the repeat, from its fields in order: the item's key, input, output,
    error, latency_ms, input_tokens, output_tokens, cost_usd, finish_reason, started_at, the scores
    (each ``[evaluator, value, passed, label, detail, error]``), score, passed."""
    return _spooled_line(record, fast=_finite_throughout(record[1]) and _finite_throughout(record[2]))


class StagedRuns:
    """Where an import writes its runs: a hidden folder beside ``runs/`` (the same file system, so
    :meth:`publish` is a rename per run), held under a lock while this process writes.

    Readers never look there (it is not under ``runs/``). A folder left by a killed import is
    removed when the next import starts (its lock was released by the kernel); one another
    import is still writing is left alone."""

    def __init__(self, runs_dir: Path):
        self.runs_dir = runs_dir
        self.prefix = f".{runs_dir.name}{STAGING_MARK}"
        remove_stale_staging(runs_dir)
        runs_dir.parent.mkdir(parents=True, exist_ok=True)
        self.folder = runs_dir.parent / f"{self.prefix}{secrets.token_hex(4)}"
        self.folder.mkdir()
        self._lock = open(self.folder / STAGING_LOCK, "a")
        if fcntl is not None:
            fcntl.flock(self._lock, fcntl.LOCK_EX)

    def __enter__(self) -> StagedRuns:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._lock.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    def publish(self, run_ids: list[str]) -> None:
        """Move every staged run into ``runs/`` (each run a single rename: whole or absent)."""
        try:
            self.runs_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # a file or a dangling link where the folder goes, a read-only project
            reason = "not a folder" if isinstance(exc, FileExistsError) else exc.strerror or str(exc)
            raise ProjectError(f"{self.runs_dir}: {reason}, so the runs cannot go there; nothing was imported") from None
        taken = [run_id for run_id in run_ids if (self.runs_dir / run_id).exists()]
        if taken:
            raise RunLogError(f"{self.runs_dir / taken[0]} already exists; import again")
        for run_id in run_ids:
            os.rename(self.folder / run_id, self.runs_dir / run_id)


def remove_stale_staging(runs_dir: Path) -> None:
    """Remove the staging folders of imports that are no longer running (see :class:`StagedRuns`)."""
    parent = runs_dir.parent
    for folder in parent.glob(f".{runs_dir.name}{STAGING_MARK}*") if parent.is_dir() else ():
        if folder.is_dir() and not folder.is_symlink() and not lock_is_held(folder / STAGING_LOCK):
            shutil.rmtree(folder, ignore_errors=True)


class _ItemsMemo:
    """The items of the last run written from a source: its runs (one per arm) usually share their
    items, whose checks and hashes are then computed once, and so are the dataset's id and
    identity block. Rows count as the same only when they are equal and orjson writes them alike
    (``==`` alone takes ``1`` for ``1.0`` or ``true``, which hash differently; orjson alone writes
    NaN as null). The hashes of :data:`PARALLEL_MIN_ITEMS` items or more are computed in part by a
    second process (:func:`~evalsite.forked.halving`); for the first run's items, started before
    their order and checks are made here (its result used only once the rows have passed them),
    and that process then compares the second share's first run with the first (:func:`_alike`)."""

    def __init__(self, label: str):
        self.label = label
        self.rows: list[dict[str, Any]] = []
        self.items: list[Item] = []
        self._datasets: dict[tuple[str | None, str], tuple[str, dict[str, Any]]] = {}  # for these items
        self._last: tuple[set[str], dict[str, Item]] | None = None  # the last drafts' keys and their items by key
        self._comparing: tuple[str, Halving[dict[str, Any], RowHashes]] | None = None  # (items_by_key's then)

    def items_by_key(self, draft: _RunDraft, then: _RunDraft | None = None) -> dict[str, Item]:
        """The items of ``draft``'s run in the source's order, by key. ``then``: a run the child
        hashing most of new items compares with ``draft``'s (:func:`_alike`) once its share is
        hashed, while this process goes on; :meth:`compared` takes the answer: when alike,
        ``then``'s items are these, found later without a check of their own (the second
        process's first run, compared while a core would otherwise wait)."""
        self.compared()
        if self._last is not None and draft.key in self._last[0]:  # hashed before the write fork
            return self._last[1]
        slots = list(draft.items.values())
        # a first run's items are new: their hashes started at once, most by the child, beside the order and checks
        comparing = None if then is None else partial(_alike, draft, then)
        hashing = None if self.items else self._hashing(slots, HASHED_HERE, comparing)
        try:
            orders = list(map(_ORDER, slots))
            ranks = sorted(range(len(slots)), key=orders.__getitem__)  # (no Python call per item)
            arrived = list(draft.items)
            keys, rows = [arrived[rank] for rank in ranks], [slots[rank].row for rank in ranks]
            if hashing is not None or not _same_rows(rows, self.rows):
                hashing = hashing or self._hashing(slots, 0.5)
                self.rows, self._datasets = rows, {}
                self.items = item_identity(rows, self.label, partial(_ranked, hashing, ranks))
        except BaseException:
            if hashing is not None:
                hashing.cancel()
            raise
        self._last = {draft.key}, dict(zip(keys, self.items))
        if then is not None and hashing is not None:
            self._comparing = then.key, hashing
        return self._last[1]

    def compared(self) -> None:
        """Take the comparison :meth:`items_by_key` left to the hashing child, if any (before the
        write fork: the child is collected here); a run found alike takes the last items."""
        if self._comparing is not None and self._last is not None:
            key, hashing = self._comparing
            self._comparing = None
            if hashing.beside() is True:
                self._last[0].add(key)

    @staticmethod
    def _hashing(slots: list[_ItemSlot], here: float,
                 beside: Callable[[], object] | None = None) -> Halving[dict[str, Any], RowHashes]:
        """The hashes of the slots' rows in their order of arrival: from :data:`PARALLEL_MIN_ITEMS`
        rows on, all but the share ``here`` by a child (which then computes ``beside()``)."""
        rows = [slot.row for slot in slots]
        if len(rows) < PARALLEL_MIN_ITEMS:
            return Halving(row_hashes, rows, len(rows), None, False)
        return halving(row_hashes, rows, beside, int(len(rows) * here))

    def dataset(self, location: str | None, name: str) -> tuple[str, dict[str, Any]]:
        """The last items' ``dataset_id`` and the fingerprint's dataset block, named ``name`` at ``location``."""
        found = self._datasets.get((location, name))
        if found is None:
            identity = dataset_identity(location, Dataset(Path(location or "."), name, self.items))
            found = self._datasets[(location, name)] = (identity["dataset_id"], identity)  # (its dataset_id)
        return found


def _ranked(hashing: Halving[dict[str, Any], RowHashes], ranks: list[int],
            rows: list[dict[str, Any]]) -> list[RowHashes]:
    """The hashes of ``rows`` (each the ``ranks[i]``-th row to arrive) from ``hashing``'s, in order of
    arrival. A row that fails to hash in either share: ``rows`` hashed again here, in order, so the
    first to fail in the source's order raises its error, as in one process."""
    try:
        arrived = hashing.result()
    except Exception:
        return row_hashes(rows)
    return [arrived[rank] for rank in ranks]


def _alike(draft: _RunDraft, then: _RunDraft) -> bool:
    """Whether run ``then``'s items are ``draft``'s as :meth:`_ItemsMemo.items_by_key` would find
    them: the same keys in the same order of arrival, with the same orders, of rows equal and
    written alike (so in the source's order too). False for rows nested too deeply to compare: that
    run is then checked as any other."""
    if list(draft.items) != list(then.items):
        return False
    slots, others = list(draft.items.values()), list(then.items.values())
    try:
        if list(map(_ORDER, slots)) != list(map(_ORDER, others)):
            return False
        rows, other_rows = [slot.row for slot in slots], [slot.row for slot in others]
        return _same_rows(rows, other_rows)
    except RecursionError:
        return False


def _same_rows(first: list[dict[str, Any]], second: list[dict[str, Any]]) -> bool:
    """Whether the rows are equal and orjson writes them alike. The same text is the same values
    (``1``, ``1.0`` and ``true`` are written apart, a key order too) but for a null, which orjson
    also writes for NaN and the infinities: only a text holding one is compared by ``==`` too
    (100,000 promptfoo rows of two runs: ``==`` 0.05 s, the texts 0.10 s)."""
    try:
        text = orjson.dumps(first)
        return text == orjson.dumps(second) and (b"null" not in text or first == second)
    except TypeError:  # a value orjson does not write (an integer past 64 bits): hashed again
        return False


def write_runs(source: SourceImport, runs_dir: Path, batch_id: str, options: ImportOptions) -> list[ImportedRun]:
    """Write every run of ``source`` under ``runs_dir``; call once the reader has finished. With
    several runs and enough cases (:func:`_shares`), the last runs are written by a second process
    (:func:`~evalsite.forked.forked`) while this one writes the first: the same
    code over the same state, so the same files; its error, if any, is raised after this one's. If
    the second process is killed before it answers, this one writes its share too. The items and
    the dataset's identity are made before the fork (the second process's first run compared with
    the first meanwhile, by the child hashing most of the items: :meth:`_ItemsMemo.items_by_key`), so
    both processes start writing at once."""
    described = sorted(((_description(source, draft), draft) for draft in source.drafts()), key=lambda pair: pair[0].arm_id)
    first, rest = _shares(described)
    memo = _ItemsMemo(source.label)

    def write(share: list[tuple[SourceRun, _RunDraft]]) -> list[ImportedRun]:
        return [_write_run(source, draft, run, runs_dir, batch_id, options, memo) for run, draft in share]

    try:
        if rest:  # the items hashed once, before the fork: both shares' runs are usually on the same items
            memo.items_by_key(first[0][1], rest[0][1])
            try:  # made while the hashing child compares the second share's first run with the first
                memo.dataset(first[0][0].dataset_location, options.dataset_name or DEFAULT_DATASET_NAME)
            finally:
                memo.compared()
            for _, draft in rest:  # nothing of a spool left in a buffer both processes would write out
                draft.spool.flush()
        other = forked(partial(write, rest)) if rest else None
        if other is None:
            return write(first + rest)
        try:
            written = write(first)
        except BaseException:
            other.cancel()
            raise
        try:
            return written + other.result()
        except WorkerLost:  # killed before it answered (e.g. out of memory): its share is written here; what it
            return written + write(rest)  # left in the staging folder is never published, and goes with the folder
    except UnicodeEncodeError as exc:  # an item's input, expected value or metadata: hashed as UTF-8
        raise SourceError(f"{source.label}: a row holds a lone surrogate {_surrogate(exc)}, near "
                          f"{exc.object[max(0, exc.start - 30):exc.start + 30]!r} (not valid Unicode text)") from None


def _shares(described: list[tuple[SourceRun, _RunDraft]]) -> tuple[list[tuple[SourceRun, _RunDraft]],
                                                                    list[tuple[SourceRun, _RunDraft]]]:
    """The runs split in two, in order, as evenly by cases as a cut between runs allows; the
    second share is empty when it would hold fewer than :data:`PARALLEL_MIN_CASES` cases (a
    second process would not pay for itself)."""
    before = list(accumulate((draft.cases for _, draft in described), initial=0))  # cases before each cut
    cut = min(range(len(before)), key=lambda at: abs(before[-1] - 2 * before[at]))
    if cut == 0 or before[-1] - before[cut] < PARALLEL_MIN_CASES:
        return described, []
    return described[:cut], described[cut:]


def _surrogate(exc: UnicodeEncodeError) -> str:
    """``\\ud800``: the character no UTF-8 text can hold (a ``"\\ud800"`` escape in JSON decodes to it)."""
    return f"\\u{ord(exc.object[exc.start]):04x}"


def _description(source: SourceImport, draft: _RunDraft) -> SourceRun:
    if draft.description is None:
        raise SourceError(f"{source.label}: cases of run {draft.key!r} arrived without a description of the run")
    return draft.description


def _write_run(source: SourceImport, draft: _RunDraft, run: SourceRun, runs_dir: Path, batch_id: str,
               options: ImportOptions, memo: _ItemsMemo) -> ImportedRun:
    items = memo.items_by_key(draft)
    name = options.dataset_name or DEFAULT_DATASET_NAME
    identifier, identity = memo.dataset(run.dataset_location, name)
    dataset = DatasetRecord(run.dataset_location, identifier, len(items), name=name)
    versions = _evaluator_versions(run, draft, options)
    header = _header(source, draft, run, dataset, identity, versions, batch_id, options)
    writer = RunWriter.create(runs_dir, run.arm_id, header.to_json())
    try:
        # the summary counts each batch of records as written, while the next is built
        summary = summarise_run(batch_columns(_written(writer, draft, items, versions))).totals()
    finally:
        writer.close()
    writer.finish(FooterRecord(run.status, run.ended_at, summary, source=SourceOutcome(run.source_status, run.source_error)).to_json())
    return ImportedRun(writer.run_id, run.arm_id, run.experiment, run.tool, source.label, run.status, identifier, summary)


def _written(writer: RunWriter, draft: _RunDraft, items: dict[str, Item],
             versions: dict[str, str]) -> Iterator[tuple[list[dict[str, Any]], BatchFields | bool]]:
    """The spooled cases of ``draft`` as case records, appended to ``writer`` a batch at a time;
    yields each batch as written (:meth:`~evalsite.runlog.store.RunWriter.append_cases`)."""
    draft.spool.seek(0)
    binary = {name: tally.binary for name, tally in draft.evaluators.items()}
    templates = _templates(versions)
    for lines in iter(lambda: list(islice(draft.spool, WRITE_BATCH)), []):
        spooled = _spooled_batch(lines)
        made = _Made(templates)
        records = _case_records(spooled, items, versions, binary, made)
        yield writer.append_cases(records, _vouched(spooled, records, made))


@dataclass
class _Made:
    """What :func:`_case_records` made of each case and score, as it made it, in order: the fields of
    a case line the summary reads that the line does not take from its spooled case as they are
    (:data:`_MADE_CASE_FIELDS`), and those of each score (:data:`_MADE_SCORE_FIELDS`). Gathered
    while each record is at hand, not read again from every record a field at a time (a column
    read over a batch's records costs ~140 ns a value, the records out of the cache by then)."""

    templates: dict[str, dict[str, Any]]  # each evaluator's score line (:func:`_templates`)
    cases: list[tuple[Any, ...]] = field(default_factory=list)
    scores: list[tuple[Any, ...]] = field(default_factory=list)


def _templates(versions: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Each evaluator's score line (:func:`~evalsite.runlog.builders.score_json`) but for its
    score, verdict, label, detail and error, which :func:`_case_records` sets in a copy."""
    return {name: score_json(name, version, None, None, None, None, None) for name, version in versions.items()}


#: the fields of a spooled case (:func:`_spool`, :func:`_spooled_body`) and of one of its scores, in order
_SPOOLED_FIELDS = ("repeat", "key", "input", "output", "error", "latency_ms", "input_tokens", "output_tokens",
                   "cost_usd", "finish_reason", "started_at", "scores", "score", "passed")
_SPOOLED_SCORE_FIELDS = ("evaluator", "score", "passed", "label", "detail", "error")
#: the fields a case line holds as its spooled case has them; with the source's score and verdict
#: (the line's when the source gives them), what a line takes from its spooled case, with their
#: types (:func:`_vouched`), and a score's
_VERBATIM_FIELDS = ("repeat", "error", "latency_ms", "input_tokens", "output_tokens", "cost_usd", "finish_reason",
                    "started_at")
_TAKEN_CASE_FIELDS = {key: CASE_TYPES[key] for key in (*_VERBATIM_FIELDS, "score", "passed")}
_TAKEN_SCORE_FIELDS = {key: SCORE_TYPES[key] for key in _SPOOLED_SCORE_FIELDS}
#: what :class:`_Made` holds of a case and of a score, in order; the fields no imported case line
#: has; a score's fields that are the same for every score an import writes (score_json's own)
_MADE_CASE_FIELDS = ("item_id", "item_sha", "scores", "score", "passed")
_MADE_SCORE_FIELDS = ("evaluator", "version", "score", "passed", "label", "error")
_ABSENT_CASE_FIELDS = ("scoring_cost_usd", "critical", "emulated", "served_model")
_SCORE_CONSTANTS = {key: value for key, value in score_json("", None, None, None, None, None, None).items()
                    if key not in (*_MADE_SCORE_FIELDS, "detail")}


def _vouched(spooled: list[list[Any]], records: list[dict[str, Any]], made: _Made) -> BatchFields | None:
    """The fields of ``records`` (:func:`_case_records` of ``spooled``, which gathered
    ``made``) when every record is bounded and well typed as made (what
    :func:`~evalsite.runlog.records.checked_fields` would find; tests/test_import_columns.py holds
    it), else None: the writer then checks the records.

    A record takes some fields from its spooled case as they are (:data:`_TAKEN_CASE_FIELDS`, and
    a score's :data:`_TAKEN_SCORE_FIELDS`): those are checked a column at a time over the spooled
    lines. The writer makes the rest, of their types and in their ranges as made: an item's id
    and sha and an evaluator's version are text, ``scores`` a list, a score's other fields
    constants, a failed generation's scores 0 and false with a text detail, a case's verdict a
    boolean (or the source's) and its score the source's or the mean of checked scores."""
    columns = dict(zip(_SPOOLED_FIELDS, zip(*spooled)))
    if not fields_hold(columns.__getitem__, _TAKEN_CASE_FIELDS, BATCH_CASE_RANGES):
        return None
    taken_scores = [score for listed in columns["scores"] for score in listed]
    if taken_scores and not fields_hold(dict(zip(_SPOOLED_SCORE_FIELDS, zip(*taken_scores))).__getitem__,
                                        _TAKEN_SCORE_FIELDS, SCORE_RANGES):
        return None
    nones, count = [None] * len(records), len(made.scores)
    known = {**{key: columns[key] for key in _VERBATIM_FIELDS}, **dict(zip(_MADE_CASE_FIELDS, zip(*made.cases))),
             **dict.fromkeys(_ABSENT_CASE_FIELDS, nones)}
    scores = [score for listed in known["scores"] for score in listed]
    known_scores = {**dict(zip(_MADE_SCORE_FIELDS, zip(*made.scores))),
                    **{key: [value] * count for key, value in _SCORE_CONSTANTS.items()}} if count else {}
    return BatchFields(records, known, Fields(scores, known_scores))


def _spooled_line(record: list[Any], fast: bool) -> bytes:
    """A spooled case as one line: orjson's, or (``fast`` false: a NaN or infinity in the source's
    free JSON, which orjson writes as null; or a value orjson would write otherwise, e.g. an
    integer past 64 bits) the standard encoder's behind a mark, so each is read back by its own
    decoder (orjson reads a long integer as a float) exactly as it was."""
    if fast:
        try:
            return orjson.dumps(record, default=_refuse, option=orjson.OPT_APPEND_NEWLINE)
        except TypeError:
            pass
    return _STDLIB_MARK + (json.dumps(record, ensure_ascii=False, default=str) + "\n").encode("utf-8")


def _finite_throughout(value: Any) -> bool:
    """No NaN or infinity anywhere in ``value`` (a source's input or output: text, as a rule)."""
    if isinstance(value, str) or value is None:
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    try:
        if isinstance(value, dict):
            return all(_finite_throughout(inner) for inner in value.values())
        if isinstance(value, list):
            return all(_finite_throughout(inner) for inner in value)
    except RecursionError:  # nested too deeply to walk: the standard encoder decides, as it always did
        return False
    return True


def _spooled_batch(lines: list[bytes]) -> list[list[Any]]:
    """Spooled lines read back: in one decoding when orjson wrote every one (its lines hold no raw
    line break but their last, so they join into one array), else each by its own decoder."""
    joined = b",".join(lines)
    if joined.startswith(_STDLIB_MARK) or b"\n," + _STDLIB_MARK in joined:
        return [_spooled(line) for line in lines]
    return orjson.loads(b"[" + joined + b"]")  # type: ignore[no-any-return]


def _spooled(line: bytes) -> list[Any]:
    if line.startswith(_STDLIB_MARK):
        return json.loads(line[len(_STDLIB_MARK):])  # type: ignore[no-any-return]
    return orjson.loads(line)  # type: ignore[no-any-return]


def _refuse(value: Any) -> Any:
    raise TypeError(type(value).__name__)


def _evaluator_versions(run: SourceRun, draft: _RunDraft, options: ImportOptions) -> dict[str, str]:
    base = {"tool": run.tool, "tool_version": run.tool_version, "scorer_file": options.scorer_sha256}
    return {
        name: short_hash({**base, "kind": tally.kind, "scorer": run.scorers.get(name),
                          "variants": tally.variants})
        for name, tally in draft.evaluators.items()
    }


def _evaluator_entry(tally: _EvaluatorTally, version: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": tally.kind, "version": version}
    return entry if tally.weight is None else {**entry, "weight": tally.weight}


def _header(source: SourceImport, draft: _RunDraft, run: SourceRun, dataset: DatasetRecord, identity: dict[str, Any],
            versions: dict[str, str], batch_id: str, options: ImportOptions) -> HeaderRecord:
    """The run header; its fingerprint has the fields of a native run's (evalsite.runlog.fingerprint), filled
    from what the source recorded: its environment, not the importing machine's."""
    evaluators = {name: _evaluator_entry(draft.evaluators[name], version) for name, version in versions.items()}
    config_id = short_hash(redact_secrets(run.config), 16)  # as a native run's: over what is written
    fingerprint = {
        "dataset": identity,
        "config": redact_secrets(run.config),
        "config_id": config_id,
        "prompt_hash": short_hash(run.prompt),
        "evaluators": evaluators,
        "target": {"kind": f"import:{run.tool}", "model": run.arm_id},
        "code": run.code,
        "environment": run.environment,
        "seed": None,
        "source": {"tool": run.tool, "version": run.tool_version, "spec": run.spec},
    }
    scorer_file = {"path": options.scorer_file, "sha256": options.scorer_sha256} if options.scorer_sha256 else None
    return HeaderRecord.of(
        batch_id=batch_id, experiment=run.experiment, arm_id=run.arm_id, config=run.config, config_id=config_id,
        dataset=dataset, evaluators=evaluators, fingerprint=fingerprint, started_at=run.started_at,
        plan=PlanRecord(dataset.items, draft.repeats, draft.cases),
        sections={"source": {
            "tool": run.tool,
            "version": run.tool_version,
            "format": source.format_name,
            "path": source.files[0]["path"],
            "sha256": source.sha256,
            "files": source.files,
            "ids": run.ids,
            "status": run.source_status,
            "error": run.source_error,
            "reported": run.reported,
            "scorer_file": scorer_file,
            "imported_at": iso(utc_now()),
            "imported_by": f"evalsite {__version__}",
        }},
    )


def _case_records(spooled: list[list[Any]], items: dict[str, Item], versions: dict[str, str],
                  binary: dict[str, bool], made: _Made) -> list[dict[str, Any]]:
    """Spooled cases' lines, built as plain dicts (:func:`~evalsite.runlog.builders.imported_case_json`);
    ``binary``: each evaluator's :attr:`_EvaluatorTally.binary`. Each case's mean score and
    verdict are gathered in the one pass over its scores; what it made is added to ``made``.
    One loop over the batch, its steps written out: no call per case or score but the record's
    (a call per case and two for its score and verdict were ~5 % of the write's instructions).

    A case's score is the source's, else the mean of its scores with equal weights, as an evalsite
    run with default weights, errored scores left out (an imported score is never skipped). Its
    verdict is false for a failed generation, else the source's, else whether every score that
    passes or fails passes."""
    templates, made_scores, made_cases, records = made.templates, made.scores, made.cases, []
    for (repeated, key, case_input, output, error, latency_ms, input_tokens, output_tokens, cost_usd, finish_reason,
         started_at, spooled_scores, score, passed) in spooled:
        item = items[key]
        scores, values, ruled = [], [], []
        for name, value, verdict, label, detail, score_error in spooled_scores:
            if verdict is None and value is not None and binary[name]:
                verdict = value == 1.0
            scored = templates[name].copy()  # score_json's line, its keys in order (a copy: ~60 % of the literal)
            scored["score"], scored["passed"], scored["label"], scored["detail"], scored["error"] = \
                value, verdict, label, detail, score_error
            scores.append(scored)
            made_scores.append((name, scored["version"], value, verdict, label, score_error))
            if value is not None and score_error is None:
                values.append(value)
            if verdict is not None:
                ruled.append(verdict)
        if error:
            values += _failed_scores(scores, made_scores, versions, error)
            passed = False
        elif passed is None and ruled:
            passed = all(ruled)
        if score is None and values:
            score = sum(values) / len(values)
        item_id, sha, row = item.item_id, item.sha, item.row
        made_cases.append((item_id, sha, scores, score, passed))
        records.append(imported_case_json(
            item_id, sha, repeated, case_input if case_input is not None else row.get("input"), row.get("expected"),
            output, error, latency_ms, input_tokens, output_tokens, cost_usd, finish_reason, scores, score, passed,
            started_at,
        ))
    return records


def _failed_scores(scores: list[dict[str, Any]], made_scores: list[tuple[Any, ...]], versions: dict[str, str],
                   error: str) -> list[float]:
    """A failed generation's scores: 0 and failed on every evaluator of the run it has no score
    of, appended to ``scores`` and ``made_scores``; their values."""
    recorded = {s["evaluator"] for s in scores}
    failed = [name for name in versions if name not in recorded]
    scores += [score_json(name, versions[name], 0.0, False, None, f"generation failed: {error}", None)
               for name in failed]
    made_scores += [(name, versions[name], 0.0, False, None, None) for name in failed]
    return [0.0] * len(failed)
