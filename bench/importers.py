"""Benchmark ``evalsite import`` on a large plain JSONL file, promptfoo results.json and Inspect .eval log.

Rerun from the repository root:

    python bench/importers.py                 # 6,000 cases each (the goal: < 5 s and < 300 MB each)
    python bench/importers.py --cases 60000   # to see how time and memory grow
    python bench/importers.py --cases 200000 --formats jsonl promptfoo --against ../main --rounds 3
                                              # this checkout against another's code, in turns

The files are built by scaling the real fixtures in tests/fixtures/: every fixture row is copied
with a new item id and input, so the shapes (fields, sizes, nesting, events) are the ones the
tools write. Plain JSONL: N/2 items x 2 arms of tests/fixtures/plain/scored.jsonl's rows.
promptfoo: N/2 tests x 2 providers in one indented JSON document, tests inlined in its config as
promptfoo does. Inspect: N/2 samples x 2 epochs as zstd members, with
summaries and reductions. Each import runs as `evalsite import` in a child process on a fresh
project; the figures are its wall time, its CPU time (user + system: steadier than wall on a
shared machine) and its peak resident memory (ru_maxrss), next to the peak of `evalsite --version`
(the interpreter and the CLI's own imports).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from evalsite.execute.importers.evalzip import EvalZip, write_zstd_zip  # noqa: E402

FIXTURES = REPO / "tests" / "fixtures" / "external"
ITEMS_IN_FIXTURES = 24


def renamed(text: str, index: int) -> str:
    """A fixture text made unique for copy ``index`` ("item 3: ..." -> "item 1203: ...")."""
    return re.sub(r"^(item|ITEM|Answer: item|ANSWER: ITEM) \d+", lambda m: f"{m.group(1)} {index}", text)


def scaled_promptfoo(cases: int, out: Path) -> Path:
    document = json.loads((FIXTURES / "promptfoo" / "results.json").read_text())
    by_test: dict[int, list[dict]] = {}
    for result in document["results"]["results"]:
        by_test.setdefault(result["testIdx"], []).append(result)
    rows, tests = [], []
    for test in range(cases // 2):
        for base in by_test[test % ITEMS_IN_FIXTURES]:
            row = copy.deepcopy(base)
            variables = {"id": f"item-{test:05d}", "input": renamed(base["vars"]["input"], test),
                         "expected": renamed(base["vars"]["expected"], test)}
            row.update(testIdx=test, vars=variables, id=f"{base['id'][:-5]}{test:05d}")
            row["testCase"].update(description=variables["id"], vars=variables)
            row["prompt"]["raw"] = renamed(base["prompt"]["raw"], test)
            row["response"]["output"] = renamed(base["response"]["output"], test)
            rows.append(row)
        tests.append({"description": f"item-{test:05d}", "vars": rows[-1]["vars"]})
    document["results"]["results"] = rows
    document["config"]["tests"] = tests
    path = out / "results.json"
    path.write_text(json.dumps(document, indent=2))
    return path


def scaled_plain(cases: int, out: Path) -> Path:
    """N/2 items x 2 arms of the plain fixture's rows, one JSON object per line."""
    lines = [json.loads(line) for line in (FIXTURES.parent / "plain" / "scored.jsonl").read_text().splitlines()]
    path = out / "scored.jsonl"
    with open(path, "w", encoding="utf-8") as handle:
        for index in range(cases):
            test, arm = divmod(index, 2)
            base = lines[arm * ITEMS_IN_FIXTURES + test % ITEMS_IN_FIXTURES]
            row = {**base, "id": f"item-{test:06d}", "input": renamed(base["input"], test),
                   "expected": renamed(base["expected"], test), "output": renamed(base["output"], test)}
            handle.write(json.dumps(row) + "\n")
    return path


def scaled_inspect(cases: int, out: Path) -> Path:
    log = next((FIXTURES / "inspect" / "logs-eval").glob("*.eval"))
    with EvalZip(log) as source:
        header = json.loads(source.read("header.json"))
        start = json.loads(source.read("_journal/start.json"))
        samples = {(s["id"], s["epoch"]): s for s in (json.loads(source.read(n)) for n in source.names()
                                                       if n.startswith("samples/"))}
        summaries = json.loads(source.read("summaries.json"))
        reductions = json.loads(source.read("reductions.json"))
    count = cases // 2
    ids = [f"item-{i:05d}" for i in range(count)]
    for spec in (header, start):
        spec["eval"]["dataset"].update(samples=count, sample_ids=ids)
    header["results"].update(total_samples=cases, completed_samples=cases)

    def copy_of(record: dict, index: int) -> dict:
        record = copy.deepcopy(record)
        record.update(id=ids[index], input=renamed(record["input"], index), target=renamed(record["target"], index))
        return record

    def members():
        yield "_journal/start.json", json.dumps(start).encode()
        for epoch in (1, 2):
            for index in range(count):
                sample = copy_of(samples[(f"item-{index % ITEMS_IN_FIXTURES:02d}", epoch)], index)
                yield f"samples/{sample['id']}_epoch_{epoch}.json", json.dumps(sample).encode()
        by_key = {(s["id"], s["epoch"]): s for s in summaries}
        scaled = [copy_of(by_key[(f"item-{i % ITEMS_IN_FIXTURES:02d}", e)], i) for e in (1, 2) for i in range(count)]
        yield "summaries.json", json.dumps(scaled).encode()
        for reduction in reductions:
            base = {s["sample_id"]: s for s in reduction["samples"]}
            reduction["samples"] = [{**base[f"item-{i % ITEMS_IN_FIXTURES:02d}"], "sample_id": ids[i]}
                                    for i in range(count)]
        yield "reductions.json", json.dumps(reductions).encode()
        yield "header.json", json.dumps(header).encode()

    path = out / "scaled.eval"
    write_zstd_zip(path, members())
    return path


@dataclass(frozen=True)
class Measured:
    wall: float  # seconds
    cpu: float  # user + system seconds of the child
    peak: float  # MB, resident
    output: str


def measure(arguments: list[str], cwd: Path, code: Path = REPO) -> Measured:
    """Run ``evalsite ARGS`` in a child with ``code`` first on its path; its wall and CPU seconds,
    peak RSS in MB, and its output."""
    environment = {**os.environ, "PYTHONPATH": str(code)}
    started = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "evalsite", *arguments], cwd=cwd, env=environment,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    output = child.stdout.read().decode()
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"evalsite {' '.join(arguments)} failed:\n{output}")
    return Measured(seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, output)


BUILDERS = {"jsonl": scaled_plain, "promptfoo": scaled_promptfoo, "inspect": scaled_inspect}


def generate(name: str, cases: int, project: Path) -> Path:
    """Build the file in a separate process: a child forked from a process holding the big
    documents would count their pages in its own peak memory."""
    done = subprocess.run([sys.executable, __file__, "--generate", name, "--cases", str(cases), "--keep", str(project)],
                          check=True, capture_output=True, text=True)
    return Path(done.stdout.strip())


def import_once(name: str, source: Path, code: Path, work: Path) -> tuple[int, int, Measured]:
    """One import of ``source`` into a fresh project (removed afterwards): cases, runs, figures."""
    project = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=work))
    (project / "data").mkdir()
    try:
        measured = measure(["import", name, str(source), "--again", "--json"], project, code)
    finally:
        shutil.rmtree(project, ignore_errors=True)
    runs = json.loads(measured.output[measured.output.index("["):])
    return sum(run["cases"] for run in runs), len(runs), measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=6000, help="cases per file (default 6000)")
    parser.add_argument("--keep", type=Path, help="write the generated files and projects here")
    parser.add_argument("--formats", nargs="+", choices=BUILDERS, default=list(BUILDERS), help="which files (default all)")
    parser.add_argument("--against", type=Path, metavar="CHECKOUT",
                        help="also import with another checkout's code (e.g. main's), in turns with this one's")
    parser.add_argument("--rounds", type=int, default=1, help="imports per format and code (medians printed)")
    parser.add_argument("--source", type=Path, help="import this file (one format) instead of generating one")
    parser.add_argument("--generate", choices=BUILDERS, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.generate:
        print(BUILDERS[options.generate](options.cases, options.keep))
        return
    work = options.keep or Path(tempfile.mkdtemp(prefix="evalsite-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    baseline = measure(["--version"], work)
    print(f"evalsite --version: peak {baseline.peak:.0f} MB, {baseline.cpu:.2f} s CPU (interpreter and CLI imports)")
    codes = {"this": REPO, **({"against": options.against.resolve()} if options.against else {})}
    for name in options.formats:
        folder = work / name
        folder.mkdir(parents=True, exist_ok=True)
        source = options.source.resolve() if options.source else generate(name, options.cases, folder)
        size = source.stat().st_size / 1e6
        figures: dict[str, list[Measured]] = {label: [] for label in codes}
        for _ in range(options.rounds):
            for label, code in codes.items():  # in turns, so both see the same load
                cases, runs, measured = import_once(name, source, code, work)
                figures[label].append(measured)
                print(f"  {name} {label:7s} {measured.wall:6.2f} s wall, {measured.cpu:6.2f} s CPU, "
                      f"peak {measured.peak:.0f} MB", flush=True)
        for label, code in codes.items():
            wall = statistics.median(m.wall for m in figures[label])
            cpu = statistics.median(m.cpu for m in figures[label])
            peak = statistics.median(m.peak for m in figures[label])
            print(f"{name:9s} {label:7s} ({code}) {source.name} {size:6.1f} MB: {cases} cases in {runs} runs, "
                  f"median of {options.rounds}: {wall:5.2f} s wall ({cases / wall:,.0f} cases/s), "
                  f"{cpu:5.2f} s CPU ({cases / cpu:,.0f} cases/s of CPU), peak {peak:.0f} MB")
        if not options.keep and not options.source:
            source.unlink()
    if not options.keep:
        print(f"(generated files under {work}; pass --keep DIR to choose where)")


if __name__ == "__main__":
    main()
