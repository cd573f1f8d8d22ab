"""Human review of cases: a stratified sample to rate (``evalsite review export``), the ratings
recorded as the ``human`` evaluator's scores (``evalsite review import``), and the ratings read back.

A rating is one ``review`` line of ``runs/decisions.jsonl`` (:class:`evalsite.runlog.decisions.Rating`):
run, item, repeat, ``pass`` / ``fail`` / ``unsure``, the comment (the line's ``reason``), the reviewer
(``by``) and when (``at``). Runs are never rewritten. A case rated twice by one reviewer keeps the
rating of the later line: the key is (run, item, repeat, reviewer), so importing the same file again
records nothing new, and a changed rating re-imported replaces the earlier one.

The file both ``export`` writes and the site's "download ratings" button gives is JSON Lines, one
case a line: ``run_id``, ``item_id``, ``repeat``, ``rating`` and optionally ``comment``,
``reviewer`` and ``at``. A line whose ``rating`` is ``null`` (an exported case not yet rated) is
skipped and counted.
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalsite.analysis.ci_files import write_atomic
from evalsite.errors import DecisionError, RunLogError
from evalsite.experiment.bounded import json_problem
from evalsite.runlog.decisions import (
    HUMAN,
    REVIEW,
    Decision,
    Rating,
    append_decisions,
    decisions_path,
    excluded_runs,
    read_decisions,
)
from evalsite.runlog.fields import FieldReader
from evalsite.runlog.fingerprint import git_user
from evalsite.runlog.records import Case, RunHeader, Score
from evalsite.runlog.store import CASES_FILE, RUN_FILE, Run, iso, open_run, read_cases, scan_runs, utc_now

if TYPE_CHECKING:
    from evalsite.project import Project

JUDGE_TYPE = "llm_judge"
PASSED, FAILED, NO_VERDICT = "passed", "failed", "no verdict"
#: Characters of an input, expected value or output an exported line keeps.
SNIPPET_CHARS = 2000
#: A rating's key: run, item, repeat, reviewer.
RatingKey = tuple[str, str, int, str]
#: A stratum: the arm and each stratifying evaluator's verdict.
Stratum = tuple[str, tuple[tuple[str, str], ...]]


def judge_names(header: RunHeader) -> list[str]:
    """The run's ``llm_judge`` evaluators, by name."""
    return sorted(name for name, spec in header.evaluators.items() if spec.get("type") == JUDGE_TYPE)


def verdict(scores: Iterable[Score]) -> str:
    """One evaluator's verdict on a case: ``passed`` when every score of it (one per turn with
    ``scope: single_turn``) passed, ``failed`` when one failed, else ``no verdict`` (an error, a
    skip, no pass rule or no score)."""
    found = list(scores)
    if not found or any(s.error or s.skipped or s.passed is None for s in found):
        return NO_VERDICT
    return PASSED if all(s.passed for s in found) else FAILED


# ----------------------------------------------------------------------------- export


def export_sample(project: Project, *, per_stratum: int = 5, seed: int = 0,
                  evaluators: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """Up to ``per_stratum`` cases (seeded) from each stratum: an arm and its judges' verdicts
    (every ``llm_judge`` evaluator's passed / failed / no verdict, or those of ``evaluators``) over
    every readable run that is not excluded. Strata, and the cases in each, are in a fixed order,
    so a seed gives one sample."""
    if per_stratum < 1:
        raise DecisionError(f"review export: --per-stratum must be at least 1, got {per_stratum}")
    runs, _ = scan_runs(project.runs_dir)
    excluded = excluded_runs(project.runs_dir)
    strata: dict[Stratum, list[tuple[Run, Case, dict[str, str]]]] = defaultdict(list)
    for run in runs:
        if run.run_id in excluded:
            continue
        judges = [name for name in evaluators if name in run.header.evaluators] if evaluators else judge_names(run.header)
        for case in read_cases(run.directory / CASES_FILE):
            verdicts = {name: verdict(s for s in case.scores if s.evaluator == name) for name in judges}
            strata[(run.header.arm_id or "", tuple(sorted(verdicts.items())))].append((run, case, verdicts))
    rng = random.Random(seed)
    lines = []
    for key in sorted(strata):
        members = sorted(strata[key], key=lambda m: (m[0].run_id, m[1].item_id, m[1].repeat))
        for run, case, verdicts in sorted(rng.sample(members, min(per_stratum, len(members))),
                                          key=lambda m: (m[0].run_id, m[1].item_id, m[1].repeat)):
            lines.append(_export_line(run, case, verdicts, key))
    return lines


def _export_line(run: Run, case: Case, verdicts: dict[str, str], stratum: Stratum) -> dict[str, Any]:
    judges = {}
    for name, shown in verdicts.items():
        scores = [s for s in case.scores if s.evaluator == name]
        first = scores[0] if scores else None
        judges[name] = {"verdict": shown, "score": first.score if first else None,
                        "label": first.label if first else None,
                        "detail": snippet(first.error or first.detail) if first else None}
    arm, pairs = stratum
    return {
        "run_id": run.run_id, "arm_id": run.header.arm_id, "item_id": case.item_id, "repeat": case.repeat,
        "stratum": ", ".join([f"arm={arm}", *(f"{name}={shown}" for name, shown in pairs)]),
        "input": snippet(case.raw.get("input")), "expected": snippet(case.raw.get("expected")),
        "output": snippet(case.raw.get("output")), "error": case.error, "judges": judges,
        "rating": None, "comment": "",
    }


def snippet(value: Any, limit: int = SNIPPET_CHARS) -> str | None:
    """A value as text (JSON unless a string), cut to ``limit`` characters with the cut said."""
    if value is None:
        return None
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= limit else f"{text[:limit]}… [{len(text) - limit:,} more characters]"


def write_sample(lines: list[dict[str, Any]], out: Path | None) -> str:
    """The sample as JSON Lines, written to ``out`` when given; the text."""
    text = "".join(json.dumps(line, ensure_ascii=False, sort_keys=True) + "\n" for line in lines)
    if out is not None:
        write_atomic(out, text, make_folder=True)
    return text


# ----------------------------------------------------------------------------- import


@dataclass(frozen=True)
class ImportResult:
    """What ``review import`` recorded."""

    recorded: int  # ratings appended to runs/decisions.jsonl
    unchanged: int  # ratings already recorded, the same (a re-import)
    unrated: int  # lines whose rating is null (not rated yet)
    reviewers: list[str]

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class _Line:
    number: int
    run_id: str
    rating: Rating
    comment: str
    reviewer: str
    at: str | None


def import_ratings(project: Project, path: Path, reviewer: str | None = None) -> ImportResult:
    """Check every line of a ratings file, then append the new ratings as ``review`` decisions in
    one write (a bad line records nothing: ``Error:`` names the file, line and field)."""
    shown = str(path)
    if not path.is_file():
        raise DecisionError(f"{shown}: no such ratings file")
    rows = _json_lines(path, shown)
    default = git_user(project.root)
    lines, unrated, runs = [], 0, _RunCases(project)
    for number, data in rows:
        line = _read_line(data, f"{shown}:{number}", number, (reviewer, default), runs)
        if line is None:
            unrated += 1
        else:
            lines.append(line)
    latest = {(li.run_id, li.rating.item_id, li.rating.repeat, li.reviewer): li for li in lines}  # the file's last line wins
    recorded = ratings(project.runs_dir)
    now = iso(utc_now())
    new = [line for key, line in latest.items() if not _same(recorded.get(key), line)]
    append_decisions(decisions_path(project.runs_dir), [_decision(runs.header(line.run_id), line, now) for line in new])
    return ImportResult(len(new), len(latest) - len(new), unrated, sorted({line.reviewer for line in latest.values()}))


def _json_lines(path: Path, shown: str) -> list[tuple[int, Any]]:
    """Every non-blank line of a ratings file, parsed; any line that is not strict, bounded JSON
    (:func:`~evalsite.experiment.bounded.json_problem`) is an error (a ratings file is the user's,
    not a log a crash may have torn)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DecisionError(f"{shown}: cannot be read ({type(exc).__name__}: {exc})") from None
    rows = []
    for number, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            data, problem = json_problem(line, number)  # too deep, a lone surrogate, a key twice: refused
            if problem is not None:
                raise DecisionError(f"{shown}: {problem}")
            rows.append((number, data))
    return rows


class _RunCases:
    """The runs a ratings file names, read once each: header and the (item, repeat) keys of its cases."""

    def __init__(self, project: Project) -> None:
        self.runs_dir = project.runs_dir
        self._headers: dict[str, RunHeader] = {}
        self._keys: dict[str, set[tuple[str, int]]] = {}

    def header(self, run_id: str) -> RunHeader:
        return self._headers[run_id]

    def has(self, run_id: str, item_id: str, repeat: int, where: str) -> None:
        if run_id not in self._headers:
            directory = self.runs_dir / run_id
            if "/" in run_id or run_id.startswith(".") or not (directory / RUN_FILE).is_file():
                raise DecisionError(f"{where}: run_id {run_id!r} is not a run under {self.runs_dir}")
            run = open_run(directory)
            self._headers[run_id] = run.header
            self._keys[run_id] = {(c.item_id, c.repeat) for c in read_cases(directory / CASES_FILE)}
        if (item_id, repeat) not in self._keys[run_id]:
            raise DecisionError(f"{where}: item_id {item_id!r} repeat {repeat}: run {run_id} has no such case")


def _read_line(data: Any, where: str, number: int, reviewers: tuple[str | None, str | None],
               runs: _RunCases) -> _Line | None:
    """One line of a ratings file; None when it is not rated yet. ``reviewers``: ``--reviewer``
    (which overrides the line's own ``reviewer``) and the default (git's user) for lines naming none."""
    try:
        fields = FieldReader(data, where, "a rating")
        run_id = fields.text("run_id", required=True) or ""
        if data.get("rating") is None:
            return None
        rating = Rating.from_json(fields)
        comment = fields.text("comment") or ""
        named = fields.text("reviewer") or None
        at = fields.text("at")
    except RunLogError as exc:
        raise DecisionError(exc.message) from None
    override, default = reviewers
    who = override or named or default
    if not who:
        raise DecisionError(f"{where}: reviewer is missing: pass --reviewer NAME (or set git's user.name)")
    runs.has(run_id, rating.item_id, rating.repeat, where)
    return _Line(number, run_id, rating, comment, who, at)


def _same(recorded: Decision | None, line: _Line) -> bool:
    return recorded is not None and recorded.review == line.rating and recorded.reason == line.comment


def _decision(header: RunHeader, line: _Line, now: str) -> Decision:
    return Decision.about(header, kind=REVIEW, reason=line.comment, at=line.at or now, by=line.reviewer, review=line.rating)


# ----------------------------------------------------------------------------- reading


def ratings(runs_dir: Path) -> dict[RatingKey, Decision]:
    """Every reviewer's latest rating of every case they rated (the later line of the log wins)."""
    lines, _ = read_decisions(decisions_path(runs_dir))
    latest: dict[RatingKey, Decision] = {}
    for entry in lines:
        decision = entry.decision
        if decision.decision == REVIEW and decision.review is not None:
            latest[(decision.run_id, decision.review.item_id, decision.review.repeat, decision.by or "")] = decision
    return latest


def human_scores(runs_dir: Path) -> dict[tuple[str, str, int], list[Decision]]:
    """(run, item, repeat) → the ``human`` evaluator's ratings of that case, one per reviewer."""
    by_case: dict[tuple[str, str, int], list[Decision]] = defaultdict(list)
    for (run_id, item_id, repeat, _), decision in sorted(ratings(runs_dir).items()):
        by_case[(run_id, item_id, repeat)].append(decision)
    return dict(by_case)


__all__ = ["HUMAN", "ImportResult", "export_sample", "human_scores", "import_ratings", "judge_names", "ratings",
           "verdict", "write_sample"]
