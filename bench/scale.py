"""Whole commands on 10k / 100k / 1M-case projects: time, peak memory, growth ratio (issue 17).

Rerun from the repository root with:

    python bench/scale.py [--sizes 10000,100000,1000000] [--commands runs,runs-again,query,leaderboard,compare,compact,query-parquet,build] [--realistic] [--keep DIR]

For each size it writes a synthetic project (10 arms × size/10 items × 1 repeat, pass/fail
scores, plus a second run of arm 0 for ``compare``) straight into run logs, each footer carrying
the run's summary as the runner's does, then runs each
command as its own ``evalsite`` process and prints its wall seconds and peak RSS (the operating
system's accounting of that child), and the growth against the previous size. ``runs-again`` is a
second ``runs``: the first keeps each settled cases file's sha256 (a run written within the last two
seconds is hashed again). The peak of a command run right after this process wrote the project
counts the memory this process had when it started the command (``runs`` reads ~650 MB then, 28 MB
on a kept project): take peaks from a ``--keep`` project written by an earlier call. ``build`` is
``build --full``; ``query-parquet`` is the same query once ``compact`` has run. A command slower than ``--timeout`` seconds is stopped and printed as such.
With ``--keep DIR`` each size's project is written once to ``DIR/<size>`` and reused by later
calls (``compact`` leaves Parquet there, which later reads then use).

The minimal cases are ~300-byte lines; ``--realistic`` writes ~1 KB lines instead, as a provider
run records them: a prompt and an answer of realistic length, token usage and cost, provenance
(request id, served model, system fingerprint) and two evaluators' scores (``exact`` and a
``contains`` with its detail).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from evalsite.analysis.summary import summarise_run  # noqa: E402
from evalsite.runlog.store import CASES_FILE, RunWriter  # noqa: E402

ARMS = 10
FINGERPRINT = {"dataset": {"dataset_id": "bench@000000000000"}, "bench": True}
COMMANDS = {
    "runs": ["runs", "--json"],
    "runs-again": ["runs", "--json"],  # the next listing: the cases' sha256s kept by `runs` (.evalsite/digests.json)
    "query": ["query", "SELECT run_id, count(*) AS n, avg(score) AS mean FROM cases GROUP BY ALL", "--json"],
    "leaderboard": ["leaderboard", "--json"],
    "compare": ["compare", "{current}", "--baseline", "{baseline}", "--json"],
    "compact": ["compact", "--json"],
    "query-parquet": ["query", "SELECT run_id, count(*) AS n, avg(score) AS mean FROM cases GROUP BY ALL", "--json"],
    "build": ["build", "--full", "--json"],
}


PROMPT = ("You are a careful assistant. Read the question and answer with the number only, no words. "
          "Question {i}: a warehouse holds {a} boxes and receives {b} more; each box weighs 3 kg. ")


def minimal_case(i: int, ok: bool, latency: float) -> dict[str, Any]:
    return {
        "item_id": f"i{i:07d}", "item_sha": f"s{i}", "repeat": 0, "input": f"q{i}", "expected": "x",
        "output": "x" if ok else "y", "error": None, "latency_ms": latency, "cost_usd": 1e-5,
        "score": float(ok), "passed": ok,
        "scores": [{"evaluator": "exact", "version": "bench", "score": float(ok), "passed": ok}],
    }


def realistic_case(i: int, ok: bool, latency: float) -> dict[str, Any]:
    """A ~1 KB case line as a provider run writes it."""
    answer = f"{i * 7}" if ok else f"{i * 7 + 1}"
    output = f"Let me work through it: the total is {answer} boxes, so the answer is {answer}. " * 2
    contains = ok or i % 3 == 0
    return {
        "item_id": f"i{i:07d}", "item_sha": f"{i:064x}", "repeat": 0, "critical": False,
        "input": PROMPT.format(i=i, a=i % 997, b=i % 89), "expected": f"{i * 7}", "output": output,
        "error": None, "latency_ms": latency, "input_tokens": 96 + i % 17, "output_tokens": 41 + i % 11,
        "cost_usd": 1.2e-5 + (i % 7) * 1e-7, "scoring_cost_usd": None, "finish_reason": "stop",
        "scores": [
            {"evaluator": "exact", "version": "bench-exact", "score": float(ok), "passed": ok, "label": None,
             "detail": None, "error": None, "skipped": False, "turn": None, "spread": None, "cost_usd": None},
            {"evaluator": "contains", "version": "bench-contains", "score": float(contains), "passed": contains,
             "label": None, "detail": f"looked for {i * 7!r} in the output", "error": None, "skipped": False,
             "turn": None, "spread": None, "cost_usd": None},
        ],
        "score": (float(ok) + float(contains)) / 2, "passed": ok and contains,
        "started_at": f"2026-01-01T00:{i // 60000 % 60:02d}:{i // 1000 % 60:02d}.{i % 1000:03d}Z", "attempts": 1,
        "request_ids": [f"req_{i:012x}"], "served_model": "bench-model-2026-01-01", "system_fingerprint": "fp_bench01",
    }


def write_project(root: Path, cases: int, realistic: bool = False) -> dict[str, str]:
    items = cases // ARMS
    (root / "data").mkdir(parents=True)
    with open(root / "data" / "bench.jsonl", "w") as handle:
        handle.writelines(json.dumps({"id": f"i{i:07d}", "input": f"q{i}", "expected": "x"}) + "\n" for i in range(items))
    rng = np.random.default_rng(0)
    ids = {}
    for arm in [*range(ARMS), "again"]:
        accuracy = 0.5 + 0.03 * (0 if arm == "again" else arm)
        name = "arm0" if arm == "again" else f"arm{arm}"
        header = {
            "arm_id": name, "config_id": f"config-{name}", "experiment": "bench",
            "started_at": f"2026-01-01T00:00:{0 if arm == 'again' else arm:02d}.000Z",
            "dataset": {"path": "data/bench.jsonl", "dataset_id": "bench@000000000000", "items": items},
            "evaluators": ({"exact": {"type": "exact", "version": "bench-exact"},
                            "contains": {"type": "contains", "version": "bench-contains"}} if realistic
                           else {"exact": {"type": "exact", "version": "bench"}}),
            "fingerprint": FINGERPRINT, "fingerprint_hash": "bench",
            "plan": {"items": items, "repeat": 1, "cases": items},
        }
        writer = RunWriter.create(root / "runs", name, header)
        passes = rng.random(items) < accuracy
        latencies = rng.gamma(2.0, 50.0, items)
        make = realistic_case if realistic else minimal_case
        written = [writer.append_case(make(i, ok, lat)) for i, (ok, lat) in enumerate(zip(passes.tolist(), latencies.tolist()))]
        # the runner's footer: the run's summary (and the file's sha256: every line is a well-typed case)
        writer.finish({"status": "completed", "totals": summarise_run(written).to_json()})
        ids["baseline" if arm == 0 else "current" if arm == "again" else name] = writer.run_id
    return ids


def project_of(size: int, root: Path, realistic: bool = False) -> tuple[Path, dict[str, str]]:
    """The project of ``size`` cases in ``root``: written there unless a previous call left it."""
    written = root / "ids.json"
    if written.exists():
        return root, json.loads(written.read_text())
    started = time.perf_counter()
    ids = write_project(root, size, realistic)
    written.write_text(json.dumps(ids))
    print(f"{size:>9,} cases written in {time.perf_counter() - started:.1f} s", flush=True)
    return root, ids


def timed(command: list[str], cwd: Path, timeout: float) -> tuple[float | None, float]:
    """Wall seconds (None when stopped at the timeout) and peak RSS in MB of one evalsite process."""
    started = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "evalsite", *command], cwd=cwd,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = started + timeout
    while True:
        pid, status, usage = os.wait4(child.pid, os.WNOHANG)
        if pid:
            child.returncode = os.waitstatus_to_exitcode(status)
            break
        if time.perf_counter() > deadline:
            child.kill()
            _, _, usage = os.wait4(child.pid, 0)
            return None, usage.ru_maxrss / 1024
        time.sleep(0.05)
    seconds = time.perf_counter() - started
    if child.returncode not in (0, 1):
        message = child.stderr.read().decode() if child.stderr else ""
        raise SystemExit(f"{' '.join(command)} failed: {message[-500:]}")
    return seconds, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--commands", default=",".join(COMMANDS))
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--realistic", action="store_true", help="~1 KB case lines (usage, provenance, two evaluators)")
    parser.add_argument("--keep", type=Path, default=None,
                        help="write each size's project under KEEP/<size> once and reuse it (the 1M project takes minutes)")
    options = parser.parse_args()
    previous: dict[str, float] = {}
    for size in (int(s) for s in options.sizes.split(",")):
        with tempfile.TemporaryDirectory() as folder:
            kept = None if options.keep is None else options.keep / f"{size}{'-realistic' * options.realistic}"
            root, ids = project_of(size, Path(folder) if kept is None else kept, options.realistic)
            jsonl = sum(p.stat().st_size for p in (root / "runs").glob(f"*/{CASES_FILE}"))
            print(f"{size:>9,} cases (+{size // ARMS:,} for compare): {jsonl / 2**20:,.0f} MiB of JSONL", flush=True)
            for name in options.commands.split(","):
                command = [part.format(**ids) for part in COMMANDS[name]]
                seconds, peak = timed(command, root, options.timeout)
                if seconds is None:
                    print(f"  {name:<12} stopped after {options.timeout:.0f} s, peak {peak:7.0f} MB", flush=True)
                    continue
                growth = f"  ×{seconds / previous[name]:.1f} vs previous size" if name in previous else ""
                extra = ""
                if name == "compact":
                    parquet = sum(p.stat().st_size for p in (root / "runs").glob("*/cases.parquet"))
                    extra = f"  Parquet {parquet / 2**20:,.1f} MiB = {parquet / jsonl:.2f} of the JSONL"
                print(f"  {name:<12} {seconds:8.2f} s  peak {peak:7.0f} MB{growth}{extra}", flush=True)
                previous[name] = seconds


if __name__ == "__main__":
    main()
