"""Running untrusted Python in a separate, limited process: :func:`run_python`.

Each program gets a fresh ``python -I`` interpreter (no ``PYTHON*`` variables, no user site,
no current folder on ``sys.path``) in its own session and process group, started in a new
temporary folder that is deleted afterwards, with stdin closed, an environment of only
``PATH=/usr/bin:/bin``, ``HOME`` and ``TMPDIR`` (both the temporary folder) and a UTF-8 locale:
nothing of evalsite's environment (API keys) is inherited. The interpreter first runs
:mod:`evalsite.scoring.sandbox_child`, which sets the resource limits on itself before the
program runs. Past the wall-clock limit the whole process group is killed (SIGKILL), and it is
killed again when the program ends, so nothing it started outlives it.

Processes: ``RLIMIT_NPROC`` counts every task of the real user and the Linux kernel never
applies it to root, so when evalsite runs as root and can create a cgroup under the pids
controller (``/sys/fs/cgroup/pids``, cgroup v1, or the cgroup v2 folder evalsite runs in, when
its ``cgroup.subtree_control`` enables pids) each program runs in its own cgroup with
``pids.max`` set; every process left in it is killed and the cgroup removed. Otherwise the
allowance is the user's tasks at start plus ``processes``.

Files: where the kernel has Landlock (Linux 5.13+, when enabled) the program and everything it
starts may create, write, rename or remove files only beneath its folder (and write /dev/null);
reading and executing stay allowed; with Landlock ABI 4 (Linux 6.7+) binding and connecting TCP
sockets are refused too unless ``network`` is set (UDP and Unix sockets are not covered).
Without Landlock nothing stops a write by absolute path
wherever the user running evalsite may write (cwd, HOME and TMPDIR only make relative and
conventional paths land inside).

This is process isolation, not a security boundary: there is no seccomp filter, no namespace
and no container. The program can read whatever the user running evalsite can, send UDP (and,
without Landlock's network rules, TCP), and use up to its limits of CPU and memory. Run code
you do not trust inside a container or VM as well.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from evalsite.scoring import sandbox_child

CHILD = Path(sandbox_child.__file__).resolve()
ENVIRONMENT = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
PIDS_V1 = Path("/sys/fs/cgroup/pids")
RESULT_FILE = ".evalsite-result.json"
STREAMS = (".evalsite-stdout", ".evalsite-stderr")


@dataclass(frozen=True)
class Limits:
    """What one program may use: wall-clock and CPU seconds, address space, file size, processes,
    and how much of stdout and stderr is kept."""

    wall_s: float = 10.0
    cpu_s: int = 10
    memory_mb: int = 512
    file_mb: int = 16
    processes: int = 32
    output_bytes: int = 8192
    network: bool = False


@dataclass(frozen=True)
class Ran:
    """How a program ended: ``label`` (passed, failed, error, syntax_error, timeout, memory,
    killed; ``sandbox_error`` when the limits could not be set and the program never ran), a
    one-line ``message``, and the kept head of its stdout and stderr."""

    label: str
    message: str
    stdout: str
    stderr: str
    seconds: float


def run_python(source: str, limits: Limits) -> Ran:
    """Run ``source`` as ``program.py`` in a fresh limited interpreter and say how it ended."""
    with tempfile.TemporaryDirectory(prefix="evalsite-sandbox-") as directory:
        folder = Path(directory)
        (folder / "program.py").write_text(source, encoding="utf-8")
        with _pids_cgroup(limits.processes) as cgroup:
            started = time.monotonic()
            status, timed_out = _run_child(folder, limits, cgroup)
            seconds = time.monotonic() - started
        stdout, stderr = (_head(folder / name, limits.output_bytes) for name in STREAMS)
        label, message = _ending(folder / RESULT_FILE, status, timed_out, limits, stderr)
    return Ran(label, message, stdout, stderr, seconds)


def _run_child(folder: Path, limits: Limits, cgroup: Path | None) -> tuple[int, bool]:
    settings = {
        "cpu_s": limits.cpu_s, "memory_mb": limits.memory_mb, "file_mb": limits.file_mb,
        "processes": limits.processes, "network": limits.network, "cgroup": str(cgroup) if cgroup else "",
        "result": str(folder / RESULT_FILE),
    }
    environment = {**ENVIRONMENT, "HOME": str(folder), "TMPDIR": str(folder)}
    with open(folder / STREAMS[0], "wb") as out, open(folder / STREAMS[1], "wb") as err:
        process = subprocess.Popen(
            [sys.executable, "-I", str(CHILD), json.dumps(settings)], cwd=folder, env=environment,
            stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True, close_fds=True,
        )
        timed_out = not _exited_within(process, limits.wall_s)
        _kill_group(process.pid)  # the leader is not reaped yet, so its group id is still its own
        if cgroup is not None:
            _kill_cgroup(cgroup)
        return process.wait(), timed_out


def _exited_within(process: subprocess.Popen[bytes], seconds: float) -> bool:
    """Wait for the process to end without reaping it (a pidfd, Linux), so its group id cannot be
    reused before the group is killed; elsewhere a plain wait."""
    if not hasattr(os, "pidfd_open"):
        try:
            process.wait(seconds)
        except subprocess.TimeoutExpired:
            return False
        return True
    descriptor = os.pidfd_open(process.pid)
    try:
        ready, _, _ = select.select([descriptor], [], [], seconds)
    finally:
        os.close(descriptor)
    return bool(ready)


def _kill_group(group: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signal.SIGKILL)


@contextlib.contextmanager
def _pids_cgroup(processes: int) -> Iterator[Path | None]:
    """A fresh cgroup with ``pids.max``, removed afterwards; None when none can be made."""
    parent = _pids_parent()
    folder = None
    if parent is not None:
        folder = parent / f"evalsite-sandbox-{secrets.token_hex(6)}"
        try:
            folder.mkdir()
            (folder / "pids.max").write_text(str(processes))
        except OSError:
            _remove_cgroup(folder)
            folder = None
    try:
        yield folder
    finally:
        if folder is not None:
            _remove_cgroup(folder)


def _pids_parent() -> Path | None:
    """Where evalsite may make a pids cgroup: only as root (``RLIMIT_NPROC`` binds everyone else)."""
    if os.geteuid() != 0:
        return None
    if (PIDS_V1 / "cgroup.procs").is_file():
        return PIDS_V1
    with contextlib.suppress(OSError):
        line = Path("/proc/self/cgroup").read_text().splitlines()[0]
        if line.startswith("0::"):
            own = Path("/sys/fs/cgroup") / line[3:].lstrip("/")
            if "pids" in (own / "cgroup.subtree_control").read_text().split():
                return own
    return None


def _kill_cgroup(folder: Path) -> None:
    """SIGKILL every process in the cgroup until none is left (its pids.max bounds how many)."""
    for _ in range(1000):
        pids = [int(p) for p in _read(folder / "cgroup.procs").split()]
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.005)


def _remove_cgroup(folder: Path) -> None:
    for _ in range(200):  # a killed process leaves its cgroup a moment after it dies
        try:
            folder.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.01)


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _head(path: Path, limit: int) -> str:
    """The first ``limit`` bytes of a captured stream, saying how much more there was."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as handle:
            head = handle.read(limit)
    except OSError:
        return ""
    text = head.decode("utf-8", errors="replace")
    return text if size <= limit else f"{text}\n… ({size - limit} more bytes not kept)"


def _ending(result: Path, status: int, timed_out: bool, limits: Limits, stderr: str) -> tuple[str, str]:
    """The label and message: the wall clock first, then the child's own report, then the exit status."""
    if timed_out:
        return "timeout", f"still running after {limits.wall_s:g} s (wall-clock limit); process group killed"
    reported = _report(result)
    if reported is not None and reported[0] == "memory":
        return "memory", f"{reported[1]} (memory limit {limits.memory_mb} MB)"
    if reported is not None:
        return reported
    if status < 0:
        number = -status
        if number == signal.SIGXCPU:
            return "timeout", f"used its {limits.cpu_s} s of CPU (CPU limit)"
        return "killed", f"killed by {signal.Signals(number).name}"
    if "MemoryError" in stderr:
        return "memory", f"ran out of its {limits.memory_mb} MB address space"
    return "error", f"exited with status {status} before the tests finished"


def _report(path: Path) -> tuple[str, str] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        label, message = data["label"], data["message"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if label not in ("passed", "failed", "error", "syntax_error", "memory", "sandbox_error") or not isinstance(message, str):
        return None
    return label, message
