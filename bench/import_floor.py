"""Where a promptfoo import's CPU goes, step by step, and what the fastest decoders cost for its bytes.

Rerun from the repository root:

    python bench/import_floor.py                            # a 40,000-case file, generated
    python bench/import_floor.py --source results.json      # any promptfoo results.json

Each step runs in this process with the cyclic collector off (as `evalsite import` runs), best of
``--rounds``, and prints CPU seconds and microseconds per case:

- the file's bytes read, and their sha256 (the import records it);
- the stream: ``results.results`` decoded (the inlined ``config.tests`` stepped over);
- the reader: the stream plus each result mapped to a case (``read_promptfoo`` into a sink);
- the whole import (``import_files`` into a fresh project): the reader's phase with the writer's
  spooling (``add_case``), and ``write_runs`` (items, case lines, summaries, files);
- decoders alone on the results' text in 64 KiB runs: orjson, ``json``, and msgspec or
  pysimdjson when installed (neither is a dependency: ``pip install msgspec pysimdjson``).

The floor line adds what no reader can avoid (the writer's part, the hash, orjson's decoding).
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import importlib.util
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import orjson  # noqa: E402

import evalsite.execute.importers as importers  # noqa: E402
from evalsite.execute.importers import promptfoo  # noqa: E402
from evalsite.execute.importers.jsonstream import RUN_CHARS, JsonArrayStream  # noqa: E402
from evalsite.execute.importers.source_records import ImportOptions, SourceCase, SourceRun  # noqa: E402
from evalsite.project import Project  # noqa: E402


class _Sink:
    """A ``SourceImport`` that keeps nothing: the reader's own cost."""

    def __init__(self, path: Path):
        self.path, self.label = path, str(path)

    def add_case(self, case: SourceCase) -> None:
        pass

    def describe(self, key: str, run: SourceRun) -> None:
        pass

    def warn(self, message: str) -> None:
        pass


def best(rounds: int, step: Callable[[], Any]) -> float:
    times = []
    for _ in range(rounds):
        started = time.process_time()
        step()
        times.append(time.process_time() - started)
    return min(times)


def whole_import(path: Path, rounds: int) -> dict[str, float]:
    """The fastest of ``rounds`` imports in process, its phases timed by wrapping the functions
    ``import_files`` calls."""
    return min((_one_import(path) for _ in range(rounds)), key=lambda phases: phases["total"])


def _one_import(path: Path) -> dict[str, float]:
    phases: dict[str, float] = {}

    def timed(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.process_time()
            try:
                return function(*args, **kwargs)
            finally:
                phases[name] = phases.get(name, 0.0) + time.process_time() - started

        return wrapper

    originals = importers._read, importers.write_runs
    importers._read, importers.write_runs = timed("read", importers._read), timed("write", importers.write_runs)
    root = Path(tempfile.mkdtemp(prefix="import-floor-"))
    try:
        (root / "data").mkdir()
        phases["total"] = best(
            1, lambda: importers.import_files(Project(root), "promptfoo", [path], ImportOptions(again=True))
        )
    finally:
        importers._read, importers.write_runs = originals
        shutil.rmtree(root, ignore_errors=True)
    return phases


def runs_of_results(path: Path) -> list[bytes]:
    """The results' text as bracketed runs of about RUN_CHARS (the file as bench/importers.py writes it)."""
    data = path.read_bytes()
    start = data.index(b'"results": [\n      {') + len(b'"results": [\n      ')
    stop, closer, runs = data.index(b"\n    ],", start), b"\n      }", []
    while start < stop:
        end = data.rfind(closer, start, min(start + RUN_CHARS, stop + 1))
        end = (data.find(closer, start) if end < 0 else end) + len(closer)
        runs.append(b"[" + data[start:end] + b"]")
        start = end + len(b",\n      ")
    return runs


def decoders() -> dict[str, Callable[[bytes], Any]]:
    found: dict[str, Callable[[bytes], Any]] = {"orjson": orjson.loads, "json": json.loads}
    if importlib.util.find_spec("msgspec"):
        import msgspec

        found["msgspec"] = msgspec.json.Decoder().decode
    if importlib.util.find_spec("simdjson"):
        import simdjson

        parser = simdjson.Parser()
        found["pysimdjson, parse only"] = lambda text: parser.parse(text) and None
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, help="a promptfoo results.json (default: generate one)")
    parser.add_argument("--cases", type=int, default=40000, help="cases to generate (default 40000)")
    parser.add_argument("--rounds", type=int, default=3, help="runs per step, the best kept (default 3)")
    options = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="import-floor-"))
    try:
        path = options.source or Path(
            subprocess.run(
                [
                    sys.executable,
                    str(REPO / "bench" / "importers.py"),
                    "--generate",
                    "promptfoo",
                    "--cases",
                    str(options.cases),
                    "--keep",
                    str(work),
                ],
                check=True,
                capture_output=True,
                text=True,
            ).stdout.strip()
        )
        report(path, options.rounds)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def report(path: Path, rounds: int) -> None:
    gc.disable()
    cases = sum(1 for _ in JsonArrayStream(path, ("results", "results"), skip=("config.tests",)))
    size = path.stat().st_size

    def line(what: str, seconds: float) -> None:
        print(f"{what:52s} {seconds:6.2f} s CPU {seconds / cases * 1e6:7.1f} µs a case")

    print(f"{path}: {size / 1e6:,.0f} MB, {cases:,} results ({size / cases:,.0f} bytes each with the file's share)")
    line("read the bytes", best(rounds, lambda: sum(1 for _ in iter(lambda h=open(path, "rb"): h.read(1 << 20), b""))))
    sha = best(rounds, lambda: hashlib.sha256(path.read_bytes()).digest())
    line("sha256", sha)
    line(
        "stream (results decoded, tests stepped over)",
        best(rounds, lambda: sum(1 for _ in JsonArrayStream(path, ("results", "results"), skip=("config.tests",)))),
    )
    reader = best(rounds, lambda: promptfoo.read_promptfoo(_Sink(path), ImportOptions()))  # type: ignore[arg-type]
    line("reader (stream + result -> case)", reader)
    phases = whole_import(path, rounds)
    line("whole import in process", phases["total"])
    line("  reader + the writer's spooling (add_case)", phases["read"])
    line("  write_runs", phases["write"])
    writer = phases["total"] - sha - reader  # spooling, write_runs and the import's own steps
    line("the writer's part (whole import - sha256 - reader)", writer)
    runs = runs_of_results(path)
    decoded = {name: best(rounds, lambda d=decode: [d(run) for run in runs]) for name, decode in decoders().items()}
    for name, seconds in decoded.items():
        line(f"decode the results' text, {RUN_CHARS // 1024} KiB runs: {name}", seconds)
    floor = writer + sha + decoded["orjson"]
    print(
        f"floor (the writer's part + sha256 + orjson): {floor / cases * 1e6:.1f} µs a case, "
        f"{cases / floor:,.0f} cases per CPU second, before any result is mapped to a case"
    )


if __name__ == "__main__":
    main()
