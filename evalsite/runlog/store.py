"""The on-disk run format: the contract every other part reads.

``runs/<run_id>/run.json`` (header, written once atomically before the first case),
``cases.jsonl`` (append-only, one finished case per line, flushed per line) and ``end.json``
(footer, written atomically when the run stops). No ``end.json`` means interrupted. Resuming a
stopped or interrupted run first appends the footer it had to ``attempts.jsonl``, so the run's
history stays on disk, then appends new cases; the final footer replaces ``end.json``.

A process writing a run holds an exclusive lock on the run's ``.lock`` file (released by the
kernel if the process dies), so a second process can neither resume a run that is still being
written nor append to it.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evalsite.errors import RunLogError
from evalsite.runlog.records import RunStatus

try:
    import fcntl
except ImportError:  # not POSIX: runs are written without the cross-process lock
    fcntl = None

FORMAT_VERSION = 1
RUN_FILE, CASES_FILE, END_FILE = "run.json", "cases.jsonl", "end.json"
ATTEMPTS_FILE, LOCK_FILE = "attempts.jsonl", ".lock"
CASE_FIELDS = (
    "item_id", "item_sha", "repeat", "input", "expected", "output", "error", "latency_ms",
    "input_tokens", "output_tokens", "cost_usd", "finish_reason", "scores", "score", "passed",
    "started_at", "critical",
)
OPTIONAL_CASE_FIELDS = ("attempts", "transcript", "turn_outputs", "scoring_cost_usd")


def utc_now() -> datetime:
    return datetime.now(UTC)


def iso(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-.")[:40] or "run"


def new_run_id(arm_id: str, moment: datetime | None = None) -> str:
    moment = moment or utc_now()
    return f"{moment.strftime('%Y%m%dT%H%M%SZ')}-{slug(arm_id)}-{secrets.token_hex(2)}"


def write_json_atomic(path: Path, data: Any) -> None:
    """Write through a temp file and rename, so readers see the whole file or none of it."""
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(temp, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=2, sort_keys=True, ensure_ascii=False, default=str)
        handle.write("\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temp, path)


class RunWriter:
    """Creates or reopens a run directory, holds its lock and appends to it; never rewrites a case."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.run_id = directory.name
        self._lock = None
        self._cases = None

    @classmethod
    def create(cls, runs_dir: Path, arm_id: str, header: dict) -> RunWriter:
        runs_dir.mkdir(parents=True, exist_ok=True)
        while True:
            writer = cls(runs_dir / new_run_id(arm_id))
            try:
                writer.directory.mkdir()
                break
            except FileExistsError:  # another process took this id in the same second
                continue
        writer._acquire()
        write_json_atomic(writer.directory / RUN_FILE, {"format_version": FORMAT_VERSION, "run_id": writer.run_id, **header})
        writer._open()
        return writer

    @classmethod
    def reopen(cls, directory: Path, attempt: dict) -> RunWriter:
        """Reopen a stopped or interrupted run for appending.

        Refuses a completed run and one another process is writing. The footer the run had
        (or ``interrupted``) goes to ``attempts.jsonl`` with ``attempt``; a torn last line of
        ``cases.jsonl`` is cut.
        """
        writer = cls(Path(directory))
        writer._acquire()
        try:
            previous = read_end(writer.directory)
            if previous and previous.get("status") == RunStatus.COMPLETED:
                raise RunLogError(f"run {writer.run_id} is completed; there is nothing to resume")
            record = {**attempt, "previous": previous or {"status": RunStatus.INTERRUPTED}}
            with open(writer.directory / ATTEMPTS_FILE, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
            (writer.directory / END_FILE).unlink(missing_ok=True)
            repair_torn_tail(writer.directory / CASES_FILE)
        except BaseException:
            writer.close()
            raise
        writer._open()
        return writer

    def _acquire(self) -> None:
        self._lock = open(self.directory / LOCK_FILE, "a")
        if fcntl is None:
            return
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock.close()
            self._lock = None
            raise RunLogError(f"run {self.run_id} is being written by another evalsite process") from None

    def _open(self) -> None:
        self._cases = open(self.directory / CASES_FILE, "a", encoding="utf-8")

    def append_case(self, case: dict) -> None:
        self._cases.write(json.dumps(case, ensure_ascii=False, default=str) + "\n")
        self._cases.flush()

    def finish(self, footer: dict) -> None:
        """Write the footer, then remove the lock file while still holding it: a finished run
        folder holds only its records."""
        self._cases.close()
        write_json_atomic(self.directory / END_FILE, footer)
        if self._lock is not None:
            (self.directory / LOCK_FILE).unlink(missing_ok=True)
        self.close()

    def close(self) -> None:
        """Close the case file and release the lock (idempotent)."""
        if self._cases is not None and not self._cases.closed:
            self._cases.close()
        if self._lock is not None:
            self._lock.close()
            self._lock = None


def run_is_active(directory: Path) -> bool:
    """True while some process holds the run's lock (it is being written right now)."""
    path = Path(directory) / LOCK_FILE
    if fcntl is None or not path.exists():
        return False
    with open(path, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
    return False


def read_attempts(directory: Path) -> list[dict]:
    """Earlier stops of a resumed run, oldest first (see :meth:`RunWriter.reopen`)."""
    return read_cases(Path(directory) / ATTEMPTS_FILE)


def repair_torn_tail(path: Path) -> None:
    """Cut a last line that a crash left without its newline (it never became a case)."""
    if not path.exists():
        return
    with open(path, "rb+") as handle:
        data = handle.read()
        if data and not data.endswith(b"\n"):
            handle.truncate(data.rfind(b"\n") + 1)


@dataclass
class Run:
    directory: Path
    header: dict
    cases: list[dict]
    end: dict | None
    warnings: list[str] = field(default_factory=list)

    @property
    def run_id(self) -> str:
        return self.header["run_id"]

    @property
    def status(self) -> RunStatus:
        return footer_status(self.end, self.directory)


def read_header(directory: Path) -> dict:
    path = Path(directory) / RUN_FILE
    try:
        header = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RunLogError(f"{path.parent.name}: not a run (no {RUN_FILE})") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise RunLogError(f"{path.parent.name}: unreadable {RUN_FILE}: {exc}") from None
    if not isinstance(header, dict) or "run_id" not in header:
        raise RunLogError(f"{path.parent.name}: {RUN_FILE} has no run_id")
    version = header.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise RunLogError(
            f"{path.parent.name}: run format_version {version!r} is newer than this evalsite reads "
            f"({FORMAT_VERSION}); upgrade evalsite"
        )
    return header


def read_cases(path: Path, warnings: list[str] | None = None) -> list[dict]:
    """Read ``cases.jsonl``, ignoring a torn last line and reporting any other bad line."""
    cases = []
    if not path.exists():
        return cases
    lines = path.read_text(encoding="utf-8", errors="replace").split("\n")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            cases.append(json.loads(line))
        except json.JSONDecodeError:
            torn_tail = number == len(lines)
            if warnings is not None and not torn_tail:
                warnings.append(f"{path}: line {number} is not valid JSON; skipped")
    return cases


def read_end(directory: Path) -> dict | None:
    path = Path(directory) / END_FILE
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise RunLogError(f"{Path(directory).name}: unreadable {END_FILE}: {exc}") from None


def footer_status(end: dict | None, directory: Path) -> RunStatus:
    """The one status rule: the footer's, else running (lock held) or interrupted.

    A footer naming no known status makes the run unreadable (:class:`RunLogError`)."""
    if end is None:
        return RunStatus.RUNNING if run_is_active(directory) else RunStatus.INTERRUPTED
    try:
        return RunStatus(end.get("status"))
    except ValueError:
        raise RunLogError(f"{Path(directory).name}: {END_FILE} has an unknown status {end.get('status')!r}") from None


def run_status(directory: Path) -> RunStatus:
    """The status of the run in ``directory`` (its footer read once)."""
    return footer_status(read_end(directory), directory)


def read_run(path: str | Path) -> Run:
    """Read a whole run directory. Raises :class:`RunLogError` for an unreadable header."""
    directory = Path(path)
    header = read_header(directory)
    warnings: list[str] = []
    cases = read_cases(directory / CASES_FILE, warnings)
    return Run(directory, header, cases, read_end(directory), warnings)


def run_directories(runs_dir: Path) -> list[Path]:
    """Every folder under ``runs/`` that has a ``run.json``, oldest first (ids sort by time)."""
    if not runs_dir.is_dir():
        return []
    return sorted(p for p in runs_dir.iterdir() if p.is_dir() and (p / RUN_FILE).exists())


LATEST = "@latest"


def resolve_run(runs_dir: Path, reference: str) -> Path:
    """A run id, a unique prefix of one, a run directory's path, or ``ARM@latest`` (``@latest``:
    any arm) for the newest run by its recorded start."""
    as_path = Path(reference)
    if (as_path / RUN_FILE).exists():
        return as_path
    if reference.endswith(LATEST):
        return _latest_run(runs_dir, reference.removesuffix(LATEST))
    matches = [p for p in run_directories(runs_dir) if p.name.startswith(reference)]
    if not matches:
        raise RunLogError(f"no run matches {reference!r} under {runs_dir}")
    if len(matches) > 1:
        names = ", ".join(p.name for p in matches[:5])
        raise RunLogError(f"{reference!r} matches {len(matches)} runs ({names}); give more of the id")
    return matches[0]


def _latest_run(runs_dir: Path, arm_id: str) -> Path:
    newest: tuple[str, str, Path] | None = None
    for directory in run_directories(runs_dir):
        try:
            header = read_header(directory)
        except RunLogError:
            continue
        if arm_id and header.get("arm_id") != arm_id:
            continue
        key = (str(header.get("started_at") or ""), directory.name, directory)
        newest = key if newest is None or key[:2] > newest[:2] else newest
    if newest is None:
        which = f"of arm {arm_id!r} " if arm_id else ""
        raise RunLogError(f"no run {which}under {runs_dir}")
    return newest[2]
