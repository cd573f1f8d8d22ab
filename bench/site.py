"""Benchmark the site build: 10 runs × 10,000 cases (one dataset, one experiment).

Rerun from the repository root:  python bench/site.py  [--runs 10] [--cases 10000] [--keep DIR] [--repeat 3] [--realistic] [--code DIR] [--as-command] [--spare-core]

Each build runs in a fresh process, as ``evalsite build`` does: the full build (no site, no
cache), a rebuild with nothing new, a rebuild after one new run of an existing arm (which also
gets a compare page against its prior run), and a rebuild after one new run of a new arm (no
compare page; the leaderboards and the matrix gain a column). Prints each one's wall time, CPU
time (both threads) and peak resident memory, medians over ``--repeat`` rounds, the site's total
size and file count, and its largest file (after the full build and after one new run, whose
compare page lists every changed item). Runs are synthetic but shaped like real
ones: outputs of ~100 characters, seeded scores, latency and cost, one exact-style evaluator.
With ``--keep DIR`` an existing project there is reused (its site and cache are rebuilt).
``--realistic`` writes ~1 KB case lines instead (bench/scale.py's: a prompt and answer of realistic
length, usage and cost, provenance and two evaluators' scores); ``--code DIR`` times the builds of
another evalsite checkout (e.g. the main branch's) on the same project. ``--as-command`` times each
build as ``evalsite build --json`` runs it, from its process's start: the CLI's start-up settings for
a command that reads runs (evalsite/cli/lean.py: pyarrow told pandas is absent, numpy's BLAS on one
thread) apply, and the CLI's own import counts; by default a build is ``build_site``'s call, after
``evalsite.site`` is imported.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from scale import realistic_case

from evalsite.analysis.summary import summarise_run

REPO = Path(__file__).resolve().parent.parent

DATASET_ID = "bench@0123456789ab"


def run_id(index: int, arm_index: int) -> str:
    return f"20260101T{index:06d}Z-arm{arm_index:02d}-{index:04x}"


def write_run(runs_dir: Path, index: int, cases: int, arm_index: int | None = None, realistic: bool = False) -> None:
    """Run number ``index`` of arm ``arm_index`` (default: its own arm); ``realistic``: ~1 KB lines."""
    rng = random.Random(index)
    arm_index = index if arm_index is None else arm_index
    arm = f"arm{arm_index:02d}"
    folder = runs_dir / run_id(index, arm_index)
    folder.mkdir(parents=True)
    accuracy = 0.55 + 0.02 * arm_index
    priced = arm_index % 2 == 0
    header = {
        "format_version": 1, "run_id": folder.name, "batch_id": "bench", "experiment": "bench", "arm_id": arm,
        "config": {"arm_id": arm, "target": "python:bench:arm", "params": {"temperature": round(0.05 * arm_index, 2)}},
        "config_id": f"cfg{arm_index:04d}", "dataset": {"path": "data/bench.jsonl", "dataset_id": DATASET_ID, "items": cases},
        "evaluators": {"exact": {"type": "exact", "version": "v1"}},
        "fingerprint": {"dataset": {"dataset_id": DATASET_ID}, "config_id": f"cfg{arm_index:04d}"},
        "fingerprint_hash": f"fp{arm_index:04d}", "started_at": f"2026-01-01T00:00:{index:02d}.000Z",
    }
    (folder / "run.json").write_text(json.dumps(header))
    written: list[dict[str, Any]] = []
    with open(folder / "cases.jsonl", "w") as handle:
        for item in range(cases):
            passed = rng.random() < accuracy
            if realistic:
                written.append(realistic_case(item, passed, round(rng.lognormvariate(5, 0.5), 3)))
                handle.write(json.dumps(written[-1]) + "\n")
                continue
            answer = f"The answer to question {item} is {item * 7 if passed else item * 7 + 1}. " + "Reasoning text. " * 4
            written.append({
                "item_id": f"q{item:05d}", "item_sha": f"{item:064x}", "repeat": 0,
                "input": f"Question {item}: what is {item} times 7? Explain briefly.", "expected": str(item * 7),
                "output": answer, "error": None, "latency_ms": round(rng.lognormvariate(5, 0.5), 3),
                "input_tokens": 20, "output_tokens": 30, "cost_usd": 0.00002 * (arm_index + 1) if priced else None,
                "finish_reason": "stop",
                "scores": [{"evaluator": "exact", "version": "v1", "score": float(passed), "passed": passed,
                            "label": None, "detail": None if passed else f"expected '{item * 7}'", "error": None,
                            "skipped": False}],
                "score": float(passed), "passed": passed, "started_at": "2026-01-01T00:00:00.000Z",
            })
            handle.write(json.dumps(written[-1]) + "\n")
    # the footer RunWriter.finish writes for such a file (every line above is a well-typed case): its
    # sha256 and the run's totals, which `evalsite runs` and `show` read rather than the cases
    digest = hashlib.sha256((folder / "cases.jsonl").read_bytes()).hexdigest()
    totals = summarise_run(written).totals(planned=cases).to_json()
    (folder / "end.json").write_text(json.dumps({"status": "completed", "ended_at": "2026-01-01T01:00:00.000Z",
                                                 "totals": totals, "cases_sha256": digest}))


#: The CPU of a build's child processes (a new run's page rendered aside: evalsite/site/build.py), counted with its own.
CHILDREN_CPU = """
import resource
def children_cpu():
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime
"""

#: One build in a fresh process, as `evalsite build` runs it: its time and peak memory, the site's size.
BUILD = """
import json, resource, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[2])
from evalsite.project import find_project
from evalsite.site import build_site
started, cpu = time.perf_counter(), time.process_time() + children_cpu()
report = build_site(find_project(Path(sys.argv[1])))
seconds, cpu = time.perf_counter() - started, time.process_time() + children_cpu() - cpu
files = [p for p in report.out_dir.rglob("*") if p.is_file() and p.name != ".evalsite-build.json"]
largest = max(files, key=lambda p: p.stat().st_size)
print(json.dumps({"seconds": seconds, "cpu": cpu, "peak_mb": max(resource.getrusage(who).ru_maxrss for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)) / 1024,
                  "rendered": report.rendered, "kept": report.kept, "bytes": report.bytes, "files": report.files,
                  "pages": report.pages, "largest": [largest.relative_to(report.out_dir).as_posix(), largest.stat().st_size]}))
"""


#: The same build as `evalsite build --json` runs it: through the CLI's entry, with the start-up it
#: gives a command that reads runs (pyarrow told pandas is absent, numpy's BLAS on one thread,
#: fewer garbage collections: evalsite/cli/lean.py), from its process's start.
COMMAND = """
import io, json, os, resource, sys, time
from contextlib import redirect_stdout
from pathlib import Path
started, cpu = time.perf_counter(), time.process_time() + children_cpu()
sys.path.insert(0, sys.argv[2])
os.chdir(sys.argv[1])
from evalsite.cli import main
with redirect_stdout(io.StringIO()) as printed:
    main(["build", "--json"], standalone_mode=False)
report = json.loads(printed.getvalue())
seconds, cpu = time.perf_counter() - started, time.process_time() + children_cpu() - cpu
out_dir = Path(report["out_dir"])
files = [p for p in out_dir.rglob("*") if p.is_file() and p.name != ".evalsite-build.json"]
largest = max(files, key=lambda p: p.stat().st_size)
print(json.dumps({"seconds": seconds, "cpu": cpu, "peak_mb": max(resource.getrusage(who).ru_maxrss for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)) / 1024,
                  **{key: report[key] for key in ("rendered", "kept", "bytes", "files", "pages")},
                  "largest": [largest.relative_to(out_dir).as_posix(), largest.stat().st_size]}))
"""


#: With ``--spare-core``, once the code's path is set (inside the timed span): the build forks its
#: children whatever the load, as on a quiet machine with a core spare.
CODE_PATH = "sys.path.insert(0, sys.argv[2])\n"
SPARE_CORE = CODE_PATH + "import evalsite.forked\nevalsite.forked.spare_core = lambda: True\n"


def timed_build(root: Path, code: Path = REPO, as_command: bool = False, spare_core: bool = False) -> dict[str, Any]:
    script = CHILDREN_CPU + (COMMAND if as_command else BUILD)
    if spare_core:
        script = script.replace(CODE_PATH, SPARE_CORE)
    done = subprocess.run([sys.executable, "-c", script, str(root), str(code)], capture_output=True, text=True, check=True)
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def one_round(root: Path, runs: int, cases: int, realistic: bool = False, code: Path = REPO,
              as_command: bool = False, spare_core: bool = False) -> dict[str, dict[str, Any]]:
    """The four builds of one round, from no site and no cache (nor the runs' kept sha256s, so the
    full build hashes every run as a first build does); the project is as it was after."""
    for derived in (root / "site", root / ".evalsite" / "site-cache"):
        shutil.rmtree(derived, ignore_errors=True)
    (root / ".evalsite" / "digests.json").unlink(missing_ok=True)

    def build() -> dict[str, Any]:
        return timed_build(root, code, as_command, spare_core)

    found = {"full": build(), "unchanged": build()}
    write_run(root / "runs", runs, cases, arm_index=0, realistic=realistic)  # arm00 again: compared with its first run
    found["same_arm"] = build()
    shutil.rmtree(root / "runs" / run_id(runs, 0))
    build()  # back to the project as it was
    write_run(root / "runs", runs + 1, cases, arm_index=runs, realistic=realistic)  # an arm no run had before
    found["new_arm"] = build()
    shutil.rmtree(root / "runs" / run_id(runs + 1, runs))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--keep", type=Path, help="Build the project here and keep it (default: a temp folder).")
    parser.add_argument("--repeat", type=int, default=1, help="Rounds of the four builds; figures are medians.")
    parser.add_argument("--realistic", action="store_true", help="~1 KB case lines (usage, provenance, two evaluators)")
    parser.add_argument("--code", type=Path, default=REPO, help="The evalsite checkout whose builds are timed (default: this one).")
    parser.add_argument("--as-command", action="store_true",
                        help="Time each build as `evalsite build --json` runs it, from its process's start (the CLI's "
                             "start-up settings included) rather than build_site's call.")
    parser.add_argument("--spare-core", action="store_true",
                        help="Let each build fork its children whatever the load (evalsite.forked.spare_core pinned to "
                             "True), as on a quiet machine with a core spare: for timing a loaded host.")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="evalsite-bench-"))
    (root / "data").mkdir(parents=True, exist_ok=True)
    if not (root / "runs").is_dir():
        for index in range(args.runs):
            write_run(root / "runs", index, args.cases, realistic=args.realistic)
    rounds = [one_round(root, args.runs, args.cases, args.realistic, args.code, args.as_command, args.spare_core)
              for _ in range(args.repeat)]

    def median(build: str, figure: str) -> float:
        return float(statistics.median(found[build][figure] for found in rounds))

    full, same_arm, new_arm = (median("full", "seconds"), median("same_arm", "seconds"), median("new_arm", "seconds"))
    last = rounds[-1]
    total = args.runs * args.cases
    print(f"site for {args.runs} runs × {args.cases:,} {'realistic ' * args.realistic}cases ({total:,} cases) by {args.code}; "
          f"each build in a fresh process{', as `evalsite build --json`' * args.as_command}"
          f"{', children forked whatever the load' * args.spare_core}; "
          f"medians of {len(rounds)} (wall, CPU of both threads)")
    print(f"full build:             {full:8.1f} s  cpu {median('full', 'cpu'):6.1f} s  ({total / full:,.0f} cases/s), "
          f"peak {median('full', 'peak_mb'):.0f} MB")
    print(f"rebuild, nothing new:   {median('unchanged', 'seconds'):8.2f} s")
    print(f"rebuild, one new run:   {same_arm:8.1f} s  cpu {median('same_arm', 'cpu'):6.1f} s  ({same_arm / full:.0%} of the full "
          f"build, cpu {median('same_arm', 'cpu') / median('full', 'cpu'):.0%}; {last['same_arm']['rendered']} of "
          f"{last['same_arm']['rendered'] + last['same_arm']['kept']} jobs rendered, compare page included), "
          f"peak {median('same_arm', 'peak_mb'):.0f} MB")
    print(f"  ... of a new arm:     {new_arm:8.1f} s  cpu {median('new_arm', 'cpu'):6.1f} s  ({new_arm / full:.0%} of the full "
          f"build, cpu {median('new_arm', 'cpu') / median('full', 'cpu'):.0%}; {last['new_arm']['rendered']} of "
          f"{last['new_arm']['rendered'] + last['new_arm']['kept']} jobs rendered, no compare page), "
          f"peak {median('new_arm', 'peak_mb'):.0f} MB")
    print(f"site size:              {last['full']['bytes'] / 1e6:8.1f} MB in {last['full']['files']:,} files ({last['full']['pages']:,} pages)")
    print(f"largest file:           {last['full']['largest'][1] / 1e6:8.2f} MB  ({last['full']['largest'][0]}); "
          f"after one new run {last['same_arm']['largest'][1] / 1e6:.2f} MB ({last['same_arm']['largest'][0]})")
    if not args.keep:
        shutil.rmtree(root)


if __name__ == "__main__":
    main()
