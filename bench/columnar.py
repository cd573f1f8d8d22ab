"""``evalsite compare`` and ``evalsite build --full`` of a two-run project, each in a fresh process.

Rerun from the repository root with:

    python bench/columnar.py [--items 100000] [--repeat 3] [--vs OTHER_CHECKOUT] [--keep DIR]

It writes two runs of one arm, ITEMS cases each (bench/site.py's runs: ~100-character outputs, one
exact evaluator), then times ``compare RUN --baseline PRIOR --json`` and ``build --full`` as a user
runs them (``python -m evalsite``, imports included), wall seconds and peak resident memory of the
process (and its CPU time: on a shared machine the wall time mostly measures waiting). With ``--vs`` every command also runs with that checkout of evalsite first on the path,
in turn with this one (A B A B ...), ratios taken pair by pair, and the two outputs are checked to
be the same bytes (the compare JSON; every file of the site). Figures are medians of ``--repeat``.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parent.parent


def bench_runs() -> ModuleType:
    """bench/site.py's run writer (loaded by path: ``site`` is also the name of a standard module)."""
    spec = importlib.util.spec_from_file_location("bench_site", REPO / "bench" / "site.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def timed(tree: Path, root: Path, args: list[str]) -> tuple[float, float, float, bytes]:
    """Wall seconds, CPU seconds (user + system), peak RSS (MiB) and standard output of ``python -m evalsite ARGS`` run in ``root``
    with ``tree`` first on the path."""
    environment = {**os.environ, "PYTHONPATH": str(tree)}
    started = time.perf_counter()
    with tempfile.TemporaryFile() as output:
        process = subprocess.Popen([sys.executable, "-m", "evalsite", *args], cwd=root, env=environment,
                                   stdout=output, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - started
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"evalsite {' '.join(args)} failed under {tree}")
        output.seek(0)
        return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, output.read()


def site_digest(root: Path) -> str:
    """One hash of every site file's path and bytes (the build record left out: it holds timings)."""
    digest = hashlib.sha256()
    site = root / "site"
    for path in sorted(p for p in site.rglob("*") if p.is_file() and p.name != ".evalsite-build.json"):
        digest.update(path.relative_to(site).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


Figures = tuple[float, float, float, str]


def measure(trees: list[Path], root: Path, command: str, args: list[str]) -> dict[Path, list[Figures]]:
    """One round of ``command`` under each tree in turn: (wall s, CPU s, peak MiB, digest of its output)."""
    found: dict[Path, list[Figures]] = {}
    for tree in trees:
        if command == "build":
            for derived in (root / "site", root / ".evalsite"):
                shutil.rmtree(derived, ignore_errors=True)
        seconds, cpu, peak, output = timed(tree, root, args)
        digest = site_digest(root) if command == "build" else hashlib.sha256(output).hexdigest()
        found.setdefault(tree, []).append((seconds, cpu, peak, digest))
    return found


def report(command: str, rounds: list[dict[Path, list[Figures]]], trees: list[Path]) -> None:
    for tree in trees:
        runs = [found[tree][0] for found in rounds]
        print(f"{command:<8} {tree.name:<20} wall {statistics.median(r[0] for r in runs):8.2f} s   "
              f"cpu {statistics.median(r[1] for r in runs):8.2f} s   peak {statistics.median(r[2] for r in runs):7.0f} MiB")
    if len(trees) == 2:
        pairs = [(found[trees[0]][0], found[trees[1]][0]) for found in rounds]
        same = all(a[3] == b[3] for a, b in pairs)
        ratios = ", ".join(f"{name} {statistics.median(float(a[n]) / float(b[n]) for a, b in pairs):.2f}x"
                           for n, name in enumerate(("wall", "cpu", "peak")))
        print(f"{command:<8} {trees[0].name}/{trees[1].name}: {ratios}; output {'identical' if same else 'DIFFERENT'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--vs", type=Path, help="Another checkout of evalsite to run in turn with this one.")
    parser.add_argument("--keep", type=Path, help="Write (or reuse) the project here (default: a temp folder).")
    parser.add_argument("--only", choices=("compare", "build"), help="Time one of the two commands.")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="evalsite-columnar-"))
    runs = bench_runs()
    if not (root / "runs").is_dir():
        (root / "data").mkdir(parents=True, exist_ok=True)
        for index in range(2):
            runs.write_run(root / "runs", index, args.items, arm_index=0)
    baseline, current = runs.run_id(0, 0), runs.run_id(1, 0)
    trees = [REPO] + ([args.vs.resolve()] if args.vs else [])
    commands = {"compare": ["compare", current, "--baseline", baseline, "--json"], "build": ["build", "--full"]}
    print(f"2 runs x {args.items:,} cases; each command in a fresh process; medians of {args.repeat}")
    for command, command_args in commands.items():
        if args.only in (None, command):
            report(command, [measure(trees, root, command, command_args) for _ in range(args.repeat)], trees)
    if not args.keep:
        shutil.rmtree(root)


if __name__ == "__main__":
    main()
