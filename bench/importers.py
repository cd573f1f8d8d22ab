"""Benchmark ``evalsite import`` on a large promptfoo results.json and a large Inspect .eval log.

Rerun from the repository root:

    python bench/importers.py                 # 6,000 cases each (the goal: < 5 s and < 300 MB each)
    python bench/importers.py --cases 60000   # to see how time and memory grow

Both files are built by scaling the real fixtures in tests/fixtures/external/: every fixture row
is copied with a new item id and input, so the shapes (fields, sizes, nesting, events) are the
ones the tools write. promptfoo: N/2 tests x 2 providers in one indented JSON document, tests
inlined in its config as promptfoo does. Inspect: N/2 samples x 2 epochs as zstd members, with
summaries and reductions. Each import runs as `evalsite import` in a child process on a fresh
project; the figures are its wall time and its peak resident memory (ru_maxrss), next to the
peak of `evalsite --version` (the interpreter and the CLI's own imports).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import re
import subprocess
import sys
import tempfile
import time
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


def measure(arguments: list[str], cwd: Path) -> tuple[float, float, str]:
    """Run ``evalsite ARGS`` in a child; its wall seconds, peak RSS in MB, and its output."""
    environment = {**os.environ, "PYTHONPATH": str(REPO)}
    started = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "evalsite", *arguments], cwd=cwd, env=environment,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    output = child.stdout.read().decode()
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"evalsite {' '.join(arguments)} failed:\n{output}")
    return seconds, usage.ru_maxrss / 1024, output


BUILDERS = {"jsonl": scaled_plain, "promptfoo": scaled_promptfoo, "inspect": scaled_inspect}


def generate(name: str, cases: int, project: Path) -> Path:
    """Build the file in a separate process: a child forked from a process holding the big
    documents would count their pages in its own peak memory."""
    done = subprocess.run([sys.executable, __file__, "--generate", name, "--cases", str(cases), "--keep", str(project)],
                          check=True, capture_output=True, text=True)
    return Path(done.stdout.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=6000, help="cases per file (default 6000)")
    parser.add_argument("--keep", type=Path, help="write the generated files and projects here")
    parser.add_argument("--generate", choices=BUILDERS, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.generate:
        print(BUILDERS[options.generate](options.cases, options.keep))
        return
    work = options.keep or Path(tempfile.mkdtemp(prefix="evalsite-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    _, baseline, _ = measure(["--version"], work)
    print(f"evalsite --version: peak {baseline:.0f} MB (interpreter and CLI imports)")
    for name in BUILDERS:
        project = work / name
        (project / "data").mkdir(parents=True, exist_ok=True)
        source = generate(name, options.cases, project)
        seconds, peak, output = measure(["import", name, source.name, "--again", "--json"], project)
        runs = json.loads(output[output.index("["):])
        cases = sum(run["cases"] for run in runs)
        size = source.stat().st_size / 1e6
        print(f"{name:9s} {source.name} {size:6.1f} MB: {cases} cases in {len(runs)} runs, "
              f"{seconds:5.2f} s ({cases / seconds:,.0f} cases/s), peak {peak:.0f} MB")
    if not options.keep:
        print(f"(generated files under {work}; pass --keep DIR to choose where)")


if __name__ == "__main__":
    main()
