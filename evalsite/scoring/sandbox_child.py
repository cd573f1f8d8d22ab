"""The first code a sandboxed interpreter runs (``python -I sandbox_child.py SETTINGS``).

It limits itself before anything untrusted runs: joins the pids cgroup the parent made (if
any), sets its resource limits (CPU seconds, address space, file size, processes, no core
files), and as root drops every capability (so the limits cannot be raised again and
set-uid programs gain nothing). Then it compiles ``program.py`` from its working folder, runs
it, and writes what happened to the result file as ``{"label", "message"}``: ``passed``,
``failed`` (an AssertionError), ``error`` (any other exception), ``syntax_error``, ``memory``
(MemoryError), or ``sandbox_error`` when a limit could not be set (the program never ran). A program that ends the interpreter itself (``os._exit``, a signal,
a limit) writes no result; the parent labels that from the exit status.

Standard library only, and nothing here runs on import: the parent passes this file's path.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import sys
import traceback
from typing import Any

PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
CAPABILITY_VERSION_3 = 0x20080522
LANDLOCK_CREATE_RULESET, LANDLOCK_ADD_RULE, LANDLOCK_RESTRICT_SELF = 444, 445, 446  # every architecture
LANDLOCK_CREATE_RULESET_VERSION = 1
LANDLOCK_RULE_PATH_BENEATH = 1
WRITE_FILE = 1 << 1
TRUNCATE = 1 << 14  # ABI 3
WRITES = WRITE_FILE | sum(1 << bit for bit in range(4, 13))  # remove, make dir/file/link/socket/fifo/device


TCP_BIND_AND_CONNECT = 0b11  # ABI 4


class RulesetAttributes(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64)]


class PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def main(argv: list[str]) -> None:
    settings = json.loads(argv[1])
    pid = os.getpid()
    try:
        confine(settings)
    except Exception as exc:  # the sandbox could not be set up: nothing of the program has run
        report(settings["result"], "sandbox_error", f"{type(exc).__name__}: {exc}")
        sys.exit(2)
    label, message = run_program("program.py")
    if os.getpid() != pid:  # a process the program forked: only the first reports
        os._exit(1)
    report(settings["result"], label, message)


def confine(settings: dict[str, Any]) -> None:
    """Everything that limits this process, in the order that keeps each step possible."""
    if settings["cgroup"]:
        with open(os.path.join(settings["cgroup"], "cgroup.procs"), "w") as procs:
            procs.write(str(os.getpid()))
    limit_resources(settings)
    if sys.platform != "linux":  # capabilities and Landlock are Linux's
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if os.geteuid() == 0:
        drop_capabilities(libc)
    libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    confine_writes(libc, os.getcwd(), settings["network"])


def limit_resources(settings: dict[str, Any]) -> None:
    megabyte = 1024 * 1024
    cpu = settings["cpu_s"]
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))  # SIGXCPU first, SIGKILL a second later
    resource.setrlimit(resource.RLIMIT_AS, (settings["memory_mb"] * megabyte,) * 2)
    resource.setrlimit(resource.RLIMIT_FSIZE, (settings["file_mb"] * megabyte,) * 2)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if not settings["cgroup"] and os.path.isdir("/proc"):  # per user: the user's tasks now, plus the allowance
        allowance = own_tasks() + settings["processes"]
        resource.setrlimit(resource.RLIMIT_NPROC, (allowance, allowance))


def own_tasks() -> int:
    """How many tasks (processes and threads) this real user has now: RLIMIT_NPROC counts them all."""
    uid, count = os.getuid(), 0
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/status") as status:
                    fields = dict(line.split(":", 1) for line in status if ":" in line)
            except OSError:  # ended meanwhile
                continue
            if int(fields["Uid"].split()[0]) == uid:
                count += int(fields["Threads"])
    return count


def drop_capabilities(libc: ctypes.CDLL) -> None:
    """Empty the bounding, permitted and effective sets (Linux)."""
    capability = 0
    while libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0) == 0:
        capability += 1

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

    if libc.capset(ctypes.byref(Header(CAPABILITY_VERSION_3, 0)), (Data * 2)()) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")


def confine_writes(libc: ctypes.CDLL, folder: str, network: bool) -> bool:
    """With Landlock (Linux 5.13+, when enabled), files may be created, written, removed or
    renamed only beneath ``folder`` (and /dev/null written), for this process and every process
    it starts; reading and executing stay allowed. Without ``network``, binding and connecting
    TCP sockets are refused too (Landlock ABI 4, Linux 6.7+). False when the kernel has no Landlock."""
    abi = libc.syscall(LANDLOCK_CREATE_RULESET, None, 0, LANDLOCK_CREATE_RULESET_VERSION)
    if abi < 1:
        return False
    writes = WRITES | (1 << 13 if abi >= 2 else 0) | (TRUNCATE if abi >= 3 else 0)  # 13: refer (ABI 2)
    attributes = RulesetAttributes(writes, 0 if network or abi < 4 else TCP_BIND_AND_CONNECT)
    size = ctypes.sizeof(attributes) if abi >= 4 else RulesetAttributes.handled_access_net.offset
    ruleset = libc.syscall(LANDLOCK_CREATE_RULESET, ctypes.byref(attributes), size, 0)
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset failed")
    for path, allowed in ((folder, writes), ("/dev/null", writes & (WRITE_FILE | TRUNCATE))):
        descriptor = os.open(path, os.O_PATH | os.O_CLOEXEC)
        rule = PathBeneath(allowed, descriptor)
        added = libc.syscall(LANDLOCK_ADD_RULE, ruleset, LANDLOCK_RULE_PATH_BENEATH, ctypes.byref(rule), 0)
        os.close(descriptor)
        if added != 0:
            raise OSError(ctypes.get_errno(), f"landlock_add_rule failed for {path}")
    if libc.syscall(LANDLOCK_RESTRICT_SELF, ruleset, 0) != 0:
        raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")
    os.close(ruleset)
    return True


def run_program(path: str) -> tuple[str, str]:
    with open(path, encoding="utf-8") as handle:
        source = handle.read()
    try:
        code = compile(source, path, "exec")
    except (SyntaxError, ValueError) as exc:  # ValueError: a NUL byte in the source
        traceback.print_exc(limit=0)
        return "syntax_error", last_line(exc)
    try:
        exec(code, {"__name__": "solution", "__builtins__": __builtins__})
    except AssertionError as exc:
        print_from_program(exc)
        return "failed", last_line(exc)
    except MemoryError as exc:
        return "memory", last_line(exc)
    except BaseException as exc:  # SystemExit and KeyboardInterrupt too: the tests did not finish
        print_from_program(exc)
        return "error", last_line(exc)
    return "passed", ""


def print_from_program(exc: BaseException) -> None:
    """The traceback to stderr from the program's first frame (this file's frame left out)."""
    traceback.print_exception(type(exc), exc, exc.__traceback__.tb_next if exc.__traceback__ else None)


def last_line(exc: BaseException) -> str:
    where = ""
    frames = traceback.extract_tb(exc.__traceback__)
    program_frames = [f for f in frames if f.filename == "program.py"]
    if program_frames:
        where = f" (program.py line {program_frames[-1].lineno})"
    elif isinstance(exc, SyntaxError) and exc.lineno:
        where = f" (program.py line {exc.lineno})"
    text = traceback.format_exception_only(type(exc), exc)[-1].strip()
    return text + where


def report(path: str, label: str, message: str) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    with os.fdopen(os.open(path, flags, 0o600), "w") as handle:
        handle.write(json.dumps({"label": label, "message": message}))


if __name__ == "__main__":
    main(sys.argv)
