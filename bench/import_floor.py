"""Where an import's CPU goes, step by step, and what the fastest decoders cost for its bytes:
a promptfoo results.json or a plain JSON Lines file.

Rerun from the repository root:

    python bench/import_floor.py                            # a 40,000-case promptfoo file, generated
    python bench/import_floor.py --source results.json      # any promptfoo results.json
    python bench/import_floor.py --format jsonl --cases 200000   # a plain JSON Lines file, generated

Each step runs in this process, in one process (no second one forked: `forked.spare_core` off),
with the cyclic collector off (as `evalsite import` runs), best of ``--rounds``, and prints CPU
seconds and microseconds per case:

- the file's bytes read, and their sha256 (the import records it);
- the stream: promptfoo's ``results.results`` decoded (the inlined ``config.tests`` stepped
  over), or every JSON Lines row decoded;
- the reader: the stream plus each result or row mapped to a case (the format's reader into a sink);
- the whole import (``import_files`` into a fresh project): the reader's phase with the writer's
  spooling (``add_case``), and ``write_runs``: the items' identity (checks and hashes), then the
  case lines, their checks and the summaries, and the files;
- decoders alone on the file's text (promptfoo: the results in 64 KiB runs; JSON Lines: each
  line): orjson, ``json``, msgspec into dicts, for promptfoo the reader's own (msgspec into only
  the fields it uses, :mod:`~evalsite.execute.importers.promptfoo_fields`), and pysimdjson's parse
  when installed (not a dependency: ``pip install pysimdjson``).

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

import msgspec  # noqa: E402
import orjson  # noqa: E402

import evalsite.execute.importers as importers  # noqa: E402
from evalsite import forked  # noqa: E402
from evalsite.execute.importers import plain, promptfoo, writer  # noqa: E402
from evalsite.execute.importers.jsonstream import RUN_CHARS, JsonArrayStream, JsonLines  # noqa: E402
from evalsite.execute.importers.promptfoo_fields import used_fields  # noqa: E402
from evalsite.execute.importers.source_records import ImportOptions, SourceCase, SourceRun  # noqa: E402
from evalsite.project import Project  # noqa: E402


class _Sink:
    """A ``SourceImport`` that keeps nothing: the reader's own cost."""

    run_keys: list[str] = []
    sha256 = "0" * 64

    def __init__(self, path: Path):
        self.path, self.label, self.format_name = path, str(path), "jsonl"

    def add_case(self, case: SourceCase) -> None:
        pass

    def add_prepared(self, prepared: list[Any]) -> None:  # a plain row the lane prepared
        pass

    def describe(self, key: str, run: SourceRun) -> None:
        pass

    def warn(self, message: str) -> None:
        pass

    def evaluators(self, key: str) -> list[str]:
        return []


def best(rounds: int, step: Callable[[], Any]) -> float:
    times = []
    for _ in range(rounds):
        started = time.process_time()
        step()
        times.append(time.process_time() - started)
    return min(times)


class Format:
    """What the steps need of a format: its name for ``import_files``, its stream and reader."""

    def __init__(self, name: str):
        self.name = name

    def stream(self, path: Path) -> int:
        """How many results or rows the file holds, decoding every one."""
        if self.name == "jsonl":
            return sum(1 for _ in JsonLines(path))
        return sum(1 for _ in JsonArrayStream(path, ("results", "results"), skip=("config.tests",)))

    def read(self, path: Path) -> None:
        reader = plain.read_jsonl if self.name == "jsonl" else promptfoo.read_promptfoo
        reader(_Sink(path), ImportOptions())  # type: ignore[arg-type]

    def texts(self, path: Path) -> list[bytes]:
        """What one decoder call takes: a run of results, or a line."""
        return path.read_bytes().splitlines() if self.name == "jsonl" else runs_of_results(path)


def whole_import(path: Path, form: Format, rounds: int) -> dict[str, float]:
    """The fastest of ``rounds`` imports in process, its phases timed by wrapping the functions
    ``import_files`` calls."""
    return min((_one_import(path, form) for _ in range(rounds)), key=lambda phases: phases["total"])


def _one_import(path: Path, form: Format) -> dict[str, float]:
    phases: dict[str, float] = {}

    def timed(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.process_time()
            try:
                return function(*args, **kwargs)
            finally:
                phases[name] = phases.get(name, 0.0) + time.process_time() - started

        return wrapper

    originals = importers._read, importers.write_runs, writer._ItemsMemo.items_by_key
    importers._read, importers.write_runs = timed("read", importers._read), timed("write", importers.write_runs)
    writer._ItemsMemo.items_by_key = timed("items", writer._ItemsMemo.items_by_key)  # type: ignore[method-assign]
    root = Path(tempfile.mkdtemp(prefix="import-floor-"))
    try:
        (root / "data").mkdir()
        phases["total"] = best(
            1, lambda: importers.import_files(Project(root), form.name, [path], ImportOptions(again=True))
        )
    finally:
        importers._read, importers.write_runs, writer._ItemsMemo.items_by_key = originals  # type: ignore[method-assign]
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


def decoders(format_name: str) -> dict[str, Callable[[bytes], Any]]:
    found: dict[str, Callable[[bytes], Any]] = {
        "orjson": orjson.loads, "json": json.loads, "msgspec": msgspec.json.Decoder().decode,
    }
    if format_name == "promptfoo":
        found["the reader's fields only (promptfoo_fields)"] = used_fields
    if importlib.util.find_spec("simdjson"):
        import simdjson

        parser = simdjson.Parser()
        found["pysimdjson, parse only"] = lambda text: parser.parse(text) and None
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--format", choices=("promptfoo", "jsonl"), default="promptfoo", help="(default promptfoo)")
    parser.add_argument("--source", type=Path, help="a file of that format (default: generate one)")
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
                    options.format,
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
        report(path, Format(options.format), options.rounds)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def report(path: Path, form: Format, rounds: int) -> None:
    gc.disable()
    forked.spare_core = lambda: False  # one process: its CPU is the import's
    cases = form.stream(path)
    size = path.stat().st_size

    def line(what: str, seconds: float) -> None:
        print(f"{what:52s} {seconds:6.2f} s CPU {seconds / cases * 1e6:7.1f} µs a case")

    print(f"{path}: {size / 1e6:,.0f} MB, {cases:,} cases ({size / cases:,.0f} bytes each with the file's share)")
    line("read the bytes", best(rounds, lambda: sum(1 for _ in iter(lambda h=open(path, "rb"): h.read(1 << 20), b""))))
    sha = best(rounds, lambda: hashlib.sha256(path.read_bytes()).digest())
    line("sha256", sha)
    line("stream (every result or row decoded)", best(rounds, lambda: form.stream(path)))
    reader = best(rounds, lambda: form.read(path))
    line("reader (stream + result or row -> case)", reader)
    phases = whole_import(path, form, rounds)
    line("whole import in process", phases["total"])
    line("  reader + the writer's spooling (add_case)", phases["read"])
    line("  write_runs", phases["write"])
    line("    the items' identity (checks, hashes)", phases["items"])
    line("    the rest: case lines, their checks, summaries, files", phases["write"] - phases["items"])
    writer_part = phases["total"] - sha - reader  # spooling, write_runs and the import's own steps
    line("the writer's part (whole import - sha256 - reader)", writer_part)
    texts = form.texts(path)
    decoded = {name: best(rounds, lambda d=decode: [d(text) for text in texts]) for name, decode in decoders(form.name).items()}
    for name, seconds in decoded.items():
        cut = "each line" if form.name == "jsonl" else f"{RUN_CHARS // 1024} KiB runs"
        line(f"decode the text, {cut}: {name}", seconds)
    floor = writer_part + sha + decoded["orjson"]
    print(
        f"floor (the writer's part + sha256 + orjson): {floor / cases * 1e6:.1f} µs a case, "
        f"{cases / floor:,.0f} cases per CPU second, before any result is mapped to a case"
    )


if __name__ == "__main__":
    main()
