"""Runner throughput: how close the async pool gets to the ideal, and the harness's own overhead.

Three measurements, each in a fresh process so its peak memory is its own, and a fourth of
whole commands:

- ``http``: N calls of the ``openai`` target against the fake server (tests/fakeserver.py, run
  in its own process) answering after a fixed latency, at a given concurrency. Ideal time is
  calls × latency / concurrency; the figure is achieved cases/s against ideal cases/s.
- ``instant``: N cases of a ``python`` target that returns at once: cases/s is the harness's
  own ceiling (rendering, the call in a thread, the case line appended).
- ``instant+exact``: the same, scored by the ``exact`` evaluator, to show what scoring adds.

``http`` and ``instant`` run unscored, so they measure the runner alone. All go through
``execute_plan`` exactly as ``evalsite run`` does (progress off).

- ``--whole``: the issue-17 target, start-up included. ``evalsite run`` of the ``http`` project
  as its own process, paired round by round with a bare aiohttp client making the same calls
  (``bench/bare_aiohttp.py``, which imports aiohttp alone) against the same fake server, and with
  the floor under any runner that keeps httpx as the API (``bench/httpx_floor.py``: ``evalsite
  run``'s imports and the same calls through the HTTP targets' client, nothing else); prints
  each one's wall and CPU seconds and peak RSS (the operating system's accounting of the
  finished child, as ``/usr/bin/time -v`` reports it) and the medians of the paired ratios.
  All three start from cached bytecode (``PYTHONPYCACHEPREFIX`` in the bench's folder,
  written by the uncounted first round), as an installed package does.

Rerun: ``python bench/runner.py`` (defaults: 6,000 calls at 20 ms, concurrency 32; 20,000
instant cases), ``python bench/runner.py --whole --rounds 5``; ``--whole --code ../main`` adds the
same ``evalsite run`` from another checkout to every round (an A/B in one session: its figures,
and this checkout's over its, per round). ``--help`` lists the knobs.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.fake_provider import fake_provider  # noqa: E402
from evalsite.execute.runner import execute_plan  # noqa: E402
from evalsite.experiment.manifest import load_manifest  # noqa: E402
from evalsite.experiment.plan import build_plan  # noqa: E402
from evalsite.project import find_project  # noqa: E402
from evalsite.runlog.totals import RunTotals  # noqa: E402

SCENARIOS = ("http", "instant", "instant+exact")


def write_project(root: Path, cases: int, arm: dict, concurrency: int, evaluators: list) -> Path:
    (root / "data").mkdir()
    (root / "experiments").mkdir()
    with open(root / "data" / "bench.jsonl", "w") as handle:
        for n in range(cases):
            handle.write(json.dumps({"id": f"b{n}", "input": f"question {n}", "expected": f"echo: question {n}"}) + "\n")
    manifest = {
        "name": "bench",
        "dataset": {"path": "data/bench.jsonl"},
        "arms": [arm],
        "evaluators": evaluators,
        "concurrency": concurrency,
        "limits": {"max_cases": cases},
    }
    path = root / "experiments" / "bench.json"
    path.write_text(json.dumps(manifest))
    return path


def timed_run(root: Path, manifest: Path) -> tuple[float, RunTotals]:
    os.chdir(root)
    project = find_project(root)
    plan = build_plan(project, load_manifest(manifest))
    started = time.perf_counter()
    batch = execute_plan(project, plan)
    seconds = time.perf_counter() - started
    (run,) = batch.runs
    assert run.status == "completed" and run.summary.errors == 0, run.summary
    return seconds, run.summary


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def measure_http(calls: int, latency: float, concurrency: int) -> dict:
    with fake_provider(latency) as provider, tempfile.TemporaryDirectory() as folder:
        arm = {"id": "http", "target": "openai:bench", "settings": {"base_url": f"{provider}/v1"}}
        seconds, _ = timed_run(Path(folder), write_project(Path(folder), calls, arm, concurrency, []))
    ideal_seconds = calls * latency / concurrency
    return {
        "scenario": f"http: {calls} calls, {latency * 1000:g} ms, concurrency {concurrency}",
        "seconds": seconds,
        "cases_per_s": calls / seconds,
        "ideal_cases_per_s": calls / ideal_seconds,
        "of_ideal": ideal_seconds / seconds,
        "peak_mb": peak_mb(),
    }


def measure_instant(cases: int, concurrency: int, evaluators: list) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "bench_instant.py").write_text("def answer(input):\n    return 'echo: ' + input\n")
        arm = {"id": "instant", "target": "python:bench_instant:answer"}
        seconds, _ = timed_run(root, write_project(root, cases, arm, concurrency, evaluators))
    scored = f", scored by {', '.join(e['type'] for e in evaluators)}" if evaluators else ""
    return {
        "scenario": f"instant python target: {cases} cases, concurrency {concurrency}{scored}",
        "seconds": seconds,
        "cases_per_s": cases / seconds,
        "peak_mb": peak_mb(),
    }


def child_figures(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> dict:
    """Wall and CPU seconds and peak RSS (MB) of one finished child process."""
    started = time.perf_counter()
    child = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(command)} failed: {child.stderr.read().decode()[-500:]}")
    child.stderr.close()
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "peak_mb": usage.ru_maxrss / 1024}


def measure_whole(calls: int, latency: float, concurrency: int, rounds: int, code: Path | None = None) -> None:
    with fake_provider(latency) as provider, tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        arm = {"id": "http", "target": "openai:bench", "settings": {"base_url": f"{provider}/v1"}}
        manifest = write_project(root, calls, arm, concurrency, [])
        run = [sys.executable, "-m", "evalsite", "run", str(manifest)]
        bare = [sys.executable, str(REPO / "bench" / "bare_aiohttp.py"), "--url",
                f"{provider}/v1/chat/completions", "--calls", str(calls),
                "--concurrency", str(concurrency)]
        floor = [sys.executable, str(REPO / "bench" / "httpx_floor.py"), "--url", f"{provider}/v1",
                 "--calls", str(calls), "--concurrency", str(concurrency)]
        os.environ["PYTHONPATH"] = str(REPO)  # this checkout's evalsite, installed or not
        # both start from cached bytecode, as an installed package does (the warm-up pair writes it)
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
        os.environ["PYTHONPYCACHEPREFIX"] = str(root / "pycache")
        children: list[tuple[str, list[str], dict[str, str] | None]] = [
            ("evalsite run", run, None), ("httpx floor", floor, None), ("bare aiohttp", bare, None)]
        if code is not None:  # the same command from another checkout, in the same rounds
            children.insert(1, ("run, --code", run, {**os.environ, "PYTHONPATH": str(code)}))
        rounds_run = []
        for _ in range(rounds + 1):  # the first round warms the caches and is not counted
            rounds_run.append([child_figures(command, root, env) for _, command, env in children])
    rounds_run = rounds_run[1:]
    print(f"evalsite run against a bare aiohttp client: {calls} calls × {latency * 1000:g} ms at concurrency "
          f"{concurrency}, start-up included; medians of {rounds} rounds (the {len(children)} children in turn)"
          + (f"; 'run, --code': evalsite run of {code}" if code is not None else ""))
    bare_at = len(children) - 1
    for index, (label, _, _) in enumerate(children):
        figures = {key: median([one[index][key] for one in rounds_run]) for key in ("wall", "cpu", "peak_mb")}
        print(f"  {label:<13} wall {figures['wall']:6.2f} s  cpu {figures['cpu']:6.2f} s  peak {figures['peak_mb']:5.0f} MB")
    for index, (label, _, _) in enumerate(children[:-1]):
        ratios = {key: median([one[index][key] / one[bare_at][key] for one in rounds_run]) for key in ("wall", "cpu")}
        print(f"  {label + ' / bare':<24} wall {ratios['wall']:.2f}×  cpu {ratios['cpu']:.2f}× (per round, median)")
    if code is not None:
        ratios = {key: median([one[0][key] / one[1][key] for one in rounds_run]) for key in ("wall", "cpu", "peak_mb")}
        print(f"  {'evalsite run / --code':<24} wall {ratios['wall']:.2f}×  cpu {ratios['cpu']:.2f}×  "
              f"peak {ratios['peak_mb']:.2f}× (per round, median)")


def median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=6000)
    parser.add_argument("--latency", type=float, default=0.02, help="seconds per call at the server")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--instant-cases", type=int, default=20000)
    parser.add_argument("--whole", action="store_true", help="evalsite run paired with a bare aiohttp client")
    parser.add_argument("--rounds", type=int, default=5, help="paired rounds of --whole")
    parser.add_argument("--code", type=Path, help="--whole: also time evalsite run of this checkout (PYTHONPATH) "
                                                  "in the same rounds, e.g. main's, for an A/B")
    parser.add_argument("--only", choices=SCENARIOS, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.whole:
        measure_whole(options.calls, options.latency, options.concurrency, options.rounds, options.code)
        return
    if options.only == "http":
        print(json.dumps(measure_http(options.calls, options.latency, options.concurrency)))
        return
    if options.only is not None:
        evaluators = [{"type": "exact"}] if options.only == "instant+exact" else []
        print(json.dumps(measure_instant(options.instant_cases, options.concurrency, evaluators)))
        return
    for scenario in SCENARIOS:
        child = subprocess.run([sys.executable, __file__, *sys.argv[1:], "--only", scenario],
                               capture_output=True, text=True, check=True)
        report(json.loads(child.stdout.strip().splitlines()[-1]))


def report(figures: dict) -> None:
    line = f"{figures['scenario']}: {figures['seconds']:.2f} s, {figures['cases_per_s']:,.0f} cases/s"
    if "ideal_cases_per_s" in figures:
        line += f" (ideal {figures['ideal_cases_per_s']:,.0f} cases/s, {figures['of_ideal']:.0%} of ideal)"
    print(line + f", peak {figures['peak_mb']:.0f} MB")


if __name__ == "__main__":
    main()
