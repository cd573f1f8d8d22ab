"""Benchmark start-up: whole `evalsite` processes on the bundled example project (issue #30).

Rerun from the repository root:  python bench/startup.py  [--repeat 7] [--code DIR] [--keep DIR]

Makes the example project (``cp -r data experiments arms reports``, then ``evalsite run
experiments/arithmetic.yaml --allow-failures`` and ``evalsite build``), then times, each in a fresh
process from cached bytecode: ``evalsite runs``, ``evalsite leaderboard`` and ``evalsite build``
with nothing new. Prints each command's median wall time, CPU time (user + system, all threads)
and peak resident memory over ``--repeat`` runs (targets: 0.3 s, 0.8 s and 0.5 s wall).

``--code DIR`` times another evalsite checkout (e.g. ``/work/main``) the same way, on its own copy
of the same project (the same runs), and prints both, command by command, with the ratio of the
medians: the two sides run in turn, A B A B …, so a change of load hits both. Each side's code
wins through ``PYTHONPATH``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
COMMANDS = {"runs": ["runs"], "leaderboard": ["leaderboard"], "build (nothing new)": ["build"]}
TARGETS = {"runs": 0.3, "leaderboard": 0.8, "build (nothing new)": 0.5}
#: A build trusts file states only once every file is this much older than the build (site/unchanged.py).
SETTLE_SECONDS = 2.5


def evalsite(args: list[str], cwd: Path, code: Path) -> tuple[float, float, float]:
    """One whole ``python -m evalsite ARGS`` process: wall s, CPU s (user + system), peak RSS MB."""
    env = {**os.environ, "PYTHONPATH": str(code)}
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "evalsite", *args], cwd=cwd, env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    errors = process.stderr.read().decode() if process.stderr else ""
    if process.returncode != 0:
        raise SystemExit(f"evalsite {' '.join(args)} failed ({process.returncode}): {errors}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def make_project(folder: Path, code: Path) -> None:
    folder.mkdir(parents=True)
    for name in ("data", "experiments", "arms", "reports"):
        shutil.copytree(REPO / name, folder / name)
    env = {**os.environ, "PYTHONPATH": str(code)}
    subprocess.run([sys.executable, "-m", "evalsite", "-q", "run", "experiments/arithmetic.yaml", "--allow-failures"],
                   cwd=folder, env=env, check=True, stdout=subprocess.DEVNULL)


def prepare(project: Path, code: Path) -> None:
    """Build once, let the files settle, build again: the build after that has nothing new, and a
    build that can tell (site/unchanged.py) has recorded so."""
    for _ in range(2):
        evalsite(["build"], project, code)
        time.sleep(SETTLE_SECONDS)
    for args in COMMANDS.values():  # warm the bytecode caches and the page cache
        evalsite(args, project, code)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="runs of each command per side (medians)")
    parser.add_argument("--code", type=Path, help="another evalsite checkout to time beside this one")
    parser.add_argument("--keep", type=Path, help="make the projects under DIR and leave them there")
    options = parser.parse_args()
    base = options.keep or Path(tempfile.mkdtemp(prefix="evalsite-startup-"))
    sides = {"this": REPO}
    if options.code:
        sides["other"] = options.code.resolve()
    try:
        projects = {side: base / side for side in sides}
        for side in sides:
            shutil.rmtree(projects[side], ignore_errors=True)
        make_project(projects["this"], REPO)
        if "other" in sides:  # the same runs for both sides
            shutil.copytree(projects["this"], projects["other"], ignore=shutil.ignore_patterns("site", ".evalsite"))
        time.sleep(SETTLE_SECONDS)
        for side, code in sides.items():
            prepare(projects[side], code)
        figures: dict[str, dict[str, list[tuple[float, float, float]]]] = {side: {} for side in sides}
        for name, args in COMMANDS.items():
            for _ in range(options.repeat):
                for side, code in sides.items():
                    figures[side].setdefault(name, []).append(evalsite(args, projects[side], code))
        load = os.getloadavg()[0]
        print(f"example project, {options.repeat} whole processes per command and side, load average {load:.1f} "
              f"on {os.cpu_count()} cores; medians: wall s / CPU s / peak MB")
        for name in COMMANDS:
            medians = {side: [statistics.median(run[i] for run in figures[side][name]) for i in range(3)] for side in sides}
            line = f"  {name:<20} this: {medians['this'][0]:.2f} / {medians['this'][1]:.2f} / {medians['this'][2]:.0f}"
            if "other" in sides:
                other = medians["other"]
                line += (f"   {options.code}: {other[0]:.2f} / {other[1]:.2f} / {other[2]:.0f}"
                         f"   ratio wall {medians['this'][0] / other[0]:.2f}, CPU {medians['this'][1] / other[1]:.2f}")
            line += f"   (target < {TARGETS[name]} s wall)"
            print(line)
    finally:
        if not options.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
