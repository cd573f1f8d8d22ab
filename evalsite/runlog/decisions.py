"""The decisions log, ``runs/decisions.jsonl``: promotions and exclusions of runs, and human reviews of cases.

A promotion makes a run the baseline of its dataset and arm; an exclusion keeps a run out of
every comparison that picks runs by itself (leaderboards, claims, baselines, the site) until a
later ``include`` line takes it back. A ``review`` line is one reviewer's rating of one case of a
run (:class:`Rating`: pass, fail or unsure, with a comment): the ``human`` evaluator's score of that
case, kept beside the run, never written into it (:mod:`evalsite.analysis.review`).

The file is append-only: each line is one :class:`Decision`, flushed and synced as it is written;
later lines are newer. Reading it is tolerant like reading a run: a torn last line (a crash
mid-append) is ignored, and any other line that is not a well-formed decision becomes a problem
naming the file and line, and is skipped.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalsite.errors import DecisionError, RunLogError
from evalsite.jsonshape import lone_surrogate_in
from evalsite.runlog.fields import FieldReader, shown
from evalsite.runlog.fingerprint import fingerprint_hash
from evalsite.runlog.records import RunHeader
from evalsite.runlog.store import CASES_FILE, RUN_FILE, read_cases, read_header, read_jsonl, repair_torn_tail

if TYPE_CHECKING:
    from evalsite.project import Project

DECISIONS_FILE = "decisions.jsonl"
DECISION_FORMAT_VERSION = 1
PROMOTE, EXCLUDE, INCLUDE, REVIEW = "promote", "exclude", "include", "review"
DECISION_KINDS = (PROMOTE, EXCLUDE, INCLUDE, REVIEW)
PASS, FAIL, UNSURE = "pass", "fail", "unsure"
RATINGS = (PASS, FAIL, UNSURE)
#: The evaluator name human ratings are scores of.
HUMAN = "human"
MAX_REPEAT = 1_000_000


@dataclass(frozen=True)
class Rating:
    """A ``review`` decision's rating of one case of its run (the decision's ``reason`` is the comment)."""

    item_id: str
    repeat: int
    rating: str

    @property
    def passed(self) -> bool | None:
        """The ``human`` evaluator's verdict: True for pass, False for fail, None when unsure."""
        return None if self.rating == UNSURE else self.rating == PASS

    @classmethod
    def from_json(cls, fields: FieldReader) -> Rating:
        rating = fields.text("rating", required=True) or ""
        if rating not in RATINGS:
            raise fields.bad("rating", " or ".join(RATINGS), rating)
        return cls(fields.text("item_id", required=True) or "",
                   fields.integer("repeat", required=True, minimum=0, maximum=MAX_REPEAT) or 0, rating)


@dataclass(frozen=True)
class Decision:
    """One line of ``runs/decisions.jsonl``: a run made the baseline of its dataset and arm
    (``decision`` = ``promote``), kept out of comparisons (``exclude``), taken back (``include``), or
    one of its cases rated by a reviewer (``review``, with ``review`` set and ``by`` the reviewer)."""

    run_id: str
    dataset_id: str | None
    inputs_id: str | None
    arm_id: str | None
    fingerprint_hash: str
    reason: str
    at: str
    by: str | None
    allow_dirty: bool = False
    allow_critical: bool = False
    reference_tier: str | None = None
    decision: str = PROMOTE
    format_version: int = DECISION_FORMAT_VERSION
    review: Rating | None = None

    @classmethod
    def about(cls, header: RunHeader, *, kind: str, reason: str, at: str, by: str | None, allow_dirty: bool = False,
              allow_critical: bool = False, review: Rating | None = None) -> Decision:
        """A decision about the run ``header`` describes, naming its dataset, arm and fingerprint
        (the recorded hash, else the hash of its fingerprint): the one way a decision is made."""
        if kind not in DECISION_KINDS:
            raise ValueError(f"Decision.decision must be one of {', '.join(DECISION_KINDS)}, not {kind!r}")
        if (kind == REVIEW) != (review is not None):
            raise ValueError("Decision.review is set on a review decision, and only on one")
        return cls(
            run_id=header.run_id, dataset_id=header.dataset.dataset_id, inputs_id=header.dataset.inputs_id,
            arm_id=header.arm_id, fingerprint_hash=header.fingerprint_hash or fingerprint_hash(header.fingerprint),
            reason=reason, at=at, by=by, allow_dirty=allow_dirty, allow_critical=allow_critical,
            reference_tier=header.dataset.reference_tier if kind == PROMOTE else None, decision=kind, review=review,
        )

    def to_json(self) -> dict[str, Any]:
        """The decision as its line holds it: ``review`` only on a review."""
        record = asdict(self)
        if record["review"] is None:
            del record["review"]
        return record

    @classmethod
    def from_json(cls, data: Any, where: str) -> Decision:
        """Check one parsed line; :class:`RunLogError` names ``where`` and the bad field."""
        fields = FieldReader(data, where, "a decision")
        version = fields.integer("format_version", minimum=1) or DECISION_FORMAT_VERSION
        if version > DECISION_FORMAT_VERSION:
            raise RunLogError(f"{where}: decision format_version {version} is newer than this evalsite reads; upgrade evalsite")
        kind = fields.text("decision") or PROMOTE
        if kind not in DECISION_KINDS:
            raise RunLogError(f"{where}: decision {kind!r} is not one of {', '.join(DECISION_KINDS)}")
        review = Rating.from_json(fields.inner("review")) if kind == REVIEW else None
        return cls(
            run_id=fields.text("run_id", required=True) or "",
            dataset_id=fields.text("dataset_id"),
            inputs_id=fields.text("inputs_id"),
            arm_id=fields.text("arm_id"),
            fingerprint_hash=fields.text("fingerprint_hash", required=True) or "",
            reason=fields.text("reason", required=True) or "",
            at=fields.text("at", required=True) or "",
            by=fields.text("by"),
            allow_dirty=bool(fields.flag("allow_dirty")),
            allow_critical=bool(fields.flag("allow_critical")),
            reference_tier=fields.text("reference_tier"),
            decision=kind,
            format_version=version,
            review=review,
        )


@dataclass(frozen=True)
class DecisionLine:
    """A decision and the line of ``decisions.jsonl`` it was read from."""

    line: int
    decision: Decision


def decisions_path(runs_dir: Path) -> Path:
    return runs_dir / DECISIONS_FILE


def append_decision(path: Path, decision: Decision) -> None:
    """Append one decision line, flushed and synced; a torn last line is cut first so it never glues on."""
    append_decisions(path, [decision])


def append_decisions(path: Path, decisions: Iterable[Decision]) -> None:
    """Append decision lines in one write, flushed and synced (a review import's ratings). A text
    UTF-8 cannot hold (a lone surrogate: what a command line's bytes that are not UTF-8 decode to,
    ``--reason``, ``--reviewer``) is refused, naming the field, before anything is written."""
    records = [decision.to_json() for decision in decisions]
    for record in records:
        for key, value in record.items():
            if (surrogate := lone_surrogate_in(value)) is not None:
                raise DecisionError(f"{record['decision']} of {record['run_id']} not recorded: {key} {shown(value)} "
                                    f"holds a lone surrogate {surrogate} (bytes that are not UTF-8 text)")
    text = "".join(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n" for record in records)
    path.parent.mkdir(parents=True, exist_ok=True)
    repair_torn_tail(path)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())


def read_decisions(path: Path, shown: str | None = None) -> tuple[list[DecisionLine], list[str]]:
    """Every well-formed decision with its line number, and one problem per bad line (each
    naming ``shown``, the file as the user sees it, and the line)."""
    shown = shown or str(path)
    problems: list[str] = []
    decisions = []
    for number, data in read_jsonl(path, problems, shown):
        try:
            decisions.append(DecisionLine(number, Decision.from_json(data, f"{shown}: line {number}")))
        except RunLogError as exc:
            problems.append(exc.message)
    return decisions, problems


def exclusions(decisions: Iterable[Decision]) -> dict[str, Decision]:
    """Run id → its exclusion, for every run whose latest ``exclude``/``include`` line (in file
    order) is an exclusion."""
    latest: dict[str, Decision] = {}
    for decision in decisions:
        if decision.decision in (EXCLUDE, INCLUDE):
            latest[decision.run_id] = decision
    return {run_id: decision for run_id, decision in latest.items() if decision.decision == EXCLUDE}


def excluded_runs(runs_dir: Path) -> dict[str, Decision]:
    """:func:`exclusions` of ``runs_dir``'s decisions log (unreadable lines are ``validate``'s to report)."""
    lines, _ = read_decisions(decisions_path(runs_dir))
    return exclusions(entry.decision for entry in lines)


def validate_decisions(project: Project) -> list[str]:
    """One message per bad decision: unreadable, its run missing, or its fingerprint no longer matching."""
    path = decisions_path(project.runs_dir)
    where = str(project.relative(path))
    decisions, messages = read_decisions(path, where)
    cases: dict[str, set[tuple[str, int]]] = {}
    for entry in decisions:
        run_id = entry.decision.run_id
        prefix = f"{where}: line {entry.line}: run {run_id}"
        try:
            header = read_header(project.runs_dir / run_id)
        except RunLogError as exc:
            missing = not (project.runs_dir / run_id / RUN_FILE).exists()
            messages.append(f"{prefix} is missing" if missing else f"{prefix}: {exc.message}")
            continue
        now = fingerprint_hash(header.fingerprint)
        if now != entry.decision.fingerprint_hash:
            messages.append(
                f"{prefix}: fingerprint no longer matches the decision "
                f"(decided {entry.decision.fingerprint_hash}, run now {now})"
            )
        rating = entry.decision.review
        if rating is not None:
            if run_id not in cases:
                cases[run_id] = {(c.item_id, c.repeat) for c in read_cases(project.runs_dir / run_id / CASES_FILE)}
            if (rating.item_id, rating.repeat) not in cases[run_id]:
                messages.append(f"{prefix} has no case item {rating.item_id!r} repeat {rating.repeat} (rated by {entry.decision.by})")
    return messages
