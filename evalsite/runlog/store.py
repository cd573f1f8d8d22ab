"""The on-disk run format: the contract every other part reads.

``runs/<run_id>/run.json`` (header, written once atomically before the first case),
``cases.jsonl`` (append-only, one finished case per line) and ``end.json`` (footer, written
atomically when the run stops). No ``end.json`` means interrupted. Resuming a
stopped or interrupted run first appends the footer it had to ``attempts.jsonl``, so the run's
history stays on disk, then appends new cases; the final footer replaces ``end.json``.

Durability (docs/reference/run-format.md#durability): each finished case reaches the operating
system in one ``write`` as it ends, so killing the process loses no finished case; the file is
made durable on disk (``fsync``) by :meth:`RunWriter.sync`, which the runner calls before it
schedules a run's next batch of cases, and always before the footer is written.

A process writing a run holds an exclusive lock on the run's ``.lock`` file (released by the
kernel if the process dies), so a second process can neither resume a run that is still being
written nor append to it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import operator
import os
import re
import secrets
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

import orjson

from evalsite.errors import RunLogError
from evalsite.jsonshape import as_text, as_unicode, escaped_lone_surrogate
from evalsite.runlog.digests import kept_sha256
from evalsite.runlog.records import (
    FORMAT_VERSION,
    BatchFields,
    Case,
    Footer,
    RunHeader,
    RunStatus,
    bounded_case,
    checked_fields,
    well_typed_case,
    without_long_integers,
)
from evalsite.runlog.secrets import redact_header

try:
    import fcntl
except ImportError:  # not POSIX: runs are written without the cross-process lock
    fcntl = None  # type: ignore[assignment]

RUN_FILE, CASES_FILE, END_FILE = "run.json", "cases.jsonl", "end.json"
#: end.json's record that every line of cases.jsonl was a well-typed case when the run stopped: the
#: file's sha256 then (absent when some line was not, or for runs written before it existed)
CASES_SHA256 = "cases_sha256"
ATTEMPTS_FILE, LOCK_FILE = "attempts.jsonl", ".lock"
CASE_FIELDS = (
    "item_id", "item_sha", "repeat", "input", "expected", "output", "error", "latency_ms",
    "input_tokens", "output_tokens", "cost_usd", "finish_reason", "scores", "score", "passed",
    "started_at", "critical",
)
OPTIONAL_CASE_FIELDS = ("attempts", "transcript", "turn_outputs", "scoring_cost_usd")
#: records appended one at a time whose types and keys are checked together (:func:`checked_fields`):
#: a field at a time over a batch costs a third of checking each record as it comes
CHECK_BATCH = 1024
_CASE_LINE = json.JSONEncoder(ensure_ascii=False, default=as_text)  # json.dumps(case, ensure_ascii=False, default=as_text)
#: orjson writes a case line ~10x faster; every value it would write otherwise than the stdlib
#: encoder above (a subclass of str/int/dict/list, a dataclass, a datetime, an integer past 64 bits,
#: a key that is not text, any type it does not know) is handed to ``_refuse``, and the whole line
#: is then written by ``_CASE_LINE`` (docs/reference/run-format.md#case-lines)
_FAST = orjson.OPT_APPEND_NEWLINE | orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATACLASS \
    | orjson.OPT_PASSTHROUGH_DATETIME


def _refuse(value: Any) -> Any:
    raise TypeError(type(value).__name__)


def case_line(case: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
    """The record as written (``case``, or a copy without integers too long for JSON text) and
    its line: UTF-8 JSON, one object, ending in a newline."""
    try:
        return case, orjson.dumps(case, default=_refuse, option=_FAST)
    except TypeError:  # orjson.JSONEncodeError: a value the stdlib encoder writes as it always has
        pass
    try:
        text = _CASE_LINE.encode(case)
    except ValueError:  # an integer past Python's 4,300 digits somewhere in the record
        case = without_long_integers(case)
        text = _CASE_LINE.encode(case)
    try:
        return case, (text + "\n").encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: U+FFFD in its place (docs/reference/run-format.md#case-lines)
        case = as_unicode(case)
        return case, (_CASE_LINE.encode(case) + "\n").encode("utf-8")


def _fast_lines(cases: list[dict[str, Any]]) -> list[bytes] | None:
    """Each record's line as :func:`case_line` writes it when orjson takes every record of
    ``cases`` as it is; None when some record needs :func:`case_line` itself."""
    try:
        return [orjson.dumps(case, default=_refuse, option=_FAST) for case in cases]
    except TypeError:  # orjson.JSONEncodeError
        return None


def cases_as_written(cases: Path, recorded: Any) -> bool:
    """Whether ``recorded`` (a footer's :data:`CASES_SHA256`) is the sha256 of the file ``cases``
    as it is now (kept between processes: :func:`~evalsite.runlog.digests.kept_sha256`): then every
    line is a well-typed case with a key of its own, exactly as the writer wrote it, and the
    footer's totals are the summary of those cases."""
    if not isinstance(recorded, str):
        return False
    try:
        return recorded == kept_sha256(cases)
    except OSError:
        return False


def utc_now() -> datetime:
    return datetime.now(UTC)


def iso(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def now_iso() -> str:
    """``iso(utc_now())`` from one read of the same clock (``datetime.now`` takes its microseconds
    rounded down, so milliseconds are too): the text of each second is made once and the
    milliseconds appended, for the ``started_at`` of every case."""
    seconds, milliseconds = divmod(time.time_ns() // 1_000_000, 1000)
    return _second_text(seconds) + _MILLISECONDS[milliseconds]


_MILLISECONDS = tuple(f".{n:03d}Z" for n in range(1000))  # each case's tail, made once (half of now_iso's time)


@functools.lru_cache(maxsize=2)
def _second_text(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="seconds").removesuffix("+00:00")


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-.")[:40] or "run"


def new_run_id(arm_id: str, moment: datetime | None = None) -> str:
    moment = moment or utc_now()
    return f"{moment.strftime('%Y%m%dT%H%M%SZ')}-{slug(arm_id)}-{secrets.token_hex(2)}"


def write_json_atomic(path: Path, data: Any) -> None:
    """Write through a temp file and rename, so readers see the whole file or none of it. Text
    that is not Unicode (a lone surrogate) is written as :func:`as_unicode` makes it."""
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(temp, "w", encoding="utf-8") as handle:
        json.dump(as_unicode(data), handle, indent=2, sort_keys=True, ensure_ascii=False, default=str)
        handle.write("\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temp, path)


class RunWriter:
    """Creates or reopens a run directory, holds its lock and appends to it; never rewrites a case."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.run_id = directory.name
        self._lock: TextIO | None = None
        self._cases: int | None = None  # the descriptor of cases.jsonl, opened for appending
        self.appended = 0  # cases appended by this writer
        self.synced = 0  # of those, how many are known to be on disk
        self._digest = hashlib.sha256()  # of cases.jsonl as written
        self._well_typed = True  # every line of it is a well-typed case, each with a key of its own
        self._keys: set[tuple[Any, Any]] = set()  # (item_id, repeat) of every line
        self._unchecked: list[dict[str, Any]] = []  # bounded records written, their types and keys not yet checked

    @classmethod
    def create(cls, runs_dir: Path, arm_id: str, header: dict[str, Any]) -> RunWriter:
        runs_dir.mkdir(parents=True, exist_ok=True)
        while True:
            writer = cls(runs_dir / new_run_id(arm_id))
            try:
                writer.directory.mkdir()
                break
            except FileExistsError:  # another process took this id in the same second
                continue
        writer._acquire()
        header = redact_header(header)  # every writer of a header (run, import, merge, rescore) comes here
        write_json_atomic(writer.directory / RUN_FILE, {"format_version": FORMAT_VERSION, "run_id": writer.run_id, **header})
        writer._open()
        return writer

    @classmethod
    def reopen(cls, directory: Path, attempt: dict[str, Any]) -> RunWriter:
        """Reopen a stopped or interrupted run for appending.

        Refuses a completed run and one another process is writing. The footer the run had
        (or ``interrupted``) goes to ``attempts.jsonl`` with ``attempt``; a torn last line of
        ``cases.jsonl`` is cut.
        """
        writer = cls(Path(directory))
        writer._acquire()
        try:
            previous = read_footer(writer.directory)
            if previous is not None and previous.status == RunStatus.COMPLETED:
                raise RunLogError(f"run {writer.run_id} is completed; there is nothing to resume")
            record = {**attempt, "previous": previous.raw if previous else {"status": RunStatus.INTERRUPTED}}
            with open(writer.directory / ATTEMPTS_FILE, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
            (writer.directory / END_FILE).unlink(missing_ok=True)
            repair_torn_tail(writer.directory / CASES_FILE)
            writer._remove_temp_files()
        except BaseException:
            writer.close()
            raise
        writer._open()
        return writer

    def _acquire(self) -> None:
        lock = self._lock = open(self.directory / LOCK_FILE, "a")
        if fcntl is None:
            return
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.close()
            self._lock = None
            raise RunLogError(f"run {self.run_id} is being written by another evalsite process") from None

    def _open(self) -> None:
        self._cases = os.open(self.directory / CASES_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
        self._digest = hashlib.sha256()
        self._well_typed, self._keys, self._unchecked = True, set(), []
        self._take_existing_cases()

    def _take_existing_cases(self) -> None:
        """Hash the lines already in the file (a resumed run) and check that each is a well-typed case."""
        try:
            data = (self.directory / CASES_FILE).read_bytes()
        except OSError:
            return
        self._digest.update(data)
        for line in data.split(b"\n"):
            if not line.strip():
                continue
            try:
                self._well_typed = self._well_typed and self._typed_and_new(json.loads(line))
            except (ValueError, RecursionError):
                self._well_typed = False
            if not self._well_typed:
                return

    def append_case(self, case: dict[str, Any]) -> dict[str, Any]:
        """Append one case line, handed to the operating system at once (no buffer in this
        process: a killed process loses no case that was appended). Returns the record as written:
        ``case``, or a copy whose numbers out of range are null and named in its error
        (:func:`~evalsite.runlog.records.bounded_case`), which the caller should count from."""
        case, encoded = self._line(case)
        self._write(encoded, 1)
        return case

    def append_cases(self, cases: Iterable[dict[str, Any]],
                     vouched: BatchFields | None = None) -> tuple[list[dict[str, Any]], BatchFields | bool]:
        """Append several case lines in one ``write``, for a writer that has them all at hand (an
        import, published only once whole): the same lines, hash and checks as :meth:`append_case`
        one at a time, without a system call per case. Returns the records as written, and whether
        each is known bounded and well typed (:func:`~evalsite.runlog.records.checked_fields` held
        for the batch and each record was written as it is): false, or true as the fields that
        check read. ``vouched``: the batch's fields, from a caller that knows every record bounded
        and well typed (what ``checked_fields`` would find; an import's writer, which makes them)."""
        batch = list(cases)
        fields = checked_fields(batch) if vouched is None else vouched
        lines = None if fields is None else _fast_lines(batch)
        if fields is not None and lines is not None:  # each record written as it is: keys checked a batch at a time
            self._well_typed = self._well_typed and self._new_keys(fields)
            self._write(b"".join(lines), len(batch))
            return batch, fields
        written, lines = [], []
        for case in batch:
            record, encoded = self._line(case, fields is not None)
            written.append(record)
            lines.append(encoded)
        self._write(b"".join(lines), len(written))
        return written, fields is not None and all(map(operator.is_, written, batch))

    def _line(self, case: dict[str, Any], checked: bool = False) -> tuple[dict[str, Any], bytes]:
        """The record as written and its line. ``checked``: ``case`` is known bounded and well
        typed as it is (:func:`~evalsite.runlog.records.checked_fields` of its batch)."""
        assert self._cases is not None, "append_case after close"
        record, encoded = case_line(case if checked else bounded_case(case))
        if checked and record is case:
            self._well_typed = self._well_typed and self._new_key(record)
        elif self._well_typed:
            self._unchecked.append(record)
            if len(self._unchecked) >= CHECK_BATCH:
                self._check_unchecked()
        return record, encoded

    def _check_unchecked(self) -> None:
        """Whether the bounded records written since the last check are well typed, with keys of
        their own (:func:`checked_fields` holds of records :func:`bounded_case` returned exactly when
        each is a well-typed case). The caller must not change a record it was returned (the
        runner's footer reads them as written, too)."""
        batch, self._unchecked = self._unchecked, []
        fields = checked_fields(batch) if self._well_typed else None
        self._well_typed = fields is not None and self._new_keys(fields)

    def _write(self, encoded: bytes, count: int) -> None:
        assert self._cases is not None, "append_case after close"
        self._digest.update(encoded)
        written = os.write(self._cases, encoded)
        if written < len(encoded):  # a regular file takes the whole line in one write; a short write is continued
            line = memoryview(encoded)[written:]
            while line:
                line = line[os.write(self._cases, line):]
        self.appended += count

    def _typed_and_new(self, case: Any) -> bool:
        """A well-typed case whose (item_id, repeat) no earlier line has: a file of only such lines
        reads the same as typed columns (no line skipped) as through the readers' checks, which keep
        the first line of a repeated key."""
        return well_typed_case(case) and self._new_key(case)

    def _new_keys(self, fields: BatchFields) -> bool:
        """:meth:`_new_key` of each case of a batch in turn, a field at a time: whether no two of
        them and no earlier line share an (item_id, repeat); remembers them."""
        cases = fields.cases
        keys = set(zip(cases("item_id"), cases("repeat")))
        if len(keys) < len(cases.records) or not self._keys.isdisjoint(keys):
            return False
        self._keys |= keys
        return True

    def _new_key(self, case: dict[str, Any]) -> bool:
        """Whether no earlier line has the (item_id, repeat) of ``case``; remembers it."""
        key = (case.get("item_id"), case.get("repeat"))
        if key in self._keys:
            return False
        self._keys.add(key)
        return True

    @property
    def well_typed(self) -> bool:
        """Whether every line so far is a well-typed case with a key of its own; then every record
        :meth:`append_case` returned is also bounded (what ``checked_fields`` says of a batch)."""
        if self._unchecked:
            self._check_unchecked()
        return self._well_typed

    @property
    def unsynced(self) -> bool:
        return self.appended > self.synced

    def sync(self) -> None:
        """Make every case appended so far durable on disk (one ``fsync``; nothing if none is new).
        May run in a worker thread while the event loop appends: what is appended meanwhile
        stays counted as unsynced."""
        target = self.appended
        if self._cases is None or target == self.synced:
            return
        os.fsync(self._cases)
        if self.synced == 0:  # the first time: the folder's entries (run.json, cases.jsonl) too
            _fsync_directory(self.directory)
        self.synced = max(self.synced, target)

    def finish(self, footer: dict[str, Any]) -> None:
        """Sync the cases, write the footer, then remove the lock file while still holding it: a
        finished run folder holds only its records."""
        self.sync()
        self._close_cases()
        if self.well_typed:  # readers may then read the file as typed columns (analysis.parquet.case_files)
            footer = {**footer, CASES_SHA256: self._digest.hexdigest()}
        write_json_atomic(self.directory / END_FILE, footer)
        self._remove_temp_files()
        if self._lock is not None:
            (self.directory / LOCK_FILE).unlink(missing_ok=True)
        self.close()

    def _remove_temp_files(self) -> None:
        """Remove what a process killed inside :func:`write_json_atomic` left (``.end.json.PID.tmp``);
        called holding the lock, so no other writer is between its write and its rename."""
        for temp in self.directory.glob(".*.tmp"):
            temp.unlink(missing_ok=True)

    def _close_cases(self) -> None:
        if self._cases is not None:
            os.close(self._cases)
            self._cases = None

    def close(self) -> None:
        """Close the case file and release the lock (idempotent)."""
        self._close_cases()
        if self._lock is not None:
            self._lock.close()
            self._lock = None


def _fsync_directory(directory: Path) -> None:
    """Make a folder's entries durable where the system can (POSIX; a system or file system that
    cannot open or sync a folder is skipped: the files' own fsyncs still report a failing disk)."""
    try:
        handle = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(handle)
    except OSError:
        pass
    finally:
        os.close(handle)


def run_is_active(directory: Path) -> bool:
    """True while some process holds the run's lock (it is being written right now)."""
    return lock_is_held(Path(directory) / LOCK_FILE)


def lock_is_held(path: Path) -> bool:
    """True while some process holds an exclusive ``flock`` on the file at ``path`` (False where it is
    missing, or where the platform has no ``fcntl``)."""
    if fcntl is None or not path.is_file():
        return False
    with open(path, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
    return False


def read_attempts(directory: Path) -> list[dict[str, Any]]:
    """Earlier stops of a resumed run, oldest first (see :meth:`RunWriter.reopen`)."""
    return [data for _, data in read_jsonl(Path(directory) / ATTEMPTS_FILE) if isinstance(data, dict)]


def repair_torn_tail(path: Path) -> None:
    """Cut a last line that a crash left without its newline (it never became a case)."""
    if not path.exists():
        return
    with open(path, "rb+") as handle:
        data = handle.read()
        if data and not data.endswith(b"\n"):
            handle.truncate(data.rfind(b"\n") + 1)


@dataclass(frozen=True)
class Run:
    """One readable run: its header, its footer (``None`` until it stops), its status and, when
    read by :func:`read_run`, its cases and a warning per skipped case line."""

    directory: Path
    header: RunHeader
    footer: Footer | None
    status: RunStatus
    cases: list[Case] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def run_id(self) -> str:
        return self.header.run_id

    @property
    def recency(self) -> tuple[str, str]:
        """Sorts runs oldest first: by start time (milliseconds), then id (ids only resolve seconds)."""
        return (self.header.started_at or "", self.run_id)


def _read_json(path: Path, where: str) -> Any:
    """A JSON file's content; any reason it cannot be read is a one-line :class:`RunLogError`."""
    if path.is_dir():
        raise RunLogError(f"{where}: is a directory, not a file")
    try:
        text = path.read_text(encoding="utf-8")
        data = json.loads(text)
    except FileNotFoundError:
        raise
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise RunLogError(f"{where}: not valid JSON ({_one_line(exc)})") from None
    except (OSError, ValueError) as exc:
        raise RunLogError(f"{where}: cannot be read ({_one_line(exc)})") from None
    if (surrogate := escaped_lone_surrogate(text, data)) is not None:
        raise RunLogError(f"{where}: holds a lone surrogate {surrogate} (not valid Unicode text)")
    return data


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200] or type(exc).__name__


def read_header(directory: Path) -> RunHeader:
    """The run's ``run.json``; :class:`RunLogError` (naming the run and the field) when it is
    missing, unreadable, of the wrong shape or of a newer format."""
    directory = Path(directory)
    where = f"{directory.name}/{RUN_FILE}"
    try:
        data = _read_json(directory / RUN_FILE, where)
    except FileNotFoundError:
        raise RunLogError(f"{directory.name}: not a run (no {RUN_FILE})") from None
    return RunHeader.from_json(data, where)


def read_footer(directory: Path) -> Footer | None:
    """The run's ``end.json``, or ``None`` when the run has not stopped."""
    directory = Path(directory)
    where = f"{directory.name}/{END_FILE}"
    try:
        data = _read_json(directory / END_FILE, where)
    except FileNotFoundError:
        return None
    return Footer.from_json(data, where)


def read_jsonl(path: Path, warnings: list[str] | None = None, where: str | None = None) -> Iterator[tuple[int, Any]]:
    """Every parsed line of a JSON Lines file with its line number, in order. A torn last line (a
    crash mid-write) is ignored silently; any other unparsable line becomes a warning (appended
    when the reading reaches it, so warnings stay in line order) and is skipped."""
    where = where or str(path)
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").split("\n")
    except FileNotFoundError:
        return
    except OSError as exc:  # a directory, no permission
        if warnings is not None:
            warnings.append(f"{where}: cannot be read ({_one_line(exc)}); skipped")
        return
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except (json.JSONDecodeError, RecursionError):
            if warnings is not None and number != len(lines):
                warnings.append(f"{where}: line {number} is not valid JSON; skipped")
            continue
        except ValueError:  # what json raises beyond syntax: an integer past Python's 4,300 digits
            if warnings is not None:
                warnings.append(f"{where}: line {number} holds an integer of more than 4300 digits; skipped")
            continue
        if (surrogate := escaped_lone_surrogate(line, data)) is not None:
            if warnings is not None:  # (an escape of half a pair: no UTF-8, and DuckDB refuses the line)
                warnings.append(f"{where}: line {number} holds a lone surrogate {surrogate} (not valid Unicode text); skipped")
            continue
        yield number, data


def read_cases(path: Path, warnings: list[str] | None = None) -> list[Case]:
    """Read ``cases.jsonl``: a line that is not a well-formed case is skipped with a warning
    naming the file and line (a torn last line silently). A case is identified by
    ``(item_id, repeat)``: a second line with the key of an earlier one (evalsite never writes
    one; a hand-edited or forged file may) is skipped with a warning, so the first line counts,
    once."""
    path = Path(path)
    where = f"{path.parent.name}/{path.name}"
    cases = []
    first_line: dict[tuple[str, int], int] = {}
    for number, data in read_jsonl(path, warnings, where):
        try:
            case = Case.from_json(data, f"{where}: line {number}")
        except RunLogError as exc:
            if warnings is not None:
                warnings.append(f"{exc.message}; skipped")
            continue
        earlier = first_line.setdefault((case.item_id, case.repeat), number)
        if earlier != number:
            if warnings is not None:
                warnings.append(f"{where}: line {number}: item {_brief(case.item_id)} repeat {case.repeat} is already "
                                f"recorded on line {earlier}; skipped (the first line counts)")
            continue
        cases.append(case)
    return cases


def _brief(text: str) -> str:
    return repr(text) if len(text) <= 60 else repr(text[:57] + "...")


def footer_status(footer: Footer | None, directory: Path) -> RunStatus:
    """The one status rule: the footer's, else running (lock held) or interrupted."""
    if footer is None:
        return RunStatus.RUNNING if run_is_active(directory) else RunStatus.INTERRUPTED
    return footer.status


def run_status(directory: Path) -> RunStatus:
    """The status of the run in ``directory`` (its footer read once)."""
    return footer_status(read_footer(directory), directory)


def open_run(path: str | Path) -> Run:
    """A run's header, footer and status, without its cases (see :func:`read_run`).

    Raises :class:`RunLogError` naming the run and the reason when it cannot be read."""
    directory = Path(path)
    header, footer = read_header(directory), read_footer(directory)
    _check_cases_file(directory)
    return Run(directory, header, footer, footer_status(footer, directory))


def _check_cases_file(directory: Path) -> None:
    """``cases.jsonl``, when present, must be a regular file: a folder or a FIFO planted under that
    name would break (or block) every reader that opens it."""
    path = directory / CASES_FILE
    if path.is_file() or not (path.exists() or path.is_symlink()):
        return
    kind = "a directory" if path.is_dir() else "not a regular file"
    raise RunLogError(f"{directory.name}/{CASES_FILE}: is {kind}; the run cannot be read")


def read_run(path: str | Path) -> Run:
    """A whole run: header, footer, status, cases and a warning per skipped case line.

    Raises :class:`RunLogError` (one line naming the run and the reason) when the header or the
    footer cannot be read; bad case lines never make a run unreadable."""
    run = open_run(path)
    warnings: list[str] = []
    cases = read_cases(run.directory / CASES_FILE, warnings)
    return Run(run.directory, run.header, run.footer, run.status, cases, warnings)


def scan_runs(runs_dir: Path, folders: list[Path] | None = None) -> tuple[list[Run], list[str]]:
    """Every readable run under ``runs_dir`` (headers and footers, oldest first) and one line
    per unreadable run naming it and the reason. Folders without a ``run.json`` (a process killed
    before it wrote the header) are not runs and are not listed. ``folders``: these run folders
    instead (a compacted store's ``run=<id>`` partitions among them)."""
    runs, problems = [], []
    for directory in run_directories(runs_dir) if folders is None else folders:
        try:
            run = open_run(directory)
        except RunLogError as exc:
            problems.append(exc.message)
            continue
        if run.run_id != directory.name.removeprefix("run="):
            problems.append(f"{directory.name}/{RUN_FILE}: names run_id {run.run_id!r}, not its folder's name")
        else:
            runs.append(run)
    return runs, problems


def run_directories(runs_dir: Path) -> list[Path]:
    """Every folder under ``runs/`` that has a ``run.json`` (readable or not), oldest first (ids
    sort by time). Hidden folders and folders without one (crash leftovers) are left out."""
    if not runs_dir.is_dir():
        return []
    return sorted(
        p for p in runs_dir.iterdir()
        if not p.name.startswith(".") and p.is_dir() and (p / RUN_FILE).exists()
    )


LATEST = "@latest"


def resolve_run(runs_dir: Path, reference: str) -> Path:
    """A run id, a unique prefix of one, a run directory's path, or ``ARM@latest`` (``@latest``:
    any arm) for the newest run by its recorded start."""
    as_path = Path(reference)
    if _is_file(as_path / RUN_FILE):
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


def _is_file(path: Path) -> bool:
    """``path`` exists; False for a name the file system refuses (too long, a NUL byte), which is
    then no run folder but a reference to match against run ids."""
    try:
        return path.exists()
    except (OSError, ValueError):
        return False


def _latest_run(runs_dir: Path, arm_id: str) -> Path:
    newest: tuple[str, str, Path] | None = None
    for directory in run_directories(runs_dir):
        try:
            header = read_header(directory)
        except RunLogError:
            continue
        if arm_id and header.arm_id != arm_id:
            continue
        key = (str(header.started_at or ""), directory.name, directory)
        newest = key if newest is None or key[:2] > newest[:2] else newest
    if newest is None:
        which = f"of arm {arm_id!r} " if arm_id else ""
        raise RunLogError(f"no run {which}under {runs_dir}")
    return newest[2]
